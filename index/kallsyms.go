package index

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// FixupEnd applies perf mainline's maps__fixup_end (v6.9+) to maps: sorted
// in address order (start, then end, stable), each map whose end is 0
// ("not known yet") or reaches past the next map's start ends at that
// start; a last map with end 0 ends at 2^64-1. It returns the sorted maps;
// some may be empty (two maps sharing a start) and callers decide whether
// to keep them.
func FixupEnd(maps []Map) []Map {
	out := slices.Clone(maps)
	slices.SortStableFunc(out, func(a, b Map) int {
		if c := cmp.Compare(a.Start, b.Start); c != 0 {
			return c
		}
		return cmp.Compare(a.End, b.End)
	})
	for i := 1; i < len(out); i++ {
		if prev := &out[i-1]; prev.End == 0 || prev.End > out[i].Start {
			prev.End = out[i].Start
		}
	}
	if n := len(out); n > 0 && out[n-1].End == 0 {
		out[n-1].End = math.MaxUint64
	}
	return out
}

// KernelMaps builds the kernel maps perf builds without kcore
// (machine__create_kernel_maps, mainline): the kernel map
// [_text, _edata) with identity mapping (end _etext when _edata is
// missing; when both are missing, the start of the next map), one map per
// module [start, start+size) named "[name]", then FixupEnd, which clips
// modules that overlap (kernels >= 6.4 report the total size of all of a
// module's allocations). Maps left empty by the clipping are dropped.
func KernelMaps(lm Landmarks, modules []Module) (*Maps, error) {
	start, ok := lm.KernelStart()
	if !ok {
		return nil, fmt.Errorf("kernel maps: kallsyms has neither _text nor _stext")
	}
	kernel := Map{Start: start, Mapping: MappingIdentity, Kind: KindKernel, DSO: KernelDSO}
	switch {
	case lm.Edata.OK:
		kernel.End = lm.Edata.Addr
	case lm.Etext.OK:
		kernel.End = lm.Etext.Addr
	}
	if kernel.End != 0 && kernel.End < kernel.Start {
		return nil, fmt.Errorf("kernel maps: kernel end %#x before _text %#x", kernel.End, kernel.Start)
	}
	maps := []Map{kernel}
	for _, mod := range modules {
		if mod.Start == 0 {
			return nil, fmt.Errorf("kernel maps: module %s has address 0 (addresses restricted by kptr_restrict?)", mod.Where())
		}
		if mod.Start > math.MaxUint64-mod.Size {
			return nil, fmt.Errorf("kernel maps: module %s [%#x, +%#x) wraps past 2^64", mod.Where(), mod.Start, mod.Size)
		}
		maps = append(maps, Map{Start: mod.Start, End: mod.Start + mod.Size, Mapping: MappingDSO, Kind: KindModule, DSO: "[" + mod.Name + "]"})
	}
	ms := New()
	for _, m := range FixupEnd(maps) {
		if m.Start == m.End {
			continue
		}
		if err := ms.Insert(m); err != nil {
			return nil, fmt.Errorf("kernel maps: %w", err)
		}
	}
	return ms, nil
}
