/*
 * grow.c: the C baseline for examples/vector. It grows a device buffer by
 * doubling, 2 MiB to MAX (default 32 GiB), on CUDA virtual memory exactly as
 * vmem.Vector does: per doubling one cuMemCreate of the delta, a reserve at
 * the hinted address right after the current range (a fresh bigger range and
 * a remap when the hint is refused), one cuMemMap and one cuMemSetAccess.
 * It prints the median time of REPS rounds, so the Go figure can be compared
 * side by side on the same host. It dlopens libcuda.so.1: no CUDA headers or
 * toolkit are needed to build it (make gpu builds it with gcc).
 *
 *   vector_c [max_bytes] [reps] [churn]
 *
 * With "churn", REPS rounds of realloc doubling (cuMemAlloc, a device copy,
 * cuMemFree) run first, as examples/vector runs its realloc rounds before
 * the VMM ones, so both can be compared after the same history.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct { int type; int id; } CUmemLocation;
typedef struct {
    int type, requestedHandleTypes;
    CUmemLocation location;
    void *win32HandleMetaData;
    struct { unsigned char compressionType, gpuDirectRDMACapable; unsigned short usage; unsigned char reserved[4]; } allocFlags;
} CUmemAllocationProp;
typedef struct { CUmemLocation location; int flags; } CUmemAccessDesc;

static CUresult (*cuInit)(unsigned);
static CUresult (*cuDevicePrimaryCtxRetain)(void **, int);
static CUresult (*cuCtxSetCurrent)(void *);
static CUresult (*cuMemGetAllocationGranularity)(size_t *, const CUmemAllocationProp *, int);
static CUresult (*cuMemCreate)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long);
static CUresult (*cuMemRelease)(CUmemGenericAllocationHandle);
static CUresult (*cuMemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
static CUresult (*cuMemAddressFree)(CUdeviceptr, size_t);
static CUresult (*cuMemMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
static CUresult (*cuMemUnmap)(CUdeviceptr, size_t);
static CUresult (*cuMemSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
static CUresult (*cuMemAlloc_v2)(CUdeviceptr *, size_t);
static CUresult (*cuMemFree_v2)(CUdeviceptr);
static CUresult (*cuMemcpyDtoD_v2)(CUdeviceptr, CUdeviceptr, size_t);
static CUresult (*cuCtxSynchronize)(void);

#define CHECK(call) do { CUresult r_ = (call); if (r_) { fprintf(stderr, "%s:%d %s = %d\n", __FILE__, __LINE__, #call, r_); exit(1); } } while (0)
#define MAXCHUNKS 64
#define MAXRANGES 64

static CUmemAllocationProp prop;
static CUmemAccessDesc access_desc;

struct chunk { CUmemGenericAllocationHandle h; size_t size; };
struct range { CUdeviceptr va; size_t size; };

struct vec {
    CUdeviceptr base; size_t size, reserved;
    struct chunk chunks[MAXCHUNKS]; int nchunks;
    struct range ranges[MAXRANGES]; int nranges;
    int moves;
};

static void map_all(struct vec *v, CUdeviceptr at) {
    size_t off = 0;
    for (int i = 0; i < v->nchunks; i++) {
        CHECK(cuMemMap(at + off, v->chunks[i].size, 0, v->chunks[i].h, 0));
        off += v->chunks[i].size;
    }
    CHECK(cuMemSetAccess(at, off, &access_desc, 1));
}

static void grow(struct vec *v, size_t n) {
    if (n <= v->size) return;
    size_t delta = n - v->size;
    CUmemGenericAllocationHandle h;
    CHECK(cuMemCreate(&h, delta, &prop, 0));
    CUdeviceptr va = 0;
    if (v->nranges == 0 || cuMemAddressReserve(&va, delta, 0, v->base + v->reserved, 0) != 0 || va != v->base + v->reserved) {
        if (va) CHECK(cuMemAddressFree(va, delta));
        if (v->nranges > 0) {
            /* The hint was refused: a new range for everything, old chunks remapped there. */
            CUdeviceptr nva;
            CHECK(cuMemAddressReserve(&nva, n, 0, 0, 0));
            v->chunks[v->nchunks++] = (struct chunk){h, delta};
            map_all(v, nva);
            CHECK(cuMemUnmap(v->base, v->size));
            for (int i = 0; i < v->nranges; i++) CHECK(cuMemAddressFree(v->ranges[i].va, v->ranges[i].size));
            v->nranges = 1; v->ranges[0] = (struct range){nva, n};
            v->base = nva; v->size = v->reserved = n; v->moves++;
            return;
        }
        CHECK(cuMemAddressReserve(&va, delta, 0, 0, 0));
        v->base = va;
    }
    v->ranges[v->nranges++] = (struct range){va, delta};
    v->reserved += delta;
    CHECK(cuMemMap(v->base + v->size, delta, 0, h, 0));
    CHECK(cuMemSetAccess(v->base + v->size, delta, &access_desc, 1));
    v->chunks[v->nchunks++] = (struct chunk){h, delta};
    v->size = n;
}

static void destroy(struct vec *v) {
    if (v->size) CHECK(cuMemUnmap(v->base, v->size));
    for (int i = 0; i < v->nchunks; i++) CHECK(cuMemRelease(v->chunks[i].h));
    for (int i = 0; i < v->nranges; i++) CHECK(cuMemAddressFree(v->ranges[i].va, v->ranges[i].size));
    memset(v, 0, sizeof *v);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define LOAD(name) do { *(void **)&name = dlsym(lib, #name); if (!name) { fprintf(stderr, "missing %s\n", #name); return 1; } } while (0)

int main(int argc, char **argv) {
    size_t max = argc > 1 ? strtoull(argv[1], 0, 10) : (32ull << 30);
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    int churn = argc > 3 && strcmp(argv[3], "churn") == 0;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) { fprintf(stderr, "%s\n", dlerror()); return 1; }
    LOAD(cuInit); LOAD(cuDevicePrimaryCtxRetain); LOAD(cuCtxSetCurrent);
    LOAD(cuMemGetAllocationGranularity); LOAD(cuMemCreate); LOAD(cuMemRelease);
    LOAD(cuMemAddressReserve); LOAD(cuMemAddressFree); LOAD(cuMemMap); LOAD(cuMemUnmap); LOAD(cuMemSetAccess);
    LOAD(cuMemAlloc_v2); LOAD(cuMemFree_v2); LOAD(cuMemcpyDtoD_v2); LOAD(cuCtxSynchronize);
    void *ctx;
    CHECK(cuInit(0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
    CHECK(cuCtxSetCurrent(ctx));
    prop.type = 1;          /* CU_MEM_ALLOCATION_TYPE_PINNED */
    prop.location.type = 1; /* CU_MEM_LOCATION_TYPE_DEVICE */
    access_desc.location = prop.location;
    access_desc.flags = 3;  /* CU_MEM_ACCESS_FLAGS_PROT_READWRITE */
    size_t gran;
    CHECK(cuMemGetAllocationGranularity(&gran, &prop, 0));
    for (int r = 0; churn && r < reps; r++) {
        CUdeviceptr p;
        CHECK(cuMemAlloc_v2(&p, 2u << 20));
        for (size_t n = 4u << 20; n <= max; n *= 2) {
            CUdeviceptr q;
            CHECK(cuMemAlloc_v2(&q, n));
            CHECK(cuMemcpyDtoD_v2(q, p, n / 2));
            CHECK(cuMemFree_v2(p));
            p = q;
        }
        CHECK(cuCtxSynchronize());
        CHECK(cuMemFree_v2(p));
    }
    double t[64];
    int moves = 0;
    for (int r = 0; r < reps && r < 64; r++) {
        struct vec v; memset(&v, 0, sizeof v);
        double start = now();
        for (size_t n = 2u << 20; n <= max; n *= 2) grow(&v, n);
        t[r] = now() - start;
        moves = v.moves;
        destroy(&v);
    }
    qsort(t, reps, sizeof t[0], cmp);
    printf("C VMM grow by doubling 2 MiB -> %.0f GiB%s: median %.3f ms of %d rounds (granularity %zu, %d moves)\n",
           max / (double)(1ull << 30), churn ? " after realloc churn" : "", t[reps / 2] * 1e3, reps, gran, moves);
    return 0;
}
