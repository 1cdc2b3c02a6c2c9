// A stand-in for an NVTX tool's injection library, the file a tool such as
// compute-sanitizer names in NVTX_INJECTION64_PATH, built by
// annotations_test.go. It attaches as a tool does, through the core
// export tables and the memory extension's slots, and writes one line per
// thing it sees to a log the test reads with fakenvtx_log. The structs are
// declared here from NVTX's documented layouts, so a field the binding
// misplaces shows up as a wrong value in the log.
//
// Variants: -DNO_CORE (no InitializeInjectionNvtx2), -DNO_DOMAIN (the core
// init leaves nvtxDomainCreateA empty), -DNO_EXT (no
// InitializeInjectionNvtxExtension), -DEXT_FAILS (the extension init fills
// the slots, then returns 0), -DHEAPS_ONLY (only the heap functions), and
// -DNO_OPTIONAL (no nvtxMemHeapReset or nvtxMemRegionsName).

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
	size_t struct_size;
	int (*get_module_function_table)(int module, void ***table, unsigned *size);
} callbacks_t;

typedef struct {
	size_t struct_size;
	uint32_t version;
	uint32_t reserved0;
	void (*set_injection_nvtx_version)(uint32_t version);
} version_info_t;

typedef const void *(*get_export_table_t)(uint32_t id);

typedef struct {
	size_t segment_id;
	size_t slot_count;
	intptr_t *function_slots;
} segment_t;

typedef struct {
	uint16_t nvtx_ver;
	uint16_t struct_size;
	uint16_t module_id;
	uint16_t compat_id;
	size_t segments_count;
	segment_t *segments;
	void *get_export_function;
	const void *ext_info;
} module_info_t;

typedef struct {
	size_t size;
	const void *ptr;
} range_t;

typedef struct {
	uint16_t compat;
	uint16_t struct_size;
	uint32_t reserved0;
	uint32_t usage;
	uint32_t type;
	size_t type_desc_size;
	const void *type_desc;
	uint32_t category;
	uint32_t message_type;
	const char *message;
} heap_desc_t;

typedef struct {
	uint16_t compat;
	uint16_t struct_size;
	uint32_t region_type;
	void *heap;
	size_t count;
	size_t element_size;
	const void *elements;
	void **handles_out;
} register_batch_t;

typedef struct {
	uint16_t compat;
	uint16_t struct_size;
	uint32_t ref_type;
	size_t count;
	size_t element_size;
	const void *const *refs;
} unregister_batch_t;

typedef struct {
	uint32_t ref_type;
	uint32_t name_type;
	const void *region;
	const char *name;
	uint32_t category;
	uint32_t reserved0;
} name_desc_t;

typedef struct {
	uint16_t compat;
	uint16_t struct_size;
	uint32_t reserved0;
	size_t count;
	size_t element_size;
	const name_desc_t *elements;
	size_t reserved1;
} name_batch_t;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char log_buf[1 << 20];
static size_t log_len;
static int domain_object;
static uintptr_t next_heap = 0x7000;

// fakenvtx_log is every line written so far.
const char *fakenvtx_log(void) { return log_buf; }

static void say(const char *format, ...) {
	va_list ap;
	pthread_mutex_lock(&mu);
	va_start(ap, format);
	int n = vsnprintf(log_buf + log_len, sizeof log_buf - log_len - 1, format, ap);
	va_end(ap);
	if (n > 0 && log_len + n + 2 < sizeof log_buf) {
		log_len += n;
		log_buf[log_len++] = '\n';
		log_buf[log_len] = 0;
	}
	pthread_mutex_unlock(&mu);
}

static const char *domain_of(const void *d) {
	if (!d) return "null";
	return d == &domain_object ? "cudapool" : "unknown";
}

static void *domain_create_a(const char *name) {
	say("domain-create %s", name);
	return &domain_object;
}

#ifndef NO_CORE
int InitializeInjectionNvtx2(get_export_table_t get) {
	const callbacks_t *cb = get(1);
	const version_info_t *vi = get(3);
	say("core-init callbacks=%zu version-info=%zu version=%u table2=%s", cb->struct_size, vi->struct_size, vi->version,
	    get(2) ? "set" : "null");
	vi->set_injection_nvtx_version(3);
	static const int modules[] = {1, 2, 3, 4, 5, 6, 7};
	void **core2 = 0;
	for (size_t i = 0; i < sizeof modules / sizeof modules[0]; i++) {
		void **table = 0;
		unsigned size = 0;
		int ok = cb->get_module_function_table(modules[i], &table, &size);
		if (!ok) {
			say("module %d: none", modules[i]);
			continue;
		}
		int entries = 0, filled = 0;
		for (unsigned j = 1; j < size; j++) {
			entries += table[j] != 0;
			filled += table[j] && *(void **)table[j];
		}
		say("module %d: size=%u entry0=%s last=%s entries=%d filled=%d", modules[i], size, table[0] ? "set" : "null",
		    table[size] ? "set" : "null", entries, filled);
		if (modules[i] == 5) core2 = table;
	}
#ifndef NO_DOMAIN
	*(void **)core2[12] = (void *)domain_create_a;
#endif
	return 1;
}
#endif

static void *heap_register(const void *domain, const heap_desc_t *d) {
	const range_t *r = d->type_desc;
	void *h;
	pthread_mutex_lock(&mu);
	next_heap += 0x10;
	h = (void *)next_heap;
	pthread_mutex_unlock(&mu);
	say("heap-register %s size=%u compat=0x%x usage=%u type=%u desc=%zu range=0x%zx+%zu category=%u message=%u:%s -> %p",
	    domain_of(domain), d->struct_size, d->compat, d->usage, d->type, d->type_desc_size, (size_t)r->ptr, r->size,
	    d->category, d->message_type, d->message_type == 1 ? d->message : "-", h);
	return h;
}

static void heap_unregister(const void *domain, void *heap) { say("heap-unregister %s %p", domain_of(domain), heap); }

static void heap_reset(const void *domain, void *heap) { say("heap-reset %s %p", domain_of(domain), heap); }

static void regions_register(const void *domain, const register_batch_t *b) {
	char line[4096];
	int n = snprintf(line, sizeof line, "regions-register %s size=%u compat=0x%x type=%u heap=%p count=%zu element=%zu out=%s:",
	                 domain_of(domain), b->struct_size, b->compat, b->region_type, b->heap, b->count, b->element_size,
	                 b->handles_out ? "set" : "null");
	const range_t *r = b->elements;
	for (size_t i = 0; i < b->count && n > 0 && (size_t)n < sizeof line; i++)
		n += snprintf(line + n, sizeof line - n, " 0x%zx+%zu", (size_t)r[i].ptr, r[i].size);
	say("%s", line);
}

static void regions_unregister(const void *domain, const unregister_batch_t *b) {
	char line[4096];
	int n = snprintf(line, sizeof line, "regions-unregister %s size=%u compat=0x%x ref=%u count=%zu element=%zu:", domain_of(domain),
	                 b->struct_size, b->compat, b->ref_type, b->count, b->element_size);
	for (size_t i = 0; i < b->count && n > 0 && (size_t)n < sizeof line; i++)
		n += snprintf(line + n, sizeof line - n, " 0x%zx", (size_t)b->refs[i]);
	say("%s", line);
}

static void regions_name(const void *domain, const name_batch_t *b) {
	char line[4096];
	int n = snprintf(line, sizeof line, "regions-name %s size=%u compat=0x%x count=%zu element=%zu:", domain_of(domain), b->struct_size,
	                 b->compat, b->count, b->element_size);
	for (size_t i = 0; i < b->count && n > 0 && (size_t)n < sizeof line; i++) {
		const name_desc_t *d = &b->elements[i];
		n += snprintf(line + n, sizeof line - n, " %u/%u/0x%zx=%s/%u", d->ref_type, d->name_type, (size_t)d->region, d->name,
		              d->category);
	}
	say("%s", line);
}

#ifndef NO_EXT
int InitializeInjectionNvtxExtension(module_info_t *m) {
	say("ext-init version=%u size=%u module=%u compat=0x%x segments=%zu id=%zu slots=%zu export=%s info=%s", m->nvtx_ver,
	    m->struct_size, m->module_id, m->compat_id, m->segments_count, m->segments[0].segment_id, m->segments[0].slot_count,
	    m->get_export_function ? "set" : "null", m->ext_info ? "set" : "null");
	// The function of callback id k goes in slot k-1, as compute-sanitizer
	// puts it.
	intptr_t *slots = m->segments[0].function_slots - 1;
	slots[1] = (intptr_t)heap_register;
	slots[2] = (intptr_t)heap_unregister;
#ifndef NO_OPTIONAL
	slots[3] = (intptr_t)heap_reset;
#endif
#ifndef HEAPS_ONLY
	slots[4] = (intptr_t)regions_register;
	slots[6] = (intptr_t)regions_unregister;
#ifndef NO_OPTIONAL
	slots[7] = (intptr_t)regions_name;
#endif
#endif
#ifdef EXT_FAILS
	return 0;
#else
	return 1;
#endif
}
#endif
