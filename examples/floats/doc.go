// Package floats is float32 values as the GPU reads and writes them:
// little-endian, four bytes each, for the examples that stage inputs and
// weights in host memory and read outputs back.
//
// It is not part of cudapool's API. It lives under examples/, not
// internal/, only so that an example copied into another module still
// builds; it changes whenever the examples need it to, with no notice.
package floats
