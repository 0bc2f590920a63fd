package attrib

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// symCounts counts as a map from symbol index would, before and after it
// switches from its short list to a map (a large table) and to a slot
// per symbol, and each goes through the symbols in the order first
// counted.
func TestSymCountsMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 300 {
		n := 1 + rng.IntN(200)
		distinct := 1 + rng.IntN(2*fewSymbols+4)
		adds := rng.IntN(500)
		if iter%3 == 0 { // a large table, past its map too
			n = slotTable + 1 + rng.IntN(2*slotTable)
			distinct = 1 + rng.IntN(2*manySymbols)
			adds = rng.IntN(4 * manySymbols)
		}
		s := &symCounts{n: n}
		want := map[int]Counts{}
		var wantOrder []int
		for range adds {
			i := rng.IntN(min(n, distinct))
			c := Counts{Samples: 1, Period: uint64(rng.IntN(1000))}
			cell := s.add(i, c)
			w, seen := want[i]
			if !seen {
				wantOrder = append(wantOrder, i)
			}
			w.add(c)
			want[i] = w
			if *cell != w {
				t.Fatalf("iter %d: symbol %d counted in a cell of %+v, want %+v", iter, i, *cell, w)
			}
		}
		got := map[int]Counts{}
		var order []int
		s.each(func(i int, c Counts) {
			if _, dup := got[i]; dup {
				t.Fatalf("iter %d: symbol %d counted twice", iter, i)
			}
			got[i] = c
			order = append(order, i)
		})
		if !slices.Equal(order, wantOrder) {
			t.Fatalf("iter %d: symbols in the order %v, want %v", iter, order, wantOrder)
		}
		if len(got) != len(want) {
			t.Fatalf("iter %d: %d symbols counted, want %d", iter, len(got), len(want))
		}
		for i, w := range want {
			if got[i] != w {
				t.Fatalf("iter %d: symbol %d = %+v, want %+v", iter, i, got[i], w)
			}
		}
		limit := fewSymbols
		if n > slotTable {
			limit = manySymbols
		}
		if (s.slot != nil) != (len(want) > limit) || (s.some != nil) != (n > slotTable && len(want) > fewSymbols && len(want) <= manySymbols) {
			t.Fatalf("iter %d: %d of %d symbols, slots %v, map %v", iter, len(want), n, s.slot != nil, s.some != nil)
		}
	}
}

// countCells' cells keep their addresses as the list grows, and at finds
// each: the sample cache counts in cells it kept.
func TestCountCells(t *testing.T) {
	var cs countCells
	var kept []*Counts
	for j := range 5000 {
		kept = append(kept, cs.append(Counts{Samples: uint64(j)}))
		for _, k := range []int{0, j / 2, j} {
			if cs.at(k) != kept[k] || kept[k].Samples != uint64(k) {
				t.Fatalf("after %d appends: cell %d moved or changed (%+v)", j+1, k, *kept[k])
			}
		}
	}
	if cs.n != 5000 {
		t.Fatalf("%d cells, want 5000", cs.n)
	}
}
