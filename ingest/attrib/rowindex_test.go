package attrib

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"testing"
)

// A rowIndex finds what a Go map keyed by RowKey finds, for random keys
// looked up and added in random order, with its hash and with hashes
// that collide (every key one hash, or one of four).
func TestRowIndexIsAMap(t *testing.T) {
	for _, tc := range []struct {
		name string
		hash func(maphash.Seed, RowKey) uint64
	}{
		{"maphash", nil},
		{"one hash", func(maphash.Seed, RowKey) uint64 { return 7 }},
		{"four hashes", func(_ maphash.Seed, k RowKey) uint64 { return k.Addr % 4 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 6))
			x := newRowIndex()
			if tc.hash != nil {
				x.hash = tc.hash
			}
			want := make(map[RowKey]*row)
			for range 20000 {
				k := RowKey{DSO: fmt.Sprintf("/lib/%d.so", rng.IntN(3)), Sym: fmt.Sprintf("s%d", rng.IntN(50)), Addr: uint64(rng.IntN(50)), Tid: int32(rng.IntN(4))}
				got, h := x.get(&k)
				if got != want[k] {
					t.Fatalf("get(%+v) = %p, want %p", k, got, want[k])
				}
				if got == nil {
					r := &row{key: k}
					x.add(r, h)
					want[k] = r
				}
			}
			if x.len() != len(want) {
				t.Errorf("%d rows, want %d", x.len(), len(want))
			}
		})
	}
}
