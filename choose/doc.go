// Package choose opens the runtime a program runs on: real CUDA, or the fake
// of cudarttest where a program is told to use it or where CUDA has no
// usable device. It is what a program's main calls with its -runtime flag,
// as the README's program and every example do; tests call cudarttest.Open,
// which reads $CUDAPOOL_RUNTIME the same way.
//
//	rt, err := choose.Open("") // $CUDAPOOL_RUNTIME: cuda, fake or auto (the default)
//	defer rt.Close()
//	log.Print("runtime: ", rt.Description)
//	p, err := pool.New(rt, pool.WithDeviceBytes(64<<20))
//
// What Open returns wraps the runtime chosen and says so (Unwrap), so that
// the bindings take it as that runtime: cublas.Open gives the fake's cuBLAS
// for the fake and loads libcublas only for CUDA.
//
// # Caveats
//
// Close unloads CUDA and frees nothing: free or close what was made on the
// runtime first. A fake chosen here is NewFake's, not NewFakeT's: it checks
// the memory annotations only with cudarttest.WithMemcheck, and reports a
// leak only when asked (Fake.CheckLeaks, through cudart.As).
package choose
