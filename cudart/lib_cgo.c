//go:build cgo

// Trampolines: each Go method is one cgo call, which selects the device and
// makes the CUDA call in the same C call, on the same OS thread.

#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib_cgo.h"

_Static_assert(sizeof(cp_location) == 8, "cudaMemLocation is 8 bytes");
_Static_assert(sizeof(cp_alloc_prop) == 32, "CUmemAllocationProp is 32 bytes");
_Static_assert(sizeof(cp_access_desc) == 12, "CUmemAccessDesc is 12 bytes");

enum {
	CP_CPU_DEVICE = -1,          // cudaCpuDeviceId
	CP_LOCATION_DEVICE = 1,      // cudaMemLocationTypeDevice, CU_MEM_LOCATION_TYPE_DEVICE
	CP_LOCATION_HOST = 2,        // cudaMemLocationTypeHost
	CP_ALLOCATION_PINNED = 1,    // CU_MEM_ALLOCATION_TYPE_PINNED
	CP_ACCESS_READWRITE = 3,     // CU_MEM_ACCESS_FLAGS_PROT_READWRITE
	CP_POOL_RELEASE_THRESHOLD = 4, // cudaMemPoolAttrReleaseThreshold
	CP_OUT_OF_MEMORY = 2,        // CUDA_ERROR_OUT_OF_MEMORY
};

static const char *const rt_names[] = {
#define CP_NAME(name, ret, params) #name,
	CP_RT_FUNCS(CP_NAME)
#undef CP_NAME
	"cudaMemPrefetchAsync",
};

static const char *const drv_names[] = {
#define CP_NAME(name, ret, params) #name,
	CP_DRV_FUNCS(CP_NAME)
#undef CP_NAME
};

int cudapool_rt_count(void) { return (int)(sizeof rt_names / sizeof rt_names[0]); }
int cudapool_drv_count(void) { return (int)(sizeof drv_names / sizeof drv_names[0]); }
const char *cudapool_rt_name(int i) { return rt_names[i]; }
const char *cudapool_drv_name(int i) { return drv_names[i]; }

cp_open_ret cudapool_dlopen(const char *path, int nodelete) {
	cp_open_ret r;
	int flags = RTLD_NOW | RTLD_LOCAL;
	if (nodelete) {
		flags |= RTLD_NODELETE;
	}
	r.msg[0] = 0;
	dlerror();
	r.handle = dlopen(path, flags);
	if (!r.handle) {
		const char *e = dlerror();
		snprintf(r.msg, sizeof r.msg, "%s", e ? e : "dlopen failed");
	}
	return r;
}

void cudapool_dlclose(void *handle) {
	if (handle) {
		dlclose(handle);
	}
}

const char *cudapool_object_path(void *handle, const char *symbol) {
	Dl_info info;
	void *s = dlsym(handle, symbol);
	if (!s || !dladdr(s, &info) || !info.dli_fname) {
		return NULL;
	}
	return info.dli_fname;
}

int cudapool_resolve_rt(cp_lib *l, void *handle, int *missing) {
	int n = 0, i = 0;
	void *s;
	cp_rt rt;
#define CP_LOOKUP(name, ret, params) \
	s = dlsym(handle, #name); \
	if (!s) { \
		missing[n++] = i; \
	} \
	rt.name = (ret(*) params)s; \
	i++;
	CP_RT_FUNCS(CP_LOOKUP)
#undef CP_LOOKUP
	// CUDA 12.2 added cudaMemPrefetchAsync_v2 taking a cudaMemLocation; CUDA
	// 13 gave that signature to cudaMemPrefetchAsync itself. Prefer _v2 where
	// exported, else go by the runtime's version.
	void *v1 = dlsym(handle, "cudaMemPrefetchAsync");
	void *v2 = dlsym(handle, "cudaMemPrefetchAsync_v2");
	if (!v1) {
		missing[n++] = i;
	}
	if (n) {
		return n;
	}
	l->rt = rt;
	l->rt_handle = handle;
	if (v2) {
		l->prefetch = v2;
		l->prefetch_form = CP_PREFETCH_LOCATION;
	} else {
		int version = 0;
		rt.cudaRuntimeGetVersion(&version);
		l->prefetch = v1;
		l->prefetch_form = version >= 13000 ? CP_PREFETCH_LOCATION : CP_PREFETCH_DEVICE;
	}
	return 0;
}

int cudapool_resolve_drv(cp_lib *l, void *handle, int *missing) {
	int n = 0, i = 0;
	void *s;
	cp_drv drv;
#define CP_LOOKUP(name, ret, params) \
	s = dlsym(handle, #name); \
	if (!s) { \
		missing[n++] = i; \
	} \
	drv.name = (ret(*) params)s; \
	i++;
	CP_DRV_FUNCS(CP_LOOKUP)
#undef CP_LOOKUP
	if (n) {
		return n;
	}
	l->drv = drv;
	l->drv_handle = handle;
	return 0;
}

cp_text_ret cudapool_error_text(const cp_lib *l, cp_err err, int driver) {
	cp_text_ret t = {NULL, NULL};
	if (!driver) {
		t.name = l->rt.cudaGetErrorName(err);
		t.msg = l->rt.cudaGetErrorString(err);
		return t;
	}
	if (l->drv.cuGetErrorName(err, &t.name) != 0) {
		t.name = NULL;
	}
	if (l->drv.cuGetErrorString(err, &t.msg) != 0) {
		t.msg = NULL;
	}
	return t;
}

// SET_DEVICE makes dev current on this thread, returning r on failure.
#define SET_DEVICE(l, dev, r) \
	do { \
		(r).err = (l)->rt.cudaSetDevice(dev); \
		if ((r).err) { \
			return (r); \
		} \
	} while (0)

// DRIVER_CALL records that the error, if any, is a CUresult.
#define DRIVER_CALL(r, call) \
	do { \
		(r).err = (call); \
		(r).driver = (r).err != 0; \
	} while (0)

cp_ret cudapool_device_count(const cp_lib *l) {
	cp_ret r = {0};
	int n = 0;
	r.err = l->rt.cudaGetDeviceCount(&n);
	r.a = (uint64_t)n;
	return r;
}

cp_ret cudapool_mem_get_info(const cp_lib *l, int dev) {
	cp_ret r = {0};
	size_t free = 0, total = 0;
	SET_DEVICE(l, dev, r);
	r.err = l->rt.cudaMemGetInfo(&free, &total);
	r.a = free;
	r.b = total;
	return r;
}

cp_ret cudapool_malloc(const cp_lib *l, int dev, size_t n) {
	cp_ret r = {0};
	void *p = NULL;
	SET_DEVICE(l, dev, r);
	r.err = l->rt.cudaMalloc(&p, n);
	r.a = (uintptr_t)p;
	return r;
}

cp_ret cudapool_free(const cp_lib *l, int dev, uintptr_t p) {
	cp_ret r = {0};
	SET_DEVICE(l, dev, r);
	r.err = l->rt.cudaFree((void *)p);
	return r;
}

cp_ret cudapool_malloc_host(const cp_lib *l, int dev, size_t n) {
	cp_ret r = {0};
	SET_DEVICE(l, dev, r);
	r.err = l->rt.cudaMallocHost(&r.p, n);
	return r;
}

cp_ret cudapool_free_host(const cp_lib *l, void *p) {
	cp_ret r = {0};
	r.err = l->rt.cudaFreeHost(p);
	return r;
}

// Each end of a copy is a host pointer (Go or pinned memory) or, when that is
// NULL, a device address: Go never turns a device address into a pointer.
cp_ret cudapool_memcpy(const cp_lib *l, int dev, void *dsth, uintptr_t dstd, void *srch, uintptr_t srcd, size_t n, int kind) {
	cp_ret r = {0};
	SET_DEVICE(l, dev, r);
	r.err = l->rt.cudaMemcpy(dsth ? dsth : (void *)dstd, srch ? srch : (const void *)srcd, n, kind);
	return r;
}

cp_ret cudapool_memset(const cp_lib *l, int dev, uintptr_t p, int value, size_t n) {
	cp_ret r = {0};
	SET_DEVICE(l, dev, r);
	r.err = l->rt.cudaMemset((void *)p, value, n);
	return r;
}

cp_ret cudapool_device_synchronize(const cp_lib *l, int dev) {
	cp_ret r = {0};
	SET_DEVICE(l, dev, r);
	r.err = l->rt.cudaDeviceSynchronize();
	return r;
}

cp_ret cudapool_stream_create(const cp_lib *l, int dev) {
	cp_ret r = {0};
	cp_stream s = NULL;
	SET_DEVICE(l, dev, r);
	r.err = l->rt.cudaStreamCreate(&s);
	r.a = (uintptr_t)s;
	return r;
}

cp_ret cudapool_stream_synchronize(const cp_lib *l, int dev, uintptr_t s) {
	cp_ret r = {0};
	SET_DEVICE(l, dev, r);
	r.err = l->rt.cudaStreamSynchronize((cp_stream)s);
	return r;
}

cp_ret cudapool_stream_destroy(const cp_lib *l, int dev, uintptr_t s) {
	cp_ret r = {0};
	SET_DEVICE(l, dev, r);
	r.err = l->rt.cudaStreamDestroy((cp_stream)s);
	return r;
}

cp_ret cudapool_memcpy_async(const cp_lib *l, int dev, void *dsth, uintptr_t dstd, void *srch, uintptr_t srcd, size_t n, int kind, uintptr_t s) {
	cp_ret r = {0};
	SET_DEVICE(l, dev, r);
	r.err = l->rt.cudaMemcpyAsync(dsth ? dsth : (void *)dstd, srch ? srch : (const void *)srcd, n, kind, (cp_stream)s);
	return r;
}

cp_ret cudapool_host_alloc(const cp_lib *l, int dev, size_t n, unsigned flags) {
	cp_ret r = {0};
	SET_DEVICE(l, dev, r);
	r.err = l->rt.cudaHostAlloc(&r.p, n, flags);
	return r;
}

cp_ret cudapool_host_get_device_pointer(const cp_lib *l, int dev, void *p) {
	cp_ret r = {0};
	void *d = NULL;
	SET_DEVICE(l, dev, r);
	r.err = l->rt.cudaHostGetDevicePointer(&d, p, 0);
	r.a = (uintptr_t)d;
	return r;
}

cp_ret cudapool_get_device_flags(const cp_lib *l, int dev) {
	cp_ret r = {0};
	unsigned flags = 0;
	SET_DEVICE(l, dev, r);
	r.err = l->rt.cudaGetDeviceFlags(&flags);
	r.a = flags;
	return r;
}

cp_ret cudapool_set_device_flags(const cp_lib *l, int dev, unsigned flags) {
	cp_ret r = {0};
	SET_DEVICE(l, dev, r);
	r.err = l->rt.cudaSetDeviceFlags(flags);
	return r;
}

cp_ret cudapool_host_register(const cp_lib *l, int dev, void *p, size_t n, unsigned flags) {
	cp_ret r = {0};
	SET_DEVICE(l, dev, r);
	r.err = l->rt.cudaHostRegister(p, n, flags);
	return r;
}

cp_ret cudapool_host_unregister(const cp_lib *l, int dev, void *p) {
	cp_ret r = {0};
	SET_DEVICE(l, dev, r);
	r.err = l->rt.cudaHostUnregister(p);
	return r;
}

cp_ret cudapool_malloc_managed(const cp_lib *l, int dev, size_t n, unsigned flags) {
	cp_ret r = {0};
	void *p = NULL;
	SET_DEVICE(l, dev, r);
	r.err = l->rt.cudaMallocManaged(&p, n, flags);
	r.a = (uintptr_t)p;
	return r;
}

typedef cp_err (*cp_prefetch_location_fn)(const void *, size_t, cp_location, unsigned, cp_stream);
typedef cp_err (*cp_prefetch_device_fn)(const void *, size_t, int, cp_stream);

cp_ret cudapool_mem_prefetch_async(const cp_lib *l, int dev, uintptr_t p, size_t n, int dst, uintptr_t s) {
	cp_ret r = {0};
	SET_DEVICE(l, dev, r);
	if (l->prefetch_form == CP_PREFETCH_LOCATION) {
		cp_location loc = {CP_LOCATION_DEVICE, dst};
		if (dst == CP_CPU_DEVICE) {
			loc.type = CP_LOCATION_HOST;
			loc.id = 0;
		}
		r.err = ((cp_prefetch_location_fn)l->prefetch)((const void *)p, n, loc, 0, (cp_stream)s);
	} else {
		r.err = ((cp_prefetch_device_fn)l->prefetch)((const void *)p, n, dst, (cp_stream)s);
	}
	return r;
}

cp_ret cudapool_malloc_async(const cp_lib *l, int dev, size_t n, uintptr_t s) {
	cp_ret r = {0};
	void *p = NULL;
	SET_DEVICE(l, dev, r);
	r.err = l->rt.cudaMallocAsync(&p, n, (cp_stream)s);
	r.a = (uintptr_t)p;
	return r;
}

cp_ret cudapool_free_async(const cp_lib *l, int dev, uintptr_t p, uintptr_t s) {
	cp_ret r = {0};
	SET_DEVICE(l, dev, r);
	r.err = l->rt.cudaFreeAsync((void *)p, (cp_stream)s);
	return r;
}

cp_ret cudapool_mem_pool_threshold(const cp_lib *l, int dev) {
	cp_ret r = {0};
	cp_mempool pool = NULL;
	uint64_t v = 0;
	r.err = l->rt.cudaDeviceGetDefaultMemPool(&pool, dev);
	if (r.err) {
		return r;
	}
	r.err = l->rt.cudaMemPoolGetAttribute(pool, CP_POOL_RELEASE_THRESHOLD, &v);
	r.a = v;
	return r;
}

cp_ret cudapool_set_mem_pool_threshold(const cp_lib *l, int dev, uint64_t v) {
	cp_ret r = {0};
	cp_mempool pool = NULL;
	r.err = l->rt.cudaDeviceGetDefaultMemPool(&pool, dev);
	if (r.err) {
		return r;
	}
	r.err = l->rt.cudaMemPoolSetAttribute(pool, CP_POOL_RELEASE_THRESHOLD, &v);
	return r;
}

cp_ret cudapool_set_device(const cp_lib *l, int dev) {
	cp_ret r = {0};
	r.err = l->rt.cudaSetDevice(dev);
	return r;
}

cp_ret cudapool_device_get_limit(const cp_lib *l, int dev, int limit) {
	cp_ret r = {0};
	size_t v = 0;
	SET_DEVICE(l, dev, r);
	r.err = l->rt.cudaDeviceGetLimit(&v, limit);
	r.a = v;
	return r;
}

cp_ret cudapool_device_set_limit(const cp_lib *l, int dev, int limit, size_t v) {
	cp_ret r = {0};
	SET_DEVICE(l, dev, r);
	r.err = l->rt.cudaDeviceSetLimit(limit, v);
	return r;
}

cp_ret cudapool_runtime_version(const cp_lib *l) {
	cp_ret r = {0};
	int v = 0;
	r.err = l->rt.cudaRuntimeGetVersion(&v);
	r.a = (uint64_t)v;
	return r;
}

cp_ret cudapool_driver_version(const cp_lib *l) {
	cp_ret r = {0};
	int v = 0;
	r.err = l->rt.cudaDriverGetVersion(&v);
	r.a = (uint64_t)v;
	return r;
}

cp_name_ret cudapool_device_name(const cp_lib *l, int dev) {
	cp_name_ret n;
	int d = 0;
	memset(&n, 0, sizeof n);
	DRIVER_CALL(n.r, l->drv.cuInit(0));
	if (n.r.err) {
		return n;
	}
	DRIVER_CALL(n.r, l->drv.cuDeviceGet(&d, dev));
	if (n.r.err) {
		return n;
	}
	DRIVER_CALL(n.r, l->drv.cuDeviceGetName(n.name, (int)sizeof n.name, d));
	return n;
}

// The virtual memory calls run in the runtime's primary context of dev, made
// current by cudaSetDevice, so that their memory is usable by runtime calls.

static cp_alloc_prop pinned_on(int dev) {
	cp_alloc_prop p;
	memset(&p, 0, sizeof p);
	p.type = CP_ALLOCATION_PINNED;
	p.location.type = CP_LOCATION_DEVICE;
	p.location.id = dev;
	return p;
}

cp_ret cudapool_mem_granularity(const cp_lib *l, int dev, int recommended) {
	cp_ret r = {0};
	cp_alloc_prop prop = pinned_on(dev);
	size_t g = 0;
	SET_DEVICE(l, dev, r);
	DRIVER_CALL(r, l->drv.cuMemGetAllocationGranularity(&g, &prop, recommended ? 1 : 0));
	r.a = g;
	return r;
}

cp_ret cudapool_mem_create(const cp_lib *l, int dev, size_t n) {
	cp_ret r = {0};
	cp_alloc_prop prop = pinned_on(dev);
	cp_handle h = 0;
	SET_DEVICE(l, dev, r);
	DRIVER_CALL(r, l->drv.cuMemCreate(&h, n, &prop, 0));
	r.a = h;
	return r;
}

cp_ret cudapool_mem_release(const cp_lib *l, int dev, cp_handle h) {
	cp_ret r = {0};
	SET_DEVICE(l, dev, r);
	DRIVER_CALL(r, l->drv.cuMemRelease(h));
	return r;
}

cp_ret cudapool_mem_address_reserve(const cp_lib *l, int dev, size_t n, size_t align, uintptr_t hint) {
	cp_ret r = {0};
	cp_devptr p = 0;
	SET_DEVICE(l, dev, r);
	DRIVER_CALL(r, l->drv.cuMemAddressReserve(&p, n, align, hint, 0));
	r.a = p;
	return r;
}

cp_ret cudapool_mem_address_free(const cp_lib *l, int dev, uintptr_t p, size_t n) {
	cp_ret r = {0};
	SET_DEVICE(l, dev, r);
	DRIVER_CALL(r, l->drv.cuMemAddressFree(p, n));
	return r;
}

cp_ret cudapool_mem_map(const cp_lib *l, int dev, uintptr_t p, size_t n, size_t off, cp_handle h) {
	cp_ret r = {0};
	SET_DEVICE(l, dev, r);
	DRIVER_CALL(r, l->drv.cuMemMap(p, n, off, h, 0));
	return r;
}

cp_ret cudapool_mem_unmap(const cp_lib *l, int dev, uintptr_t p, size_t n) {
	cp_ret r = {0};
	SET_DEVICE(l, dev, r);
	DRIVER_CALL(r, l->drv.cuMemUnmap(p, n));
	return r;
}

cp_ret cudapool_mem_set_access(const cp_lib *l, int dev, uintptr_t p, size_t n, const int *devices, size_t count) {
	cp_ret r = {0};
	cp_access_desc local[16];
	cp_access_desc *desc = local;
	SET_DEVICE(l, dev, r);
	if (count > sizeof local / sizeof local[0]) {
		desc = calloc(count, sizeof *desc);
		if (!desc) {
			r.err = CP_OUT_OF_MEMORY;
			r.driver = 1;
			return r;
		}
	}
	for (size_t i = 0; i < count; i++) {
		desc[i].location.type = CP_LOCATION_DEVICE;
		desc[i].location.id = devices[i];
		desc[i].flags = CP_ACCESS_READWRITE;
	}
	DRIVER_CALL(r, l->drv.cuMemSetAccess(p, n, desc, count));
	if (desc != local) {
		free(desc);
	}
	return r;
}
