// Package mlpmodel is the multi-layer perceptron the MLP examples (mlp, tp)
// share: its parameters drawn from a seed, its inputs, its computation on
// the CPU (the reference every output is checked against, and the
// tolerance), the requests of a batch size and the check of each
// output (Workload, Request), the bias-and-ReLU kernel in PTX with its Go
// twin for the fake runtime, and the -dump format (manifest.json and its files), so that
// the same seed gives the same model, the same outputs and the same dump
// in both.
//
// It is not part of cudapool's API. It lives under examples/, not
// internal/, only so that an example copied into another module still
// builds; it changes whenever the examples need it to, with no notice. How
// an example runs the model on a GPU (slots, cuBLAS handles, NCCL) stays in
// the example.
package mlpmodel
