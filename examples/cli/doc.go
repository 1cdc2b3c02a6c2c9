// Package cli is the command line every example program shares: -h prints
// what the program does, then its flags, and exits 0; a flag it does not
// know, or a bad value, exits 2; a failed run prints the program's name and
// the error and exits 1. Main runs a program so; Runtime is the -runtime
// flag every example takes, Fake a flag's smaller value on the fake
// runtime, Run the program's work once the runtime is open, Positives and
// Launches the parsers of the flags several examples share. Package
// clitest checks these promises in each example's tests.
//
// It is not part of cudapool's API. It lives under examples/, not
// internal/, only so that an example copied into another module still
// builds; it changes whenever the examples need it to, with no notice. The
// examples keep inline what they are meant to show, such as choosing the
// runtime with choose.Open.
package cli
