package kallsyms

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/kmapindex/kmapindex/index"
)

// BPFLenCap is the longest map BPFMaps derives for one BPF symbol.
const BPFLenCap = 4096

// BPFMaps derives the maps perf would make from PERF_RECORD_KSYMBOL records
// for the BPF symbols in syms: lines tagged [bpf] whose name starts with
// "bpf_prog_" (KindBPFProg) or "bpf_trampoline_" / "bpf_dispatcher_"
// (KindBPFImage), each a map [Addr, Addr+len) with MappingDSO, Pgoff 0 and
// the symbol name as DSO (machine__process_ksymbol). Other [bpf] names are
// ignored.
//
// kallsyms carries no lengths, so len is an approximation: the distance to
// the next higher distinct address of any symbol in syms, capped at
// BPFLenCap bytes (and at 2^64-1). A KSYMBOL record carries the true
// length; prefer it when there is one. A BPF symbol at an address already
// taken by an earlier one (file order) is dropped, as perf attaches a
// second KSYMBOL inside an existing map to that map. The maps come back
// sorted by start.
func BPFMaps(syms []Symbol) []index.Map {
	var maps []index.Map
	for _, s := range syms {
		if s.Module != "bpf" {
			continue
		}
		kind := index.KindBPFProg
		switch {
		case strings.HasPrefix(s.Name, "bpf_prog_"):
		case strings.HasPrefix(s.Name, "bpf_trampoline_"), strings.HasPrefix(s.Name, "bpf_dispatcher_"):
			kind = index.KindBPFImage
		default:
			continue
		}
		maps = append(maps, index.Map{Start: s.Addr, Mapping: index.MappingDSO, Kind: kind, DSO: s.Name})
	}
	if len(maps) == 0 {
		return nil
	}
	addrs := make([]uint64, len(syms))
	for i, s := range syms {
		addrs[i] = s.Addr
	}
	slices.Sort(addrs)
	addrs = slices.Compact(addrs)
	// Stable: among equal starts the first in file order stays first.
	slices.SortStableFunc(maps, func(a, b index.Map) int { return cmp.Compare(a.Start, b.Start) })
	maps = slices.CompactFunc(maps, func(a, b index.Map) bool { return a.Start == b.Start })
	out := maps[:0]
	for _, m := range maps {
		length := uint64(BPFLenCap)
		if i, found := slices.BinarySearch(addrs, m.Start); found && i+1 < len(addrs) {
			length = min(length, addrs[i+1]-m.Start)
		}
		length = min(length, math.MaxUint64-m.Start)
		if length == 0 {
			continue
		}
		m.End = m.Start + length
		out = append(out, m)
	}
	return out
}
