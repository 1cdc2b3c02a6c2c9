// Package baseline holds the ways of serving that the serving examples
// (serve, mlp) measure pool.Slots against: one pool, one stream and one
// set of buffers, a request at a time behind a mutex, with a CUDA graph a
// batch size where asked (Mutex); or a stream and memory of its own for
// each client, taken once (Clients), its activations taken in each request
// from a memory pool that keeps what is freed (KeepFreed).
//
// It is not part of cudapool's API. It lives under examples/, not
// internal/, only so that an example copied into another module still
// builds; it changes whenever the examples need it to, with no notice.
// What a request runs, and what lives in the pool beside the buffers (a
// cuBLAS handle's workspace), stay in the example.
//
// # Caveats
//
// A Mutex's Serve may be called from several goroutines at once: run is
// called under the mutex, one request at a time. Clients' Serve may be
// too, each client from one goroutine at a time. Close, of either, must
// wait for every Serve to return.
package baseline
