/*
 * gemm.c: the C reference for examples/gemm. It makes the calls the Go tool
 * makes through package cublas, from C: cublasCreate, cublasSetStream,
 * cublasSetMathMode(CUBLAS_DEFAULT_MATH) (NewHandle makes the same three),
 * cublasSetWorkspace with 32 MiB from cudaMalloc, then, for each shape,
 * cublasGemmEx with the same types, NoTrans both, CUBLAS_COMPUTE_32F and
 * CUBLAS_GEMM_DEFAULT, on operands filled with the same values. It times them
 * the same way: WARMUP calls and a stream synchronisation, then TRIALS times
 * REPS calls between two events on the stream (with -graph, one launch of a
 * CUDA graph that captured the REPS calls, after one untimed launch). It
 * prints the median and fastest ms per GEMM, TFLOP/s and the host's
 * microseconds per call, in the Go tool's table, then the same rows as
 * "gemm:" lines, which `gemm -compare FILE` reads.
 *
 *   nvcc -O2 -o gemm_c examples/gemm/cref/gemm.c -lcublas
 *   gemm_c [-reps 50] [-trials 7] [-warmup 10] [-scale 1] [-graph]
 *
 * The formats and the value generator must stay those of examples/gemm
 * (report.go, values.go): its tests read this file to hold them together.
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CUDA(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { fprintf(stderr, "gemm_c: %s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); exit(1); } } while (0)
#define BLAS(call) do { cublasStatus_t s_ = (call); if (s_ != CUBLAS_STATUS_SUCCESS) { fprintf(stderr, "gemm_c: %s:%d %s: status %d\n", __FILE__, __LINE__, #call, (int)s_); exit(1); } } while (0)

#define WORKSPACE (32u << 20)

struct shape {
    char name[16];
    cudaDataType type;
    const char *tname;
    int m, n, k;
};

/* shapes lists what examples/gemm's shapes.go lists, in its order. */
static int shapes(struct shape *out, int scale) {
    static const struct { cudaDataType t; const char *tn; } cube[] = {
        {CUDA_R_32F, "f32"}, {CUDA_R_16F, "f16"}, {CUDA_R_16BF, "bf16"},
    };
    static const int layers[3][2] = {{1024, 4096}, {4096, 4096}, {4096, 1024}}; /* in, out */
    static const int batches[3] = {1, 8, 32};
    int n = 0;
    for (int i = 0; i < 3; i++, n++) {
        snprintf(out[n].name, sizeof out[n].name, "cube.%s", cube[i].tn);
        out[n].type = cube[i].t;
        out[n].tname = cube[i].tn;
        out[n].m = out[n].n = out[n].k = 4096 / scale > 0 ? 4096 / scale : 1;
    }
    for (int b = 0; b < 3; b++) {
        for (int l = 0; l < 3; l++, n++) {
            snprintf(out[n].name, sizeof out[n].name, "l%d.b%d", l + 1, batches[b]);
            out[n].type = CUDA_R_32F;
            out[n].tname = "f32";
            out[n].m = layers[l][1] / scale > 0 ? layers[l][1] / scale : 1;
            out[n].n = batches[b];
            out[n].k = layers[l][0] / scale > 0 ? layers[l][0] / scale : 1;
        }
    }
    return n;
}

static size_t esize(cudaDataType t) { return t == CUDA_R_32F ? 4 : 2; }

/* f16bits encodes v, a multiple of 1/256 in [-1, 1], exactly. */
static uint16_t f16bits(float v) {
    uint32_t b;
    memcpy(&b, &v, 4);
    if ((b & 0x7fffffffu) == 0) return (uint16_t)(b >> 16);
    return (uint16_t)(((b >> 16) & 0x8000u) | ((((b >> 23) & 0xffu) - 127 + 15) << 10) | ((b >> 13) & 0x3ffu));
}

/*
 * fill writes n values of the generator examples/gemm uses: a 32-bit LCG
 * from seed, each value k/256 with k = (x >> 23) - 256, exact in every type.
 */
static void fill(void *dst, cudaDataType t, size_t n, uint32_t seed) {
    uint32_t x = seed;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        float v = (float)((int)(x >> 23) - 256) / 256.0f;
        uint32_t b;
        memcpy(&b, &v, 4);
        if (t == CUDA_R_32F) ((float *)dst)[i] = v;
        else if (t == CUDA_R_16F) ((uint16_t *)dst)[i] = f16bits(v);
        else ((uint16_t *)dst)[i] = (uint16_t)(b >> 16);
    }
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* gemm_one queues the shape's GEMM on the handle's stream. */
static void gemm_one(cublasHandle_t h, const struct shape *p, const void *a, const void *b, void *c) {
    const float alpha = 1, beta = 0;
    BLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, p->m, p->n, p->k, &alpha, a, p->type, p->m, b, p->type, p->k,
                      &beta, c, p->type, p->m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

int main(int argc, char **argv) {
    int reps = 50, trials = 7, warmup = 10, scale = 1, graph = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-graph") == 0) graph = 1;
        else if (i + 1 < argc && strcmp(argv[i], "-reps") == 0) reps = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "-trials") == 0) trials = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "-warmup") == 0) warmup = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "-scale") == 0) scale = atoi(argv[++i]);
        else {
            fprintf(stderr, "gemm_c: %s: usage: gemm_c [-reps 50] [-trials 7] [-warmup 10] [-scale 1] [-graph]\n", argv[i]);
            return 2;
        }
    }
    if (reps < 1 || trials < 1 || warmup < 0 || scale < 1 || trials > 1000) {
        fprintf(stderr, "gemm_c: -reps, -trials (at most 1000) and -scale must be at least 1, -warmup at least 0\n");
        return 2;
    }
    struct shape sh[16];
    int ns = shapes(sh, scale);
    size_t maxA = 0, maxB = 0, maxC = 0;
    for (int i = 0; i < ns; i++) {
        size_t e = esize(sh[i].type);
        if ((size_t)sh[i].m * sh[i].k * e > maxA) maxA = (size_t)sh[i].m * sh[i].k * e;
        if ((size_t)sh[i].k * sh[i].n * e > maxB) maxB = (size_t)sh[i].k * sh[i].n * e;
        if ((size_t)sh[i].m * sh[i].n * e > maxC) maxC = (size_t)sh[i].m * sh[i].n * e;
    }

    int major, minor, patch;
    BLAS(cublasGetProperty(MAJOR_VERSION, &major));
    BLAS(cublasGetProperty(MINOR_VERSION, &minor));
    BLAS(cublasGetProperty(PATCH_LEVEL, &patch));
    struct cudaDeviceProp prop;
    CUDA(cudaSetDevice(0));
    CUDA(cudaGetDeviceProperties(&prop, 0));
    printf("runtime: C (cuBLAS %d.%d.%d, device 0: %s)\n", major, minor, patch, prop.name);

    cudaStream_t s;
    cublasHandle_t h;
    cudaEvent_t start, stop;
    void *ws, *a, *b, *c;
    CUDA(cudaStreamCreate(&s));
    BLAS(cublasCreate(&h));
    BLAS(cublasSetStream(h, s));
    BLAS(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
    CUDA(cudaMalloc(&ws, WORKSPACE));
    BLAS(cublasSetWorkspace(h, ws, WORKSPACE));
    CUDA(cudaMalloc(&a, maxA));
    CUDA(cudaMalloc(&b, maxB));
    CUDA(cudaMalloc(&c, maxC));
    CUDA(cudaEventCreate(&start));
    CUDA(cudaEventCreate(&stop));
    void *host = malloc(maxA > maxB ? maxA : maxB);
    if (!host) { fprintf(stderr, "gemm_c: out of host memory\n"); return 1; }

    printf("workspace %u MiB from cudaMalloc; A is M x K, B K x N, C M x N, column-major, NoTrans both, FP32 accumulation\n\n", WORKSPACE >> 20);
    printf(graph ? "launch: graph, a trial's GEMMs captured in one CUDA graph, launched once\n"
                 : "launch: stream, each GEMM a cublasGemmEx call\n");
    printf("%-10s %-5s %6s %6s %6s %5s %6s %11s %11s %8s %12s\n", "shape", "type", "M", "N", "K", "reps", "trials", "ms/GEMM", "min ms", "TFLOP/s", "host us/call");
    double ms[1000], hus[1000], med[16], lo[16], hmed[16];
    for (int i = 0; i < ns; i++) {
        struct shape *p = &sh[i];
        size_t e = esize(p->type);
        fprintf(stderr, "gemm_c: %s %dx%dx%d: %d warm-up calls, %d trials of %d\n", p->name, p->m, p->n, p->k, warmup, trials, reps);
        fill(host, p->type, (size_t)p->m * p->k, 1);
        CUDA(cudaMemcpy(a, host, (size_t)p->m * p->k * e, cudaMemcpyHostToDevice));
        fill(host, p->type, (size_t)p->k * p->n, 2);
        CUDA(cudaMemcpy(b, host, (size_t)p->k * p->n * e, cudaMemcpyHostToDevice));
        for (int w = 0; w < warmup; w++) gemm_one(h, p, a, b, c);
        CUDA(cudaStreamSynchronize(s));
        cudaGraph_t g = NULL;
        cudaGraphExec_t x = NULL;
        if (graph) {
            CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
            for (int r = 0; r < reps; r++) gemm_one(h, p, a, b, c);
            CUDA(cudaStreamEndCapture(s, &g));
            CUDA(cudaGraphInstantiate(&x, g, 0));
            CUDA(cudaGraphLaunch(x, s));
            CUDA(cudaStreamSynchronize(s));
        }
        for (int t = 0; t < trials; t++) {
            CUDA(cudaEventRecord(start, s));
            double t0 = now_us();
            if (graph) CUDA(cudaGraphLaunch(x, s));
            else for (int r = 0; r < reps; r++) gemm_one(h, p, a, b, c);
            hus[t] = (now_us() - t0) / reps;
            CUDA(cudaEventRecord(stop, s));
            CUDA(cudaEventSynchronize(stop));
            float el;
            CUDA(cudaEventElapsedTime(&el, start, stop));
            ms[t] = (double)el / reps;
        }
        if (graph) {
            CUDA(cudaGraphExecDestroy(x));
            CUDA(cudaGraphDestroy(g));
        }
        qsort(ms, trials, sizeof ms[0], cmp);
        qsort(hus, trials, sizeof hus[0], cmp);
        med[i] = trials % 2 ? ms[trials / 2] : (ms[trials / 2 - 1] + ms[trials / 2]) / 2;
        hmed[i] = trials % 2 ? hus[trials / 2] : (hus[trials / 2 - 1] + hus[trials / 2]) / 2;
        lo[i] = ms[0];
        printf(graph ? "launch: graph, a trial's GEMMs captured in one CUDA graph, launched once\n"
                 : "launch: stream, each GEMM a cublasGemmEx call\n");
    printf("%-10s %-5s %6d %6d %6d %5d %6d %11.6f %11.6f %8.2f %12.2f\n", p->name, p->tname, p->m, p->n, p->k, reps, trials,
               med[i], lo[i], 2.0 * p->m * p->n * p->k / (med[i] * 1e-3) / 1e12, hmed[i]);
        fflush(stdout);
    }
    printf("\n");
    printf("gemm: cublas=%d.%d.%d\n", major, minor, patch);
    for (int i = 0; i < ns; i++) {
        struct shape *p = &sh[i];
        printf("gemm: shape=%s type=%s m=%d n=%d k=%d reps=%d trials=%d launch=%s ms=%.6f min_ms=%.6f tflops=%.2f host_us=%.2f\n", p->name, p->tname,
               p->m, p->n, p->k, reps, trials, graph ? "graph" : "stream", med[i], lo[i], 2.0 * p->m * p->n * p->k / (med[i] * 1e-3) / 1e12, hmed[i]);
    }
    free(host);
    CUDA(cudaEventDestroy(start));
    CUDA(cudaEventDestroy(stop));
    BLAS(cublasDestroy(h));
    CUDA(cudaFree(a));
    CUDA(cudaFree(b));
    CUDA(cudaFree(c));
    CUDA(cudaFree(ws));
    CUDA(cudaStreamDestroy(s));
    return 0;
}
