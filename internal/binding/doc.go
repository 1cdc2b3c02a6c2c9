// Package binding holds the steps the library bindings (cublas, nccl) take
// the same way when they open: choosing the fake's implementation or the
// library to load for a runtime, and reading the loader's failure into the
// binding's LoadError. Each binding keeps its own exported types, sentinels
// and messages; this package only takes the steps, given them. It is not part
// of a user's API.
package binding
