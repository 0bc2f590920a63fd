package attrib

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/symbols"
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

// sumBySym, which sums on two cores, gives the sums of the counts each
// visits one by one: maps sharing tables (as processes share a
// library's), counts with and without a symbol, of several events, and
// samples in no map, some hidden. Its halves split the maps where their
// counts reach half, so that maps with few or many counts land on either
// side.
func TestSumBySymMatchesEach(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for iter := range 200 {
		var tables []*symbols.Table
		for range 1 + rng.IntN(4) {
			var syms []symbols.Symbol
			for i := range 1 + rng.IntN(300) {
				syms = append(syms, symbols.Symbol{Start: uint64(0x1000 + 0x10*i), End: uint64(0x1000 + 0x10*i + 0x10), Name: fmt.Sprintf("f%d", rng.IntN(50))})
			}
			tables = append(tables, symbols.Build(syms))
		}
		c := newCounter()
		for range rng.IntN(40) {
			dso := fmt.Sprintf("/lib/d%d.so", rng.IntN(5))
			start := uint64(rng.IntN(1<<20)) << 12
			st := c.state(index.Map{Start: start, End: start + 0x10000, DSO: dso}, rng.IntN(4) == 0)
			tb := tables[rng.IntN(len(tables))]
			for range rng.IntN(300) {
				i := rng.IntN(tb.Len()+20) - 20 // some without a symbol
				addr := uint64(rng.IntN(0x4000))
				st.add(tb, max(i, -1), addr, rng.IntN(3), Counts{1, uint64(rng.IntN(100))})
			}
		}
		for range rng.IntN(30) {
			c.addUnknown(Key{DSO: symbols.Unknown, Sym: symbols.Unknown, Kernel: rng.IntN(2) == 0, Addr: uint64(rng.IntN(50)), Event: rng.IntN(2)}, rng.IntN(5) == 0, Counts{1, 7})
		}
		want := symSums{bySym: map[Key]Counts{}}
		wantRes := &Result{ByMap: map[index.Map]*roaring.Bitmap{}}
		c.each(wantRes, want.add)
		res := &Result{ByMap: map[index.Map]*roaring.Bitmap{}}
		bySym, byEvent := c.sumBySym(res, c.size())
		if !maps.Equal(bySym, want.bySym) || !slices.Equal(byEvent, want.byEvent) {
			t.Fatalf("iter %d: sumBySym = %v, %v; summed one by one: %v, %v", iter, bySym, byEvent, want.bySym, want.byEvent)
		}
		if !maps.Equal(res.hidden, wantRes.hidden) {
			t.Fatalf("iter %d: hidden rows %v, want %v", iter, res.hidden, wantRes.hidden)
		}
	}
}
