// Package clitest runs an example program from its tests, and checks what
// package cli promises of every one: -h prints what the program does, then
// its flags, and exits 0; -runtime=cuda where CUDA does not load exits 1
// and says why.
//
// It is not part of cudapool's API. It lives under examples/, not
// internal/, only so that an example copied into another module still
// builds; it changes whenever the examples need it to, with no notice.
package clitest
