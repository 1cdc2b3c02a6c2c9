// A stand-in for libcudart and libcuda, built by library_fake_test.go, so that the
// binding's C half (loading, trampolines, argument order, struct layouts) runs
// on machines with no GPU. Device memory is host memory here. Build with
// -DFAKE_VERSION=12000 or 13000, and -DFAKE_PREFETCH_V2 to also export
// cudaMemPrefetchAsync_v2 as CUDA 12.2 to 12.9 do.

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FAKE_VERSION
#define FAKE_VERSION 13000
#endif

enum { GRANULE = 2 << 20 };

typedef struct {
	int type;
	int id;
} loc_t;

typedef struct {
	int type;
	int requestedHandleTypes;
	loc_t location;
	void *win32HandleMetaData;
	unsigned char allocFlags[8];
} prop_t;

typedef struct {
	loc_t location;
	int flags;
} access_t;

static __thread int current = -1;
static unsigned device_flags;
static size_t limits[3] = {1024, 1 << 20, 8 << 20};
static uint64_t release_threshold;
static int pool;
static void *registered;

static const char *name_of(int e) {
	switch (e) {
	case 0: return "cudaSuccess";
	case 1: return "cudaErrorInvalidValue";
	case 2: return "cudaErrorMemoryAllocation";
	case 101: return "cudaErrorInvalidDevice";
	case 400: return "cudaErrorInvalidResourceHandle";
	case 900: return "cudaErrorStreamCaptureUnsupported";
	case 903: return "cudaErrorStreamCaptureUnmatched";
	case 201: return "cudaErrorDeviceUninitialized";
	case 712: return "cudaErrorHostMemoryAlreadyRegistered";
	case 713: return "cudaErrorHostMemoryNotRegistered";
	}
	return "cudaErrorUnknown";
}

const char *cudaGetErrorName(int e) { return name_of(e); }
const char *cudaGetErrorString(int e) {
	static char buf[64];
	snprintf(buf, sizeof buf, "fake message %d", e);
	return buf;
}
int cudaRuntimeGetVersion(int *v) { *v = FAKE_VERSION; return 0; }
int cudaDriverGetVersion(int *v) { *v = 13000; return 0; }
int cudaGetDeviceCount(int *n) { *n = 1; return 0; }
int cudaSetDevice(int d) {
	if (d != 0) {
		return 101;
	}
	current = d;
	return 0;
}
int cudaGetDeviceFlags(unsigned *f) { *f = device_flags; return 0; }
int cudaSetDeviceFlags(unsigned f) { device_flags = f; return 0; }
int cudaDeviceGetLimit(size_t *v, int l) {
	if (l < 0 || l > 2) return 1;
	*v = limits[l];
	return 0;
}
int cudaDeviceSetLimit(int l, size_t v) {
	if (l < 0 || l > 2) return 1;
	limits[l] = v;
	return 0;
}
int cudaDeviceSynchronize(void) { return current == 0 ? 0 : 201; }
int cudaDeviceReset(void) { return current == 0 ? 0 : 201; }
int cudaDeviceCanAccessPeer(int *can, int device, int peer) {
	*can = 0;
	return device == 0 && peer == 0 ? 0 : 101;
}
/* Every field apart, so that a test tells a misread layout: the memory is
   host memory pinned on the current device, reached by the device 16 bytes
   higher. */
typedef struct {
	int type;
	int device;
	void *devicePointer;
	void *hostPointer;
} attrs_t;
int cudaPointerGetAttributes(attrs_t *a, const void *p) {
	if (current != 0) return 201;
	a->type = 1;
	a->device = current;
	a->devicePointer = (char *)p + 16;
	a->hostPointer = (void *)p;
	return 0;
}
int cudaMemGetInfo(size_t *free, size_t *total) {
	*free = 1 << 30;
	*total = 2u << 30;
	return 0;
}

static int alloc(void **p, size_t n) {
	if (current != 0) return 201;
	if (n > ((size_t)1 << 40)) return 2;
	if (n == 0) {
		*p = NULL;
		return 0;
	}
	*p = aligned_alloc(256, (n + 255) / 256 * 256);
	return *p ? 0 : 2;
}

int cudaMalloc(void **p, size_t n) { return alloc(p, n); }
int cudaFree(void *p) { free(p); return 0; }
int cudaMallocHost(void **p, size_t n) { return alloc(p, n); }
int cudaFreeHost(void *p) { free(p); return 0; }
int cudaHostAlloc(void **p, size_t n, unsigned flags) { return flags > 7 ? 1 : alloc(p, n); }
int cudaHostGetDevicePointer(void **d, void *p, unsigned flags) {
	if (flags != 0) return 1;
	*d = p;
	return 0;
}
int cudaHostRegister(void *p, size_t n, unsigned flags) {
	(void)n;
	(void)flags;
	if (registered == p) return 712;
	registered = p;
	return 0;
}
int cudaHostUnregister(void *p) {
	if (registered != p) return 713;
	registered = NULL;
	return 0;
}
int cudaMemcpy(void *dst, const void *src, size_t n, int kind) {
	if (kind < 0 || kind > 4 || !dst || !src) return 1;
	memcpy(dst, src, n);
	return 0;
}
/* busy is the stream of the last cudaMemcpyAsync, reported not ready by one
   cudaStreamQuery until synchronised. */
static void *busy;
int cudaMemcpyAsync(void *dst, const void *src, size_t n, int kind, void *s) {
	busy = s;
	return cudaMemcpy(dst, src, n, kind);
}
int cudaMemset(void *p, int v, size_t n) {
	if (!p) return 1;
	memset(p, v, n);
	return 0;
}
int cudaMemsetAsync(void *p, int v, size_t n, void *s) {
	busy = s;
	return cudaMemset(p, v, n);
}
int cudaStreamCreate(void **s) { *s = malloc(1); return 0; }
int cudaStreamSynchronize(void *s) {
	if (s == busy) busy = 0;
	return 0;
}
int cudaStreamQuery(void *s) {
	if (s && s == busy) {
		busy = 0;
		return 600;
	}
	return 0;
}
int cudaStreamDestroy(void *s) { free(s); return 0; }
int cudaMallocManaged(void **p, size_t n, unsigned flags) { return flags < 1 || flags > 2 ? 1 : alloc(p, n); }
int cudaMallocAsync(void **p, size_t n, void *s) { (void)s; return alloc(p, n); }
int cudaFreeAsync(void *p, void *s) { (void)s; free(p); return 0; }
int cudaDeviceGetDefaultMemPool(void **p, int d) {
	if (d != 0) return 101;
	*p = &pool;
	return 0;
}
int cudaMemPoolGetAttribute(void *p, int attr, void *v) {
	if (p != &pool || attr != 4) return 1;
	*(uint64_t *)v = release_threshold;
	return 0;
}
int cudaMemPoolSetAttribute(void *p, int attr, void *v) {
	if (p != &pool || attr != 4) return 1;
	release_threshold = *(uint64_t *)v;
	return 0;
}

// The prefetch functions write what they were given into the first bytes of
// the range: the form, the destination, and the count, for the test to read.
static int prefetch(const void *p, size_t n, char form, int type, int id, unsigned flags) {
	unsigned char *b = (unsigned char *)p;
	if (n < 8) return 1;
	b[0] = (unsigned char)form;
	b[1] = (unsigned char)type;
	b[2] = (unsigned char)id;
	b[3] = (unsigned char)flags;
	memcpy(b + 4, &(uint32_t){(uint32_t)n}, 4);
	return 0;
}

#if FAKE_VERSION >= 13000
int cudaMemPrefetchAsync(const void *p, size_t n, loc_t loc, unsigned flags, void *s) {
	(void)s;
	return prefetch(p, n, 'L', loc.type, loc.id, flags);
}
#else
int cudaMemPrefetchAsync(const void *p, size_t n, int dst, void *s) {
	(void)s;
	return prefetch(p, n, 'D', 0, dst, 0);
}
#endif

#ifdef FAKE_PREFETCH_V2
int cudaMemPrefetchAsync_v2(const void *p, size_t n, loc_t loc, unsigned flags, void *s) {
	(void)s;
	return prefetch(p, n, 'V', loc.type, loc.id, flags);
}
#endif

// Events: recorded[0] says the event was recorded; a query right after a
// record answers not ready (600), the next one ready.

int cudaEventCreate(int **e) {
	if (current != 0) return 201;
	*e = calloc(2, sizeof(int));
	return 0;
}
int cudaEventRecord(int *e, void *s) {
	(void)s;
	e[0] = 1;
	e[1] = 1;
	return 0;
}
int cudaStreamWaitEvent(void *s, int *e, unsigned flags) {
	(void)s;
	return flags || !e ? 1 : 0;
}
int cudaEventSynchronize(int *e) { return e ? 0 : 400; }
int cudaEventQuery(int *e) {
	if (e[1]) {
		e[1] = 0;
		return 600;
	}
	return 0;
}
int cudaEventElapsedTime(float *ms, int *a, int *b) {
	if (!a[0] || !b[0]) return 400;
	*ms = 1.5f;
	return 0;
}
int cudaEventDestroy(int *e) {
	free(e);
	return 0;
}

// Capture: one stream at a time; the graph records nothing.

static void *capturing;

int cudaStreamBeginCapture(void *s, int mode) {
	if (mode < 0 || mode > 2) return 1;
	if (!s || capturing) return 900;
	capturing = s;
	return 0;
}
int cudaStreamEndCapture(void *s, void **g) {
	if (!s || s != capturing) return 903;
	capturing = NULL;
	*g = malloc(1);
	return 0;
}
int cudaGraphInstantiate(void **x, void *g, unsigned long long flags) {
	if (!g || flags) return 1;
	*x = malloc(1);
	return 0;
}
int cudaGraphLaunch(void *x, void *s) {
	(void)s;
	return x ? 0 : 400;
}
int cudaGraphExecDestroy(void *x) { free(x); return 0; }
int cudaGraphDestroy(void *g) { free(g); return 0; }

// Every graph has the same three nodes: a kernel between a memory allocation
// and its free, each node the address of its type.
static int node_types[3] = {10, 0, 11};

int cudaGraphGetNodes(void *g, void **nodes, size_t *n) {
	if (!g || !n) return 1;
	if (nodes) {
		for (size_t i = 0; i < *n; i++) nodes[i] = i < 3 ? &node_types[i] : NULL;
		if (*n < 3) return 0;
	}
	*n = 3;
	return 0;
}
int cudaGraphNodeGetType(int *node, int *type) {
	if (!node || !type) return 1;
	*type = *node;
	return 0;
}

// The driver half: one reservation and one handle at a time.

static void *reserved;
static size_t reserved_size;

int cuGetErrorName(int e, const char **s) {
	switch (e) {
	case 1: *s = "CUDA_ERROR_INVALID_VALUE"; return 0;
	case 2: *s = "CUDA_ERROR_OUT_OF_MEMORY"; return 0;
	case 101: *s = "CUDA_ERROR_INVALID_DEVICE"; return 0;
	case 218: *s = "CUDA_ERROR_INVALID_PTX"; return 0;
	case 400: *s = "CUDA_ERROR_INVALID_HANDLE"; return 0;
	case 500: *s = "CUDA_ERROR_NOT_FOUND"; return 0;
	}
	return 1;
}
int cuGetErrorString(int e, const char **s) {
	(void)e;
	*s = "fake driver message";
	return 0;
}
int cuInit(unsigned flags) { return flags ? 1 : 0; }
int cuDeviceGet(int *d, int ordinal) {
	if (ordinal != 0) return 101;
	*d = ordinal;
	return 0;
}
int cuDeviceGetName(char *buf, int n, int d) {
	snprintf(buf, (size_t)n, "Fake GPU %d", d);
	return 0;
}

static int pinned_on_current(const prop_t *p) {
	return current == 0 && p->type == 1 && p->requestedHandleTypes == 0 && p->location.type == 1 &&
	       p->location.id == 0 && p->win32HandleMetaData == NULL;
}

int cuMemGetAllocationGranularity(size_t *g, const prop_t *p, int option) {
	if (!pinned_on_current(p) || option < 0 || option > 1) return 1;
	*g = option ? 2 * GRANULE : GRANULE;
	return 0;
}
int cuMemCreate(unsigned long long *h, size_t n, const prop_t *p, unsigned long long flags) {
	if (!pinned_on_current(p) || flags || n % GRANULE) return 1;
	if (n > ((size_t)1 << 40)) return 2;
	*h = (unsigned long long)(uintptr_t)malloc(n);
	return 0;
}
int cuMemRelease(unsigned long long h) {
	free((void *)(uintptr_t)h);
	return 0;
}
int cuMemAddressReserve(unsigned long long *p, size_t n, size_t align, unsigned long long hint, unsigned long long flags) {
	(void)hint;
	if (current != 0 || flags || n % GRANULE || reserved) return 1;
	reserved = aligned_alloc(align ? align : GRANULE, n);
	reserved_size = n;
	*p = (unsigned long long)(uintptr_t)reserved;
	return 0;
}
int cuMemAddressFree(unsigned long long p, size_t n) {
	if ((void *)(uintptr_t)p != reserved || n != reserved_size) return 1;
	free(reserved);
	reserved = NULL;
	return 0;
}
static int in_reservation(unsigned long long p, size_t n) {
	uintptr_t base = (uintptr_t)reserved;
	return reserved && p >= base && p + n <= base + reserved_size && n % GRANULE == 0;
}
int cuMemMap(unsigned long long p, size_t n, size_t off, unsigned long long h, unsigned long long flags) {
	return in_reservation(p, n) && h && off % GRANULE == 0 && !flags ? 0 : 1;
}
int cuMemUnmap(unsigned long long p, size_t n) { return in_reservation(p, n) ? 0 : 1; }
int cuMemSetAccess(unsigned long long p, size_t n, const access_t *d, size_t count) {
	if (!in_reservation(p, n) || count == 0) return 1;
	for (size_t i = 0; i < count; i++) {
		if (d[i].location.type != 1 || d[i].flags != 3) return 1;
		if (d[i].location.id != 0) return 101;
	}
	return 0;
}

// Kernels: a module knows one kernel, fill(u32 *p, u32 n, u32 value), which
// writes value to the first min(n, threads) words at p. PTX that contains
// INVALID fails with a JIT log.

static int fill_function;

int cuModuleLoadDataEx(void **m, const char *image, unsigned n, const int *opts, void **vals) {
	if (current != 0 || n != 2 || opts[0] != 5 || opts[1] != 6) return 1;
	if (strstr(image, "INVALID")) {
		snprintf((char *)vals[0], (size_t)(uintptr_t)vals[1], "fake JIT: %s", "line 7: INVALID is not an instruction");
		vals[1] = (void *)(uintptr_t)strlen((char *)vals[0]);
		return 218;
	}
	*m = malloc(1);
	return 0;
}
int cuModuleGetFunction(void **f, void *m, const char *name) {
	if (!m) return 400;
	if (strcmp(name, "fill") != 0) return 500;
	*f = &fill_function;
	return 0;
}
int cuModuleUnload(void *m) {
	free(m);
	return 0;
}
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned shared, void *s, void **params, void **extra) {
	(void)shared;
	(void)s;
	if (current != 0) return 201;
	if (f != &fill_function) return 400;
	if (extra || !params) return 1;
	uint32_t *p = *(uint32_t **)params[0];
	uint32_t n = *(uint32_t *)params[1];
	uint32_t v = *(uint32_t *)params[2];
	uint64_t threads = (uint64_t)gx * gy * gz * bx * by * bz;
	for (uint64_t i = 0; i < n && i < threads; i++) {
		p[i] = v;
	}
	return 0;
}
