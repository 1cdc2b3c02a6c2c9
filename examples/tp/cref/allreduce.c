/*
 * allreduce.c: the C reference for `tp -bench-allreduce`. It makes the
 * calls the Go tool makes through package nccl, from C: ncclCommInitAll over
 * every visible GPU (one process), then for each size from 1 MiB to
 * MAX_BYTES, doubling, a group of one ncclAllReduce a device (float32, sum,
 * out of place) on a stream of each device. It times them the same way, as
 * nccl-tests does: WARMUP groups and every stream synchronised, then ITERS
 * groups between two readings of the host's clock and every stream
 * synchronised; time is a call's, algbw bytes over time, busbw
 * algbw * 2(n-1)/n. Then, for 4 KiB, 64 KiB and 1 MiB, the same eager time
 * against ITERS all-reduces captured into one CUDA graph a device (begun
 * and ended on one thread, in thread-local mode) and launched once a
 * device. Every device's capture ends before any graph is instantiated:
 * cudaGraphInstantiate while another capture of the thread is under way
 * fails with cudaErrorStreamCaptureUnsupported and invalidates that
 * capture. It prints the Go tool's tables.
 *
 * With -nonblocking it makes the communicators package nccl makes by
 * default: one ncclCommInitRankConfig a device (config.blocking = 0) in a
 * group, and after every group end (ncclInProgress: NCCL posts the work
 * from a thread of its own) it polls each communicator's
 * ncclCommGetAsyncError, back to back, until none is in progress, as NCCL
 * requires before the next call and as package nccl does. The difference
 * between the two runs is NCCL's own cost of non-blocking communicators.
 * The Go tool prints a table for each kind of package nccl's
 * communicators: its non-blocking one compares with this one's
 * -nonblocking, its blocking one (nccl.WithInlineLaunch, which NCCL
 * launches as it does ncclCommInitAll's) with this one's default; each
 * difference is the binding's.
 *
 *   nvcc -O2 -o allreduce_c allreduce.c -lnccl
 *   cc -O2 -o allreduce_c allreduce.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64 -lnccl -lcudart
 *   allreduce_c [-max BYTES] [-iters 20] [-warmup 5] [-nonblocking]
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CUDA(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { fprintf(stderr, "allreduce_c: %s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); exit(1); } } while (0)
#define NCCL(call) do { ncclResult_t r_ = (call); if (r_ != ncclSuccess) { fprintf(stderr, "allreduce_c: %s:%d %s: %s\n", __FILE__, __LINE__, #call, ncclGetErrorString(r_)); exit(1); } } while (0)

static int n, nonblocking;
static ncclComm_t *comms;
static cudaStream_t *streams;
static float **sendbuf, **recvbuf;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* NCCLQ is NCCL for a call on non-blocking communicators, which may
 * return ncclInProgress. */
#define NCCLQ(call) do { ncclResult_t r_ = (call); if (r_ != ncclSuccess && r_ != ncclInProgress) { fprintf(stderr, "allreduce_c: %s:%d %s: %s\n", __FILE__, __LINE__, #call, ncclGetErrorString(r_)); exit(1); } } while (0)

/* wait_comms polls every communicator until none is in progress. */
static void wait_comms(void) {
    for (int i = 0; i < n; i++) {
        ncclResult_t r;
        do NCCL(ncclCommGetAsyncError(comms[i], &r));
        while (r == ncclInProgress);
        NCCL(r);
    }
}

static void group(size_t bytes) {
    NCCL(ncclGroupStart());
    for (int i = 0; i < n; i++)
        NCCLQ(ncclAllReduce(sendbuf[i], recvbuf[i], bytes / 4, ncclFloat32, ncclSum, comms[i], streams[i]));
    NCCLQ(ncclGroupEnd());
    if (nonblocking) wait_comms();
}

/* init_comms makes a communicator a device: ncclCommInitAll's, or
 * non-blocking ones made as ncclCommInitAll makes them. */
static void init_comms(void) {
    if (!nonblocking) {
        int *devs = calloc(n, sizeof *devs);
        for (int i = 0; i < n; i++) devs[i] = i;
        NCCL(ncclCommInitAll(comms, n, devs));
        free(devs);
        return;
    }
    ncclUniqueId id;
    NCCL(ncclGetUniqueId(&id));
    NCCL(ncclGroupStart());
    for (int i = 0; i < n; i++) {
        ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
        config.blocking = 0;
        CUDA(cudaSetDevice(i));
        NCCLQ(ncclCommInitRankConfig(&comms[i], n, id, i, &config));
    }
    NCCLQ(ncclGroupEnd());
    wait_comms();
}

static void sync_all(void) {
    for (int i = 0; i < n; i++) {
        CUDA(cudaSetDevice(i));
        CUDA(cudaStreamSynchronize(streams[i]));
    }
}

/* eager is the time of one all-reduce of bytes, in seconds. */
static double eager(size_t bytes, int warmup, int iters) {
    for (int i = 0; i < warmup; i++) group(bytes);
    sync_all();
    double t0 = now();
    for (int i = 0; i < iters; i++) group(bytes);
    sync_all();
    return (now() - t0) / iters;
}

/* graphed is the time of one all-reduce of bytes from a graph of iters. */
static double graphed(size_t bytes, int warmup, int iters) {
    cudaGraphExec_t *execs = calloc(n, sizeof *execs);
    for (int i = 0; i < n; i++) {
        CUDA(cudaSetDevice(i));
        CUDA(cudaStreamBeginCapture(streams[i], cudaStreamCaptureModeThreadLocal));
    }
    for (int i = 0; i < iters; i++) group(bytes);
    cudaGraph_t *graphs = calloc(n, sizeof *graphs);
    for (int i = 0; i < n; i++) {
        CUDA(cudaSetDevice(i));
        CUDA(cudaStreamEndCapture(streams[i], &graphs[i]));
    }
    for (int i = 0; i < n; i++) {
        CUDA(cudaSetDevice(i));
        CUDA(cudaGraphInstantiate(&execs[i], graphs[i], 0));
        CUDA(cudaGraphDestroy(graphs[i]));
    }
    free(graphs);
    for (int w = 0; w < warmup; w++)
        for (int i = 0; i < n; i++) {
            CUDA(cudaSetDevice(i));
            CUDA(cudaGraphLaunch(execs[i], streams[i]));
        }
    sync_all();
    double t0 = now();
    for (int r = 0; r < iters; r++)
        for (int i = 0; i < n; i++) {
            CUDA(cudaSetDevice(i));
            CUDA(cudaGraphLaunch(execs[i], streams[i]));
        }
    sync_all();
    double t = (now() - t0) / ((double)iters * iters);
    for (int i = 0; i < n; i++) CUDA(cudaGraphExecDestroy(execs[i]));
    free(execs);
    return t;
}

int main(int argc, char **argv) {
    size_t max = 256u << 20;
    int iters = 20, warmup = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-nonblocking")) nonblocking = 1;
        else if (i + 1 < argc && !strcmp(argv[i], "-max")) max = strtoull(argv[++i], NULL, 10);
        else if (i + 1 < argc && !strcmp(argv[i], "-iters")) iters = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "-warmup")) warmup = atoi(argv[++i]);
        else { fprintf(stderr, "usage: allreduce_c [-max BYTES] [-iters 20] [-warmup 5] [-nonblocking]\n"); return 2; }
    }
    CUDA(cudaGetDeviceCount(&n));
    comms = calloc(n, sizeof *comms);
    streams = calloc(n, sizeof *streams);
    sendbuf = calloc(n, sizeof *sendbuf);
    recvbuf = calloc(n, sizeof *recvbuf);
    init_comms();
    for (int i = 0; i < n; i++) {
        CUDA(cudaSetDevice(i));
        CUDA(cudaMalloc((void **)&sendbuf[i], max));
        CUDA(cudaMalloc((void **)&recvbuf[i], max));
        CUDA(cudaMemset(sendbuf[i], 0, max));
        CUDA(cudaStreamCreate(&streams[i]));
    }
    printf("communicators: %s\n", nonblocking ? "non-blocking (ncclCommInitRankConfig, blocking = 0)" : "blocking (ncclCommInitAll)");
    printf("allreduce: %d devices, float32 sum, out of place, %d warm-up and %d timed calls a size; busbw = algbw * 2(n-1)/n\n", n, warmup, iters);
    printf("%12s  %10s  %9s  %9s  %9s\n", "size_B", "count", "time_us", "algbw_GBs", "busbw_GBs");
    for (size_t size = 1u << 20; size <= max; size *= 2) {
        double t = eager(size, warmup, iters);
        double algbw = size / t / 1e9;
        printf("%12zu  %10zu  %9.2f  %9.2f  %9.2f\n", size, size / 4, t * 1e6, algbw, algbw * 2 * (n - 1) / n);
    }
    printf("\nsmall all-reduces: eager against one CUDA graph of %d captured, a time a call\n", iters);
    printf("%8s  %8s  %8s  %11s\n", "size_B", "eager_us", "graph_us", "graph/eager");
    static const size_t small[] = {4u << 10, 64u << 10, 1u << 20};
    for (int s = 0; s < 3; s++) {
        if (small[s] > max) continue;
        double e = eager(small[s], warmup, iters), g = graphed(small[s], warmup, iters);
        printf("%8zu  %8.2f  %8.2f  %11.2f\n", small[s], e * 1e6, g * 1e6, g / e);
    }
    if (nonblocking) {
        /* A non-blocking communicator's finalize returns in progress. */
        for (int i = 0; i < n; i++) NCCLQ(ncclCommFinalize(comms[i]));
        wait_comms();
    }
    for (int i = 0; i < n; i++) {
        CUDA(cudaSetDevice(i));
        CUDA(cudaFree(sendbuf[i]));
        CUDA(cudaFree(recvbuf[i]));
        CUDA(cudaStreamDestroy(streams[i]));
        NCCLQ(ncclCommDestroy(comms[i]));
    }
    return 0;
}
