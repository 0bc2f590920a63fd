package attrib

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// sortKeys equals a stable sort by time, whatever the runs.
func TestSortKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var tmp []orderKey
	for range 2000 {
		n := rng.IntN(200)
		keys := make([]orderKey, n)
		base := uint64(0)
		for i := range keys {
			if rng.IntN(10) == 0 {
				base = rng.Uint64N(50) // start another run
			}
			base += rng.Uint64N(3)
			keys[i] = orderKey{base, int32(i)}
		}
		want := slices.Clone(keys)
		slices.SortStableFunc(want, func(a, b orderKey) int {
			switch {
			case a.time < b.time:
				return -1
			case a.time > b.time:
				return 1
			}
			return 0
		})
		var got []orderKey
		got, tmp = sortKeys(slices.Clone(keys), tmp)
		if !slices.Equal(got, want) {
			t.Fatalf("sortKeys(%v) = %v, want %v", keys, got, want)
		}
	}
}
