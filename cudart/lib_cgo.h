// The few CUDA declarations the binding needs, written here so that building
// needs no CUDA headers, and the trampolines lib_cgo.c defines. Every name this
// file exports to the linker starts with cudapool_: a program-wide symbol named
// like a CUDA function would interpose on the library loaded with dlopen.

#ifndef CUDAPOOL_LIB_CGO_H
#define CUDAPOOL_LIB_CGO_H

#include <stddef.h>
#include <stdint.h>

typedef int cp_err;                   // cudaError_t and CUresult
typedef void *cp_stream;              // cudaStream_t
typedef void *cp_mempool;             // cudaMemPool_t
typedef unsigned long long cp_devptr; // CUdeviceptr
typedef unsigned long long cp_handle; // CUmemGenericAllocationHandle

// cudaMemLocation and CUmemLocation: {enum type; int id;}.
typedef struct {
	int type;
	int id;
} cp_location;

// CUmemAllocationProp (CUDA 10.2 to 13).
typedef struct {
	int type;                 // CUmemAllocationType
	int requestedHandleTypes; // CUmemAllocationHandleType
	cp_location location;
	void *win32HandleMetaData;
	struct {
		unsigned char compressionType;
		unsigned char gpuDirectRDMACapable;
		unsigned short usage;
		unsigned char reserved[4];
	} allocFlags;
} cp_alloc_prop;

// CUmemAccessDesc.
typedef struct {
	cp_location location;
	int flags; // CUmemAccess_flags
} cp_access_desc;

// The runtime functions the binding needs, with their C types. X(name,
// return type, parameter list) expands to a table field or a lookup.
// cudaMemPrefetchAsync is not listed: its signature depends on the version, so
// cudapool_resolve_rt looks it up apart.
#define CP_RT_FUNCS(X) \
	X(cudaGetErrorName, const char *, (cp_err)) \
	X(cudaGetErrorString, const char *, (cp_err)) \
	X(cudaRuntimeGetVersion, cp_err, (int *)) \
	X(cudaDriverGetVersion, cp_err, (int *)) \
	X(cudaGetDeviceCount, cp_err, (int *)) \
	X(cudaSetDevice, cp_err, (int)) \
	X(cudaGetDeviceFlags, cp_err, (unsigned *)) \
	X(cudaSetDeviceFlags, cp_err, (unsigned)) \
	X(cudaDeviceGetLimit, cp_err, (size_t *, int)) \
	X(cudaDeviceSetLimit, cp_err, (int, size_t)) \
	X(cudaDeviceSynchronize, cp_err, (void)) \
	X(cudaMemGetInfo, cp_err, (size_t *, size_t *)) \
	X(cudaMalloc, cp_err, (void **, size_t)) \
	X(cudaFree, cp_err, (void *)) \
	X(cudaMallocHost, cp_err, (void **, size_t)) \
	X(cudaFreeHost, cp_err, (void *)) \
	X(cudaHostAlloc, cp_err, (void **, size_t, unsigned)) \
	X(cudaHostGetDevicePointer, cp_err, (void **, void *, unsigned)) \
	X(cudaHostRegister, cp_err, (void *, size_t, unsigned)) \
	X(cudaHostUnregister, cp_err, (void *)) \
	X(cudaMemcpy, cp_err, (void *, const void *, size_t, int)) \
	X(cudaMemcpyAsync, cp_err, (void *, const void *, size_t, int, cp_stream)) \
	X(cudaMemset, cp_err, (void *, int, size_t)) \
	X(cudaStreamCreate, cp_err, (cp_stream *)) \
	X(cudaStreamSynchronize, cp_err, (cp_stream)) \
	X(cudaStreamDestroy, cp_err, (cp_stream)) \
	X(cudaMallocManaged, cp_err, (void **, size_t, unsigned)) \
	X(cudaMallocAsync, cp_err, (void **, size_t, cp_stream)) \
	X(cudaFreeAsync, cp_err, (void *, cp_stream)) \
	X(cudaDeviceGetDefaultMemPool, cp_err, (cp_mempool *, int)) \
	X(cudaMemPoolGetAttribute, cp_err, (cp_mempool, int, void *)) \
	X(cudaMemPoolSetAttribute, cp_err, (cp_mempool, int, void *))

// The driver functions: device names and virtual memory management. All have
// kept their plain names since CUDA 10.2 (none has a _v2 form).
#define CP_DRV_FUNCS(X) \
	X(cuGetErrorName, cp_err, (cp_err, const char **)) \
	X(cuGetErrorString, cp_err, (cp_err, const char **)) \
	X(cuInit, cp_err, (unsigned)) \
	X(cuDeviceGet, cp_err, (int *, int)) \
	X(cuDeviceGetName, cp_err, (char *, int, int)) \
	X(cuMemGetAllocationGranularity, cp_err, (size_t *, const cp_alloc_prop *, int)) \
	X(cuMemCreate, cp_err, (cp_handle *, size_t, const cp_alloc_prop *, unsigned long long)) \
	X(cuMemRelease, cp_err, (cp_handle)) \
	X(cuMemAddressReserve, cp_err, (cp_devptr *, size_t, size_t, cp_devptr, unsigned long long)) \
	X(cuMemAddressFree, cp_err, (cp_devptr, size_t)) \
	X(cuMemMap, cp_err, (cp_devptr, size_t, size_t, cp_handle, unsigned long long)) \
	X(cuMemUnmap, cp_err, (cp_devptr, size_t)) \
	X(cuMemSetAccess, cp_err, (cp_devptr, size_t, const cp_access_desc *, size_t))

#define CP_FIELD(name, ret, params) ret(*name) params;
typedef struct {
	CP_RT_FUNCS(CP_FIELD)
} cp_rt;
typedef struct {
	CP_DRV_FUNCS(CP_FIELD)
} cp_drv;
#undef CP_FIELD

// Which signature the prefetch entry point has.
enum {
	CP_PREFETCH_DEVICE = 0,   // (ptr, count, int dstDevice, stream): CUDA 12 and older
	CP_PREFETCH_LOCATION = 1, // (ptr, count, cudaMemLocation, flags, stream): CUDA 13, and _v2 from 12.2
};

// The loaded libraries. Written by the resolvers at Open, read-only after.
typedef struct {
	void *rt_handle;
	void *drv_handle; // NULL when libcuda could not be loaded
	cp_rt rt;
	cp_drv drv;
	void *prefetch;
	int prefetch_form;
} cp_lib;

// Every trampoline returns one of these: the code, whether it is a driver
// CUresult, and up to two integers and a host pointer. Returning by value keeps
// Go from passing the address of a local to C, which would move it to the heap.
typedef struct {
	cp_err err;
	int driver;
	uint64_t a;
	uint64_t b;
	void *p;
} cp_ret;

// A dlopen result with dlerror's message, taken in the same C call because
// dlerror is per thread and a goroutine may change threads between calls.
typedef struct {
	void *handle;
	char msg[512];
} cp_open_ret;

// CUDA's name and message for an error code; static strings owned by the
// library.
typedef struct {
	const char *name;
	const char *msg;
} cp_text_ret;

// A device name from cuDeviceGetName.
typedef struct {
	cp_ret r;
	char name[256];
} cp_name_ret;

cp_open_ret cudapool_dlopen(const char *path, int nodelete);
void cudapool_dlclose(void *handle);
// The resolvers look up every function in handle and return how many are
// missing, with their indexes in missing, which has room for the count of
// names. Only when none is missing do they fill l, which may otherwise be NULL.
int cudapool_resolve_rt(cp_lib *l, void *handle, int *missing);
int cudapool_resolve_drv(cp_lib *l, void *handle, int *missing);
const char *cudapool_rt_name(int i);
const char *cudapool_drv_name(int i);
int cudapool_rt_count(void);
int cudapool_drv_count(void);

cp_text_ret cudapool_error_text(const cp_lib *l, cp_err err, int driver);
const char *cudapool_object_path(void *handle, const char *symbol);

cp_ret cudapool_device_count(const cp_lib *l);
cp_ret cudapool_mem_get_info(const cp_lib *l, int dev);
cp_ret cudapool_malloc(const cp_lib *l, int dev, size_t n);
cp_ret cudapool_free(const cp_lib *l, int dev, uintptr_t p);
cp_ret cudapool_malloc_host(const cp_lib *l, int dev, size_t n);
cp_ret cudapool_free_host(const cp_lib *l, void *p);
cp_ret cudapool_memcpy(const cp_lib *l, int dev, void *dsth, uintptr_t dstd, void *srch, uintptr_t srcd, size_t n, int kind);
cp_ret cudapool_memset(const cp_lib *l, int dev, uintptr_t p, int value, size_t n);
cp_ret cudapool_device_synchronize(const cp_lib *l, int dev);

cp_ret cudapool_stream_create(const cp_lib *l, int dev);
cp_ret cudapool_stream_synchronize(const cp_lib *l, int dev, uintptr_t s);
cp_ret cudapool_stream_destroy(const cp_lib *l, int dev, uintptr_t s);
cp_ret cudapool_memcpy_async(const cp_lib *l, int dev, void *dsth, uintptr_t dstd, void *srch, uintptr_t srcd, size_t n, int kind, uintptr_t s);

cp_ret cudapool_host_alloc(const cp_lib *l, int dev, size_t n, unsigned flags);
cp_ret cudapool_host_get_device_pointer(const cp_lib *l, int dev, void *p);
cp_ret cudapool_get_device_flags(const cp_lib *l, int dev);
cp_ret cudapool_set_device_flags(const cp_lib *l, int dev, unsigned flags);
cp_ret cudapool_host_register(const cp_lib *l, int dev, void *p, size_t n, unsigned flags);
cp_ret cudapool_host_unregister(const cp_lib *l, int dev, void *p);

cp_ret cudapool_malloc_managed(const cp_lib *l, int dev, size_t n, unsigned flags);
cp_ret cudapool_mem_prefetch_async(const cp_lib *l, int dev, uintptr_t p, size_t n, int dst, uintptr_t s);
cp_ret cudapool_malloc_async(const cp_lib *l, int dev, size_t n, uintptr_t s);
cp_ret cudapool_free_async(const cp_lib *l, int dev, uintptr_t p, uintptr_t s);
cp_ret cudapool_mem_pool_threshold(const cp_lib *l, int dev);
cp_ret cudapool_set_mem_pool_threshold(const cp_lib *l, int dev, uint64_t v);

cp_ret cudapool_set_device(const cp_lib *l, int dev);
cp_ret cudapool_device_get_limit(const cp_lib *l, int dev, int limit);
cp_ret cudapool_device_set_limit(const cp_lib *l, int dev, int limit, size_t v);
cp_ret cudapool_runtime_version(const cp_lib *l);
cp_ret cudapool_driver_version(const cp_lib *l);
cp_name_ret cudapool_device_name(const cp_lib *l, int dev);

cp_ret cudapool_mem_granularity(const cp_lib *l, int dev, int recommended);
cp_ret cudapool_mem_create(const cp_lib *l, int dev, size_t n);
cp_ret cudapool_mem_release(const cp_lib *l, int dev, cp_handle h);
cp_ret cudapool_mem_address_reserve(const cp_lib *l, int dev, size_t n, size_t align, uintptr_t hint);
cp_ret cudapool_mem_address_free(const cp_lib *l, int dev, uintptr_t p, size_t n);
cp_ret cudapool_mem_map(const cp_lib *l, int dev, uintptr_t p, size_t n, size_t off, cp_handle h);
cp_ret cudapool_mem_unmap(const cp_lib *l, int dev, uintptr_t p, size_t n);
cp_ret cudapool_mem_set_access(const cp_lib *l, int dev, uintptr_t p, size_t n, const int *devices, size_t count);

#endif
