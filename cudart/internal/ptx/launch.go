package ptx

import "fmt"

// Arg is a kernel argument as a launch check sees it: the bytes CUDA copies
// for it and how an error shows it (cudart.KernelArg).
type Arg interface {
	Size() uint32
	fmt.Stringer
}

// CheckLaunch checks a launch of the kernel entry with grid and block, each
// its X, Y and Z, and args, as the binding does before CUDA sees it, and says
// what is wrong: a zero dimension, or arguments whose count or sizes differ
// from its parameters. The fake in cudarttest checks its launches with it too.
func CheckLaunch[A Arg](entry Entry, grid, block [3]uint32, args []A) error {
	for _, d := range [...]struct {
		what string
		dim  [3]uint32
	}{{"grid", grid}, {"block", block}} {
		if d.dim[0] == 0 || d.dim[1] == 0 || d.dim[2] == 0 {
			// Shaped as cudart.Dim3 prints, dim3 as CUDA tools print it.
			return fmt.Errorf("%s (%d,%d,%d) of %s: every dimension must be at least 1", d.what, d.dim[0], d.dim[1], d.dim[2], entry.Name)
		}
	}
	if len(args) != len(entry.Params) {
		return fmt.Errorf("kernel %s takes %d arguments (of %v bytes), got %d", entry.Name, len(entry.Params), entry.Params, len(args))
	}
	for i, a := range args {
		if a.Size() != entry.Params[i] {
			return fmt.Errorf("argument %d of %d of kernel %s is %s, %d B; the parameter is %d B", i+1, len(args), entry.Name, a, a.Size(), entry.Params[i])
		}
	}
	return nil
}
