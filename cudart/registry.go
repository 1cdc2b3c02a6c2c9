package cudart

import (
	"fmt"
	"sync"

	"github.com/cudapool/cudapool/cudart/internal/ptx"
)

// registry is what a Library remembers of the handles CUDA gave it, to refuse
// a call with a stale or unknown handle before CUDA sees it: using a
// destroyed stream or an unloaded module is undefined behaviour in CUDA,
// which may crash the process rather than return an error.
type registry struct {
	// mu guards the maps; the zero registry is empty and ready.
	mu        sync.RWMutex
	modules   map[Module]moduleInfo
	functions map[Function]functionInfo
	dead      map[Stream]struct{} // streams destroyed and not handed out again
	streams   map[Stream]int      // live streams from StreamCreate, by device
}

type moduleInfo struct {
	device int
	info   ptx.Info
}

type functionInfo struct {
	module Module
	entry  ptx.Entry
}

func (g *registry) addModule(m Module, device int, info ptx.Info) {
	g.mu.Lock()
	defer g.mu.Unlock()
	put(&g.modules, m, moduleInfo{device: device, info: info})
}

// module is the refusal of a call on device with module m, when m is not
// loaded there.
func (g *registry) module(m Module, device int) (moduleInfo, *refusal) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	mod, ok := g.modules[m]
	if !ok {
		return moduleInfo{}, &refusal{ErrInvalidResourceHandle, "not a module ModuleLoadData loaded, or unloaded already"}
	}
	if mod.device != device {
		return moduleInfo{}, &refusal{ErrInvalidResourceHandle, fmt.Sprintf("the module was loaded on device %d", mod.device)}
	}
	return mod, nil
}

// entry finds the .entry name of module m, loaded on device.
func (g *registry) entry(m Module, device int, name string) (ptx.Entry, *refusal) {
	mod, x := g.module(m, device)
	if x != nil {
		return ptx.Entry{}, x
	}
	e, ok := mod.info.Entry(name)
	if !ok {
		return ptx.Entry{}, &refusal{ErrNotFound, fmt.Sprintf("the module's PTX has no .entry %q; %s", name, entryNames(mod.info))}
	}
	return e, nil
}

func (g *registry) addFunction(fn Function, m Module, e ptx.Entry) {
	g.mu.Lock()
	defer g.mu.Unlock()
	put(&g.functions, fn, functionInfo{module: m, entry: e})
}

// removeModule forgets m and its functions.
func (g *registry) removeModule(m Module) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.modules, m)
	for fn, fi := range g.functions {
		if fi.module == m {
			delete(g.functions, fn)
		}
	}
}

// checkLaunch is the kernel's name and what is wrong with launching it so
// on device.
func (g *registry) checkLaunch(fn Function, device int, grid, block Dim3, args []KernelArg) (string, *refusal) {
	g.mu.RLock()
	fi, ok := g.functions[fn]
	mod := g.modules[fi.module]
	g.mu.RUnlock()
	if !ok {
		return fmt.Sprintf("function 0x%x", uintptr(fn)), &refusal{ErrInvalidResourceHandle, "not a function from ModuleGetFunction, or its module was unloaded"}
	}
	if mod.device != device {
		return fi.entry.Name, &refusal{ErrInvalidResourceHandle, fmt.Sprintf("kernel %s was loaded on device %d", fi.entry.Name, mod.device)}
	}
	if err := ptx.CheckLaunch(fi.entry, grid.xyz(), block.xyz(), args); err != nil {
		return fi.entry.Name, &refusal{ErrInvalidValue, err.Error()}
	}
	return fi.entry.Name, nil
}

// streamCreated notes that CUDA handed out s on device, which may reuse the
// handle of a destroyed stream.
func (g *registry) streamCreated(s Stream, device int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.dead, s)
	put(&g.streams, s, device)
}

func (g *registry) streamDestroyed(s Stream) {
	g.mu.Lock()
	defer g.mu.Unlock()
	put(&g.dead, s, struct{}{})
	delete(g.streams, s)
}

// streamDevice is the device StreamCreate made s on, if it made s.
func (g *registry) streamDevice(s Stream) (int, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	d, ok := g.streams[s]
	return d, ok
}

// destroyed reports whether s was destroyed through this Library.
func (g *registry) destroyed(s Stream) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	_, ok := g.dead[s]
	return ok
}

// staleStream is the refusal of a call on s when s was destroyed.
func (g *registry) staleStream(s Stream) *refusal {
	if !g.destroyed(s) {
		return nil
	}
	return &refusal{ErrInvalidResourceHandle, fmt.Sprintf("stream 0x%x was destroyed by StreamDestroy", uintptr(s))}
}

// put sets m[k] to v, making m first if it is nil: the registry's maps are
// made when first needed.
func put[K comparable, V any](m *map[K]V, k K, v V) {
	if *m == nil {
		*m = make(map[K]V)
	}
	(*m)[k] = v
}
