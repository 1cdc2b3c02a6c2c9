package dl

import (
	"fmt"
	"strings"
)

// Symbol is a function a binding calls: its C name, and Alt, a name looked
// up first where the library exports it (a versioned entry point such as
// cudaMemPrefetchAsync_v2); "" for none. An Optional symbol is one a library
// the binding takes may lack (a call of a later version): Open loads without
// it, its address 0, and the binding says what it can without it.
type Symbol struct {
	Name, Alt string
	Optional  bool
}

// Mode says how Open maps a library.
type Mode uint8

const (
	// Resident keeps the library mapped until the process ends, Close
	// included (RTLD_NODELETE): for a library that runs threads of its own or
	// keeps state for the process.
	Resident Mode = 1 << iota
	// Lazy binds the library's own undefined symbols on first call
	// (RTLD_LAZY) rather than at Open (RTLD_NOW), as NVTX loads a tool.
	Lazy
)

// Library is a library that loaded and exports every symbol it was asked
// for.
type Library struct {
	// Path is the candidate that loaded, as it was named to Open.
	Path string
	// Fns are the addresses of the symbols given to Open, in their order.
	Fns []uintptr
	h   uintptr
}

// Failure is why Open loaded nothing. Each candidate tried is one entry of
// Tried, "path: the loader's message"; the first that loads but lacks
// symbols ends the search, with "path: lacks 2 of the 17 functions needed:
// a, b" and every symbol it lacks in Missing.
type Failure struct {
	Tried   []string
	Missing []string
}

// Error lists every candidate tried.
func (f *Failure) Error() string { return strings.Join(f.Tried, "; ") }

// Open loads the first of paths that loads, and looks up every one of syms
// in it. A path that does not load is recorded and the next is tried; the
// first that loads is the one used, so that a library lacking symbols is an
// error naming them (a *Failure with Missing), not a reason to load another
// copy. The error is always a *Failure.
func Open(paths []string, syms []Symbol, mode Mode) (*Library, error) {
	f := &Failure{}
	for _, p := range paths {
		h, err := dlopen(p, mode)
		if err != nil {
			f.Tried = append(f.Tried, p+": "+strings.TrimPrefix(err.Error(), p+": "))
			continue
		}
		l := &Library{Path: p, Fns: make([]uintptr, len(syms)), h: h}
		for i, s := range syms {
			if s.Alt != "" {
				l.Fns[i] = dlsym(h, s.Alt)
			}
			if l.Fns[i] == 0 {
				l.Fns[i] = dlsym(h, s.Name)
			}
			if l.Fns[i] == 0 && !s.Optional {
				f.Missing = append(f.Missing, s.Name)
			}
		}
		if len(f.Missing) > 0 {
			dlclose(h)
			f.Tried = append(f.Tried, fmt.Sprintf("%s: lacks %d of the %d functions needed: %s", p, len(f.Missing), len(syms), strings.Join(f.Missing, ", ")))
			return nil, f
		}
		return l, nil
	}
	return nil, f
}

// Sym is the address of name in l, a function outside its table (an entry
// point a tool may or may not export); 0 when l does not export it.
func (l *Library) Sym(name string) uintptr { return dlsym(l.h, name) }

// File is the file l was mapped from, as the system loader reports it for
// l's first symbol (a soname resolves to a file with a version), or Path
// when it cannot say.
func (l *Library) File() string {
	if len(l.Fns) == 0 {
		return l.Path
	}
	if f := dladdr(l.Fns[0]); f != "" {
		return f
	}
	return l.Path
}

// Close unloads l, unless it is Resident or loaded elsewhere too: nothing may
// call into it after.
func (l *Library) Close() { dlclose(l.h) }

// Candidates are the paths to try in order, without repeats or empty ones:
// the option's path, then the environment variable's value, then the
// defaults.
func Candidates(option, env string, defaults ...string) []string {
	out := make([]string, 0, len(defaults)+2)
	seen := make(map[string]bool, len(defaults)+2)
	for _, p := range append([]string{option, env}, defaults...) {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}
