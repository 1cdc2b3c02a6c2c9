package cudart

// As finds the first runtime, in rt and the runtimes it wraps, that is a T,
// as errors.As does for errors.
//
// A runtime that wraps another (to say which was chosen, to count its
// calls, to answer some itself) says so with a method
//
//	Unwrap() Runtime
//
// that returns the runtime it wraps, and As follows that chain. A binding
// that tells one runtime from another by its type, as cublas tells the fake
// from CUDA, asks As, never a bare type assertion: then a wrapper is taken
// for what it wraps, and a library loaded for CUDA never sees the fake's
// addresses.
//
// # Caveats
//
// A wrapper without Unwrap hides what it wraps: a binding takes such a
// wrapper around the fake for CUDA.
func As[T any](rt Runtime) (T, bool) {
	for rt != nil {
		if t, ok := rt.(T); ok {
			return t, true
		}
		w, ok := rt.(interface{ Unwrap() Runtime })
		if !ok {
			break
		}
		rt = w.Unwrap()
	}
	var zero T
	return zero, false
}
