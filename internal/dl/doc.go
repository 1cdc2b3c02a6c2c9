// Package dl loads the C libraries the bindings call (the CUDA runtime and
// driver, cuBLAS, NCCL, an NVTX tool) at run time and calls into them, with
// no cgo: dlopen of the first of a list of candidate paths, dlsym of a whole
// symbol table, and the call ABI (github.com/ebitengine/purego), with the
// marshalling of addresses, structs and C strings the bindings need. It is
// not part of a user's API.
//
// Its name is dlfcn's prefix, as in go-nvml's pkg/dl: what it holds is
// dynamic loading and calling what was loaded, nothing of CUDA.
//
// It is the only place in the module that imports unsafe or purego:
// abi.go (calls and memory, unsafe and purego) and dlfcn.go (the system
// loader, purego). A binding imports neither; the rule is a test at the
// root of the module.
//
// # A new binding
//
// A binding needs a candidate list, a symbol table and its calls, nothing
// more:
//
//	paths := dl.Candidates(optionPath, os.Getenv("CUDAPOOL_NCCL"), "libnccl.so.2")
//	lib, err := dl.Open(paths, []dl.Symbol{
//		{Name: "ncclGetVersion"},
//		{Name: "ncclCommInitRank"},
//		{Name: "ncclCommWindowRegister", Optional: true}, // NCCL 2.27+
//	}, dl.Resident)
//	if err != nil {
//		var f *dl.Failure // f.Tried: each path and why; f.Missing: the functions lacked
//		...               // wrap it in the binding's own LoadError
//	}
//	var version int32
//	r := dl.Call(lib.Fns[0], dl.Addr(&version)) // r: the C function's int result, as a word
//
// Keep the table one slice indexed by the binding's call constants, so that
// lib.Fns[c] is call c's function, and keep each call's arguments and
// out-parameters in a pooled heap frame, as cudart and cublas do, so that a
// call allocates nothing. Resident keeps a library mapped for the process
// (one that runs threads or keeps state, as the CUDA driver, cuBLAS and NCCL
// do); Lazy binds symbols on first call, as NVTX loads a tool. A call whose
// arguments are not all words (a struct larger than 16 bytes by value, as
// ncclCommInitRank's ncclUniqueId) goes through Bind:
//
//	var initRank func(comm *uintptr, nranks int32, id uniqueID, rank int32) int32
//	dl.Bind(&initRank, lib.Fns[1]) // uniqueID: struct{ internal [128]byte }
//
// # Adding a call
//
// Adding a call to a binding touches no file here, and three files of the
// binding at most:
//   - CUDA: its row in cudart/internal/calls/calls.go, the method of cudart
//     that makes it (lib_<capability>.go), and the fake's case in
//     cudart/cudarttest;
//   - cuBLAS: its row in internal/blas/calls.go, the method of cublas, and
//     the fake's cuBLAS case;
//   - NCCL: the same three in the NCCL binding: its table, its method, its
//     fake's case.
//
// # Caveats
//
// C reads Go memory only through the addresses given to it. Addr, SliceAddr
// and the like make their argument live on the heap, which Go never moves,
// but an address is an integer: nothing but a Go reference keeps the memory
// alive. Keep what C reads or writes reachable until the call returns (in a
// frame the call's caller still holds, a package variable, or with
// runtime.KeepAlive), and reachable for as long as C keeps the address.
//
// dlerror's message is per OS thread, so Open locks the thread from dlopen to
// reading it. Calls that depend on a thread's state (CUDA's current device)
// lock the OS thread themselves, around the state's setting and the call.
package dl
