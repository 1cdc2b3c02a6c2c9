// Package loadgen is the load generator the serving examples (serve, mlp, tp)
// share: a bounded number of requests from a fixed number of concurrent
// clients, each sending its next request once the last is answered, and the
// throughput and latency percentiles that come of it, with the formatting
// their tables use.
//
// It is not part of cudapool's API. It lives under examples/, not
// internal/, only so that an example copied into another module still
// builds; it changes whenever the examples need it to, with no notice.
// What an example is meant to show (its use of slots, cuBLAS handles,
// streams) stays in the example; this package holds what is measured
// around it.
//
// # Caveats
//
// Run calls do from several goroutines at once, one a client: do must be
// safe for that, and may keep state per client by its first argument.
package loadgen
