package attrib

import (
	"cmp"
	"slices"

	"github.com/kmapindex/kmapindex/index"
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
