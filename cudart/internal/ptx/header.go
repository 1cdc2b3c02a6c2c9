package ptx

import (
	"strconv"
	"strings"
)

// ptxTargets are the architectures a .target may name (sm_NN, with an a or
// f suffix for the feature sets of the newer ones), as the JIT of CUDA 13
// knows them; it refuses others ("Unsupported .target").
var ptxTargets = map[string]bool{
	"20": true, "21": true, "30": true, "32": true, "35": true, "37": true, "50": true, "52": true, "53": true,
	"60": true, "61": true, "62": true, "70": true, "72": true, "73": true, "75": true, "80": true, "86": true,
	"87": true, "88": true, "89": true, "90": true, "100": true, "101": true, "103": true, "110": true,
	"120": true, "121": true,
}

// ptxTargetOptions are the other words a .target list may hold.
var ptxTargetOptions = map[string]bool{"texmode_unified": true, "texmode_independent": true, "map_f64_to_f32": true, "debug": true}

// header is what Parse reads of the directives PTX begins with.
type header struct {
	version string // major.minor, as written
	target  string // the architecture, as written
	// paramSpace is the most bytes an entry's parameters may take.
	paramSpace uint64
}

// ptxHeader checks the .version, .target and optional .address_size
// directives PTX begins with, and returns them and the index of the token
// after them.
func ptxHeader(toks ptxToks) (header, int, error) {
	var h header
	if toks.len() == 0 {
		return h, 0, ptxErrorf(1, NotPTX, "no PTX: the text is empty")
	}
	if toks.at(0).s != ".version" {
		return h, 0, ptxErrorf(toks.at(0).line, NotPTX, "no PTX: it starts with %q, not .version", toks.at(0).s)
	}
	if toks.len() < 2 || toks.at(1).line != toks.at(0).line || !ptxVersion(toks.at(1).s) {
		return h, 0, ptxErrorf(toks.at(0).line, InvalidPTX, ".version wants major.minor, e.g. .version 8.0")
	}
	h.version = toks.at(1).s
	i := 2
	if i >= toks.len() || toks.at(i).s != ".target" {
		return h, 0, ptxErrorf(toks.at(1).line+1, InvalidPTX, "missing .target after .version")
	}
	line := toks.at(i).line
	i++
	debugInfo := -1 // whether toks have debug information, once asked
	for first := true; ; first = false {
		if i >= toks.len() || toks.at(i).line != line {
			return h, 0, ptxErrorf(line, InvalidPTX, ".target names no architecture")
		}
		name := toks.at(i).s
		arch, isSM := strings.CutPrefix(name, "sm_")
		arch = strings.TrimRight(arch, "af")
		if name == "debug" && debugInfo < 0 {
			debugInfo = 0
			if ptxHasDebugInfo(toks) {
				debugInfo = 1
			}
		}
		switch {
		case isSM && ptxTargets[arch]:
			if first {
				h.target = name
			}
		case !first && name == "debug" && debugInfo == 0:
			return h, 0, ptxErrorf(line, InvalidPTX, ".target debug without debug information (.section .debug_*)")
		case !first && ptxTargetOptions[name]:
		default:
			return h, 0, ptxErrorf(line, InvalidPTX, "unsupported .target %q", name)
		}
		i++
		if i >= toks.len() || toks.at(i).s != "," || toks.at(i).line != line {
			break
		}
		i++
	}
	if i < toks.len() && toks.at(i).s == ".address_size" {
		if i+1 >= toks.len() || toks.at(i+1).line != toks.at(i).line || (toks.at(i+1).s != "32" && toks.at(i+1).s != "64") {
			return h, 0, ptxErrorf(toks.at(i).line, InvalidPTX, ".address_size wants 32 or 64")
		}
		i += 2
	}
	h.paramSpace = ParamSpace(h.version, h.target)
	return h, i, nil
}

// ParamSpace is the most bytes the parameters of one .entry may take, with
// the padding their alignment puts between them, for PTX of version (as
// .version writes it, e.g. "8.0") and architecture target ("sm_80"): 32,764
// B from PTX ISA 8.1 on sm_70 and later, as CUDA 12.1 raised it, and 4,352
// B (0x1100) otherwise. The JIT refuses more with CUDA_ERROR_INVALID_PTX,
// "too much parameter space": 4,360 B, 32,764 B and 32,768 B at .version
// 8.0 on an H200 with CUDA 13.0.
func ParamSpace(version, target string) uint64 {
	major, minor, _ := strings.Cut(version, ".")
	ma, _ := strconv.Atoi(major)
	mi, _ := strconv.Atoi(minor)
	sm, _ := strconv.Atoi(strings.TrimRight(strings.TrimPrefix(target, "sm_"), "af"))
	if (ma > 8 || ma == 8 && mi >= 1) && sm >= 70 {
		return 32764
	}
	return 4352
}

// ptxHasDebugInfo reports whether toks have a debug section.
func ptxHasDebugInfo(toks ptxToks) bool {
	for i := 0; i+1 < toks.len(); i++ {
		if toks.at(i).s == ".section" && strings.HasPrefix(toks.at(i+1).s, ".debug") {
			return true
		}
	}
	return false
}

// ptxVersion reports whether v is major.minor.
func ptxVersion(v string) bool {
	major, minor, ok := strings.Cut(v, ".")
	return ok && ptxDigits(major) && ptxDigits(minor)
}

func ptxDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}
