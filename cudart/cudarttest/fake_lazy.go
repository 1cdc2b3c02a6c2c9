package cudarttest

// HostRegisterIsLazy reports true: the fake's HostRegister records the range
// and touches none of its pages, so package pinned skips the touch it does
// before real CUDA's cudaHostRegister (pinned.LazyRegisterer), and a large
// pinned arena costs only the pages the caller uses.
func (f *Fake) HostRegisterIsLazy() bool { return true }
