package attrib

import (
	"cmp"
	"slices"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/symbols"
)

func sortMaps(maps []index.Map) {
	slices.SortFunc(maps, func(a, b index.Map) int {
		if c := cmp.Compare(a.Start, b.Start); c != 0 {
			return c
		}
		if c := cmp.Compare(a.End, b.End); c != 0 {
			return c
		}
		if c := cmp.Compare(a.DSO, b.DSO); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Pgoff, b.Pgoff); c != 0 {
			return c
		}
		return cmp.Compare(a.Kind, b.Kind)
	})
}

// sortedKeys returns the keys by period, then samples (both
// descending), then dso, symbol, address and mode.
func sortedKeys(m map[Key]Counts) []Key {
	keys := make([]Key, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b Key) int {
		if c := cmp.Compare(m[b].Period, m[a].Period); c != 0 {
			return c
		}
		if c := cmp.Compare(m[b].Samples, m[a].Samples); c != 0 {
			return c
		}
		if c := cmp.Compare(a.DSO, b.DSO); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Sym, b.Sym); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Addr, b.Addr); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Event, b.Event); c != 0 {
			return c
		}
		if a.Kernel == b.Kernel {
			return 0
		}
		if a.Kernel {
			return 1
		}
		return -1
	})
	return keys
}

// tableOrder sorts keys as perf report orders the rows of --sort dso,sym
// (hists__output_resort with perf 6.1's sort functions): by period,
// descending; then by the DSO's short name, ascending (sort__dso_cmp),
// rows without a map last; then by symbol name, ascending, rows without
// a symbol last (sort__sym_sort); then by sample count, descending; rows
// still equal (unresolved addresses of one DSO, or of none) by address as
// a signed number, the order of perf's collapsed tree (_sort__addr_cmp),
// so kernel addresses come first.
func tableOrder(keys []Key, m map[Key]Counts) {
	type dsoMode struct {
		dso    string
		kernel bool
	}
	short := make(map[dsoMode]string)
	for _, k := range keys {
		if _, ok := short[dsoMode{k.DSO, k.Kernel}]; !ok {
			short[dsoMode{k.DSO, k.Kernel}] = ShortName(k.DSO, k.Kernel)
		}
	}
	slices.SortStableFunc(keys, func(a, b Key) int {
		if c := cmp.Compare(m[b].Period, m[a].Period); c != 0 {
			return c
		}
		if c := unknownLast(a.DSO, b.DSO); c != 0 {
			return c
		}
		if c := cmp.Compare(short[dsoMode{a.DSO, a.Kernel}], short[dsoMode{b.DSO, b.Kernel}]); c != 0 {
			return c
		}
		if c := unknownLast(a.Sym, b.Sym); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Sym, b.Sym); c != 0 {
			return c
		}
		// The output fields follow the sort keys (perf_hpp__append_sort_keys):
		// -n's sample count, descending.
		if c := cmp.Compare(m[b].Samples, m[a].Samples); c != 0 {
			return c
		}
		return cmp.Compare(int64(a.Addr), int64(b.Addr))
	})
}

// unknownLast orders a name after another when only it is
// symbols.Unknown (0 when both or neither are).
func unknownLast(a, b string) int {
	an, bn := a == symbols.Unknown, b == symbols.Unknown
	switch {
	case an && !bn:
		return 1
	case bn && !an:
		return -1
	}
	return 0
}
