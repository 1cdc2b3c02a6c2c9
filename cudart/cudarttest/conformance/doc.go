// Package conformance is the suite every cudart.Runtime must pass, in the
// manner of testing/fstest: TestRuntime runs it on the fake of package
// cudarttest in CI and on real CUDA on a GPU host.
//
// It asserts only what real CUDA does, so that the fake is held to CUDA and
// not to a guess: every behaviour the fake models, its strictness included
// (stream order, granularity, limits, flags), is asserted here and holds on
// a GPU. Where CUDA leaves a behaviour undefined the suite does not test it;
// the fake refuses it, and cudarttest's own tests say so.
//
// The package imports testing, but not testify: a user's module that imports
// it gains no testify and no YAML parser. cudarttest imports neither, so a
// program that links the fake links neither.
package conformance
