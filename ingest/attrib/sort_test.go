package attrib

import (
	"fmt"
	"iter"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/symbols"
)

// readingOrderRows is how groupRows and tableOrder used to make a
// table, kept as the oracle: keys read in sortedKeys' order, rows in the
// order they were first made, then a stable sort by perf's keys alone.
func readingOrderRows(m, acc map[Key]Counts, first, n int) []tableRow {
	// perf's dso key compares short names: DSOs of one short name (and
	// level) are one, here the least of them.
	least := map[[2]string]string{}
	for _, keys := range []map[Key]Counts{m, acc} {
		for k := range keys {
			s := [2]string{ShortName(k.DSO, k.Kernel), fmt.Sprint(k.Kernel)}
			if l, ok := least[s]; !ok || k.DSO < l {
				least[s] = k.DSO
			}
		}
	}
	byKey := make(map[Key]int)
	var rows []tableRow
	row := func(k Key) *tableRow {
		k.Event = first
		if acc != nil && k.DSO == symbols.Unknown {
			k.Kernel = false
		}
		if l, ok := least[[2]string{ShortName(k.DSO, k.Kernel), fmt.Sprint(k.Kernel)}]; ok {
			k.DSO = l
		}
		i, ok := byKey[k]
		if !ok {
			i = len(rows)
			byKey[k] = i
			rows = append(rows, tableRow{key: k, c: make([]Counts, n)})
			if acc != nil {
				rows[i].acc = make([]Counts, n)
			}
		}
		return &rows[i]
	}
	for _, k := range sortedKeys(m) {
		if k.Event >= first && k.Event < first+n {
			row(k).c[k.Event-first].add(m[k])
		}
	}
	for _, k := range sortedKeys(acc) {
		if k.Event >= first && k.Event < first+n {
			r := row(k)
			r.acc[k.Event-first].add(acc[k])
			// The leader's level, else the first member's (perf's dummy
			// leader entry copies it); of one event's keys, the last read.
			if by := uint16(k.Event-first) + 1; r.levelBy == 0 || by <= r.levelBy {
				r.key.Kernel, r.levelBy = k.Kernel, by
			}
		}
	}
	for i := range rows {
		rows[i].short = ShortName(rows[i].key.DSO, rows[i].key.Kernel)
	}
	slices.SortStableFunc(rows, func(x, y tableRow) int { return comparePerfRows(&x, &y) })
	return rows
}

// randomCounts returns keys from a small space, so that they tie and
// merge often: DSOs with equal short names, unknown DSOs and symbols,
// both levels, a few events and counts. An unknown-DSO key appears in
// acc once per (symbol, address, event), with one level, as
// Result.Children keys it; a children table's keys may have a second row
// (Key.dup).
func randomCounts(rng *rand.Rand, n int, children bool) (m, acc map[Key]Counts) {
	dsos := []string{"/usr/lib/libc.so.6", "/opt/libc.so.6", "[kernel.kallsyms]", symbols.Unknown, "/bin/app"}
	// Names that tie in their first 8 bytes, and are shorter: the sort
	// compares those bytes first (prefix8).
	syms := []string{"main", "f", "g", "function_a", "function_b", "function", "functio", symbols.Unknown}
	key := func() Key {
		k := Key{
			DSO: dsos[rng.IntN(len(dsos))], Sym: syms[rng.IntN(len(syms))],
			Kernel: rng.IntN(2) == 0, Addr: uint64(rng.IntN(4)) << 62 >> rng.IntN(3),
			Event: rng.IntN(n + 1),
		}
		if children && rng.IntN(4) == 0 {
			k.dup = 1 // a second row of the key (accumulator.replay)
		}
		return k
	}
	counts := func() Counts {
		s := uint64(1 + rng.IntN(3))
		return Counts{Samples: s, Period: s * uint64(rng.IntN(3))} // period 0 too, as perf allows
	}
	m = make(map[Key]Counts)
	for range rng.IntN(60) {
		m[key()] = counts()
	}
	if !children {
		return m, nil
	}
	acc = make(map[Key]Counts)
	for k := range m { // every self entry is also a children entry
		if rng.IntN(4) > 0 {
			acc[k] = counts()
		}
	}
	for range rng.IntN(40) {
		acc[key()] = counts()
	}
	// One level per unresolved-map entry.
	for k := range acc {
		if k.DSO == symbols.Unknown && k.Kernel {
			u := k
			u.Kernel = false
			delete(acc, u)
		}
	}
	return m, acc
}

func TestGroupRowsReadingOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		n := 1 + rng.IntN(3)
		first := rng.IntN(2)
		m, acc := randomCounts(rng, first+n, i%2 == 1)
		want := readingOrderRows(m, acc, first, n)
		got := tableOrder(groupRows(m, keyCountsOf(acc), nil, nil, first, n))
		if len(got) != len(want) {
			t.Fatalf("case %d: %d rows, want %d", i, len(got), len(want))
		}
		for j := range got {
			g, w := *got[j], want[j]
			if g.key != w.key || !slices.Equal(g.c, w.c) || !slices.Equal(g.acc, w.acc) {
				t.Fatalf("case %d (first %d, n %d): row %d is %s, want %s", i, first, n, j, showRow(g), showRow(w))
			}
		}
	}
}

// A children table whose self keys are not all acc's has more rows than
// either map has keys: groupRows grows past its first guess.
func TestGroupRowsMoreRowsThanKeys(t *testing.T) {
	m, acc := map[Key]Counts{}, map[Key]Counts{}
	for i := range 3000 {
		k := Key{DSO: "/bin/app", Sym: fmt.Sprint("f", i), Addr: uint64(i)}
		if i%3 == 0 {
			acc[k] = Counts{2, 2}
		} else {
			m[k] = Counts{1, 1}
		}
	}
	want := readingOrderRows(m, acc, 0, 1)
	got := tableOrder(groupRows(m, keyCountsOf(acc), nil, nil, 0, 1))
	if len(got) != len(want) || len(got) != 3000 {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for j := range got {
		g, w := *got[j], want[j]
		if g.key != w.key || !slices.Equal(g.c, w.c) || !slices.Equal(g.acc, w.acc) {
			t.Fatalf("row %d is %s, want %s", j, showRow(g), showRow(w))
		}
	}
}

func showRow(r tableRow) string {
	return fmt.Sprintf("{%+v c %v acc %v}", r.key, r.c, r.acc)
}

// TestSymbolNameAddress checks the unresolved symbol's name against C's
// "%#.16llx", which perf prints it with, over random addresses.
func TestSymbolNameAddress(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 10000 {
		addr := rng.Uint64() >> rng.IntN(64)
		want := fmt.Sprintf("%#.16x", addr)
		if addr == 0 {
			want = "0000000000000000"
		}
		if got := (Key{Sym: symbols.Unknown, Addr: addr}).SymbolName(); got != want {
			t.Fatalf("case %d: %#x is named %q, want %q", i, addr, got, want)
		}
	}
}

// sortRows sorts a large table's halves on two goroutines and merges
// them: its order is the one sort's, on rows that tie in every leading
// key but the last (compareKeyCounts of their first keys).
func TestSortRowsHalves(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	rng := rand.New(rand.NewPCG(3, 4))
	syms := []string{"main", "function_a", "function_b", "functio", symbols.Unknown}
	for _, n := range []int{parallelRowsMin - 1, parallelRowsMin, parallelRowsMin + 1, 3*parallelRowsMin + 5} {
		rows := make([]tableRow, n)
		for i := range rows {
			k := Key{DSO: "/bin/app", Sym: syms[rng.IntN(len(syms))], Addr: uint64(i)}
			c := Counts{Samples: uint64(1 + rng.IntN(3)), Period: uint64(rng.IntN(3))}
			rows[i] = tableRow{key: k, short: "app", c: []Counts{c}, acc: []Counts{{Samples: 1, Period: uint64(rng.IntN(2))}}, first: &keyCounts{k, c}}
		}
		keyed := func() []orderedRow {
			keyed := make([]orderedRow, n)
			for i := range rows {
				r := &rows[i]
				keyed[i] = orderedRow{acc: r.acc[0].Period, self: r.c[0].Period, symUnknown: r.key.Sym == symbols.Unknown, sym: prefix8(r.key.Sym), r: r}
			}
			return keyed
		}
		want := keyed()
		slices.SortFunc(want, compareOrderedRows)
		got := sortRows(keyed())
		for i := range want {
			if got[i] != want[i].r {
				t.Fatalf("%d rows: row %d is %s, want %s", n, i, showRow(*got[i]), showRow(*want[i].r))
			}
		}
	}
}

// The merge of two sorted halves split at any k (splitMerge) and merged
// on both sides of it is the merge in one piece, for halves of any
// lengths, with rows that tie up to their first keys.
func TestSplitMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	row := func(i int) orderedRow {
		k := Key{DSO: "/bin/app", Sym: symbols.Unknown, Addr: uint64(i)}
		c := Counts{Samples: uint64(1 + rng.IntN(2)), Period: uint64(rng.IntN(2))}
		r := &tableRow{key: k, short: "app", c: []Counts{c}, first: &keyCounts{k, c}}
		return orderedRow{self: c.Period, samples: c.Samples, symUnknown: true, addr: int64(rng.IntN(3)), r: r}
	}
	for range 200 {
		nx, ny := rng.IntN(12), rng.IntN(12)
		x, y := make([]orderedRow, nx), make([]orderedRow, ny)
		for i := range x {
			x[i] = row(i)
		}
		for i := range y {
			y[i] = row(nx + i)
		}
		slices.SortFunc(x, compareOrderedRows)
		slices.SortFunc(y, compareOrderedRows)
		want := make([]*tableRow, nx+ny)
		rowOf := func(k orderedRow) *tableRow { return k.r }
		mergeSorted(want, x, y, compareOrderedRows, rowOf)
		for k := range nx + ny + 1 {
			i := splitMerge(x, y, k, compareOrderedRows)
			if i < 0 || i > nx || k-i < 0 || k-i > ny {
				t.Fatalf("%d+%d rows, k %d: split at %d", nx, ny, k, i)
			}
			got := make([]*tableRow, nx+ny)
			mergeSorted(got[:k], x[:i], y[:k-i], compareOrderedRows, rowOf)
			mergeSorted(got[k:], x[i:], y[k-i:], compareOrderedRows, rowOf)
			if !slices.Equal(got, want) {
				t.Fatalf("%d+%d rows, k %d: split at %d merges out of order", nx, ny, k, i)
			}
		}
	}
}

// rowsBetween numbers the rows of shards across them and yields those
// between its bounds, shards empty or not.
func TestRowsBetween(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for range 100 {
		shards := make([][]tableRow, rng.IntN(4))
		var all []*tableRow
		for s := range shards {
			shards[s] = make([]tableRow, rng.IntN(4))
			for i := range shards[s] {
				all = append(all, &shards[s][i])
			}
		}
		for lo := 0; lo <= len(all); lo++ {
			for hi := lo; hi <= len(all)+1; hi++ {
				var got []*tableRow
				want := all[lo:min(hi, len(all))]
				for i, r := range rowsBetween(shards, lo, hi) {
					if i != lo+len(got) {
						t.Fatalf("rows %d to %d: number %d, want %d", lo, hi, i, lo+len(got))
					}
					got = append(got, r)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("rows %d to %d of %d: %d rows, want %d", lo, hi, len(all), len(got), len(want))
				}
			}
		}
	}
}

// A large table's rows are grouped in two shards (groupRows): its
// table equals one shard's, row for row and in order, ranks included,
// on keys that merge across DSOs of one short name, levels and events.
// (Ranks are perf's order where its comparison was none: rows of one
// rank order are all ranked, else the order is the input's.)
func TestGroupRowsShards(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	dsos := []string{"/usr/lib/libc.so.6", "/opt/libc.so.6", "[kernel.kallsyms]", symbols.Unknown, "/bin/app"}
	syms := []string{"main", "function_a", "function_b", symbols.Unknown}
	for i := range 6 {
		n := 1 + i%2
		m, acc := map[Key]Counts{}, map[Key]Counts{}
		ranks := map[rankKey]int32{}
		for range 2*parallelRowsMin + rng.IntN(parallelRowsMin) {
			k := Key{DSO: dsos[rng.IntN(len(dsos))], Sym: syms[rng.IntN(len(syms))],
				Kernel: rng.IntN(2) == 0, Addr: uint64(rng.IntN(3000)) << 4, Event: rng.IntN(n)}
			c := Counts{Samples: uint64(1 + rng.IntN(3)), Period: uint64(rng.IntN(3))}
			switch rng.IntN(3) {
			case 0:
				m[k] = c
			case 1:
				acc[noLevel(k)] = c
			default:
				m[k], acc[noLevel(k)] = c, c
			}
		}
		// perf's tree ranks every row without a map, as finishTrees
		// does: in an order of its own.
		for k := range merged(m, acc) {
			if rk := (Key{DSO: k.DSO, Sym: k.Sym, Addr: k.Addr}); k.DSO == symbols.Unknown {
				if _, ok := ranks[rankKeyOf(rk)]; !ok {
					ranks[rankKeyOf(rk)] = int32(rng.IntN(1 << 20))
				}
			}
		}
		var want, got []*tableRow
		func() {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			shards := groupShards(m, keyCountsOf(acc), nil, ranksFrom(ranks), 0, n)
			if len(shards) != 1 {
				t.Fatalf("case %d: %d shards at GOMAXPROCS 1", i, len(shards))
			}
			want = tableOrder(slices.Concat(shards...))
		}()
		func() {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
			shards := groupShards(m, keyCountsOf(acc), nil, ranksFrom(ranks), 0, n)
			if len(shards) != 2 || len(shards[0]) == 0 || len(shards[1]) == 0 {
				t.Fatalf("case %d: shards of %d rows at GOMAXPROCS 2", i, len(shards))
			}
			got = tableOrder(slices.Concat(shards...))
		}()
		if len(got) != len(want) {
			t.Fatalf("case %d: %d rows, want %d", i, len(got), len(want))
		}
		ranked := 0
		for j := range got {
			g, w := *got[j], *want[j]
			if g.key != w.key || !slices.Equal(g.c, w.c) || !slices.Equal(g.acc, w.acc) || g.rank != w.rank || *g.first != *w.first || g.short != w.short {
				t.Fatalf("case %d: row %d is %s rank %d, want %s rank %d", i, j, showRow(g), g.rank, showRow(w), w.rank)
			}
			if g.rank > 0 {
				ranked++
			}
		}
		if ranked == 0 {
			t.Fatalf("case %d: no row ranked", i)
		}
	}
}

// merged yields the keys of m and acc.
func merged(m, acc map[Key]Counts) iter.Seq[Key] {
	return func(yield func(Key) bool) {
		for _, x := range []map[Key]Counts{m, acc} {
			for k := range x {
				if !yield(k) {
					return
				}
			}
		}
	}
}

// TestGroupRowsNamedRanks: the replay (replayer.result) ranks the rows
// of a key perf's tree kept apart, in a DSO too, not only the rows
// without a map; each row gets its rank.
func TestGroupRowsNamedRanks(t *testing.T) {
	named := Key{DSO: "/lib/libc.so.6", Sym: "malloc", Addr: 0x100}
	split := named
	split.dup = 1
	noMap := Key{DSO: symbols.Unknown, Sym: symbols.Unknown, Addr: 0x7}
	plain := Key{DSO: "/bin/app", Sym: "main", Addr: 0x10}
	c := Counts{Samples: 1, Period: 1}
	m := map[Key]Counts{named: c, split: c, noMap: c, plain: c}
	acc := maps.Clone(m)
	ranks := map[rankKey]int32{rankKeyOf(split): 0, rankKeyOf(noMap): 1, rankKeyOf(named): 2}
	for _, rows := range groupRows(m, keyCountsOf(acc), nil, ranksFrom(ranks), 0, 1) {
		for _, r := range rows {
			want := int32(0)
			if rank, ok := ranks[rankKeyOf(r.key)]; ok {
				want = rank + 1
			}
			if r.rank != want {
				t.Errorf("row %s: rank %d, want %d", showRow(r), r.rank, want)
			}
		}
	}
}

// all returns every rank r holds, by its row's rankKey.
func (r *rowRanks) all() map[rankKey]int32 {
	if r == nil {
		return nil
	}
	all := maps.Clone(r.named)
	r.noMap.each(func(addr uint64, tag uint32, rank int32) {
		all[rankKey{symbols.Unknown, symbols.Unknown, addr, int32(tag & (1<<16 - 1)), int32(tag >> 16)}] = rank
	})
	for k, rank := range r.rare {
		all[rankKey{symbols.Unknown, symbols.Unknown, k.addr, k.event, k.dup}] = rank
	}
	return all
}

// ranksFrom returns the rowRanks of m.
func ranksFrom(m map[rankKey]int32) *rowRanks {
	r := newRowRanks(len(m))
	for k, rank := range m {
		key := Key{DSO: k.dso, Sym: k.sym, Addr: k.addr, Event: int(k.event), dup: k.dup}
		r.set(&key, rank)
	}
	return r
}

// TestRowRanks: ranks set are got, those of rows without a map and of
// others alike, and keys differing in any field have their own.
func TestRowRanks(t *testing.T) {
	r := newRowRanks(0)
	keys := []Key{
		{DSO: symbols.Unknown, Sym: symbols.Unknown, Addr: 7},
		{DSO: symbols.Unknown, Sym: symbols.Unknown, Addr: 7, Event: 1},
		{DSO: symbols.Unknown, Sym: symbols.Unknown, Addr: 7, dup: 1},
		{DSO: symbols.Unknown, Sym: symbols.Unknown, Addr: 8},
		{DSO: symbols.Unknown, Sym: symbols.Unknown, Addr: 7, dup: 1 << 15}, // too large a dup for a tag: rare's
		{DSO: symbols.Unknown, Sym: symbols.Unknown, Addr: 7, Event: 1 << 16},
		{DSO: symbols.Unknown, Sym: symbols.Unknown, Addr: 7, Event: 1<<16 - 1, dup: 1<<15 - 1},
		{DSO: "/lib/libc.so.6", Sym: "malloc", Addr: 7},
		{DSO: "/lib/libc.so.6", Sym: "malloc", Addr: 7, dup: 1},
		{DSO: "/lib/libc.so.6", Sym: symbols.Unknown, Addr: 7},
		{DSO: symbols.Unknown, Sym: "malloc", Addr: 7},
	}
	for i := range keys {
		if _, ok := r.get(&keys[i]); ok {
			t.Fatalf("%+v ranked before any was set", keys[i])
		}
		r.set(&keys[i], int32(i))
	}
	for i := range keys {
		if rank, ok := r.get(&keys[i]); !ok || rank != int32(i) {
			t.Errorf("%+v: rank %d, %v; want %d", keys[i], rank, ok, i)
		}
	}
	if len(r.all()) != len(keys) {
		t.Errorf("%d ranks, want %d", len(r.all()), len(keys))
	}
	var none *rowRanks
	if _, ok := none.get(&keys[0]); ok {
		t.Error("a nil rowRanks has a rank")
	}
}

// keyCountsOf returns m's keys and counts, as Result.children holds them.
func keyCountsOf(m map[Key]Counts) keyChunks {
	if m == nil {
		return nil
	}
	all := keyChunks{}
	for k, c := range m {
		all.add(keyCounts{k, c})
	}
	return all
}

// countsMap returns kcs by key.
func countsMap(kcs keyChunks) map[Key]Counts {
	m := make(map[Key]Counts, kcs.len())
	for kc := range kcs.all() {
		m[kc.k] = kc.c
	}
	return m
}

// keyChunks keeps keys in order across its chunks, their addresses
// fixed as it grows.
func TestKeyChunks(t *testing.T) {
	for _, n := range []int{0, 1, keyChunk - 1, keyChunk, keyChunk + 1, 3*keyChunk + 5} {
		c := keyChunks{}
		var first *keyCounts
		for i := range n {
			c.add(keyCounts{k: Key{Addr: uint64(i)}})
			if i == 0 {
				first = &c[0][0]
			}
		}
		if c.len() != n {
			t.Fatalf("%d keys added: len %d", n, c.len())
		}
		i := 0
		for kc := range c.all() {
			if kc.k.Addr != uint64(i) {
				t.Fatalf("%d keys added: key %d has address %d", n, i, kc.k.Addr)
			}
			if i == 0 && kc != first {
				t.Fatalf("%d keys added: the first moved", n)
			}
			i++
		}
		if i != n {
			t.Fatalf("%d keys added: %d yielded", n, i)
		}
	}
}

// perf sorts an inlined function's row by the inline symbol's name
// (sort__sym_sort), without the " (inlined)" it prints, and rows of one
// name by their collapsed tree's order (by start): a real symbol and a
// function of its name inlined elsewhere interleave by address. Found on a
// --call-graph dwarf recording of a g++ program (std::_Rb_tree::_M_erase,
// inlined into ~_Rb_tree and out of line).
func TestInlinedRowsSortByTheirOwnName(t *testing.T) {
	acc := map[Key]Counts{}
	keys := []Key{
		{DSO: "/bin/app", Sym: "f" + inlinedSuffix, Addr: 0x1000},
		{DSO: "/bin/app", Sym: "f", Addr: 0x3000},
		{DSO: "/bin/app", Sym: "f" + inlinedSuffix, Addr: 0x4000},
		{DSO: "/bin/app", Sym: "g", Addr: 0x2000},
	}
	for _, k := range keys {
		acc[k] = Counts{1, 1}
	}
	got := tableOrder(groupRows(map[Key]Counts{}, keyCountsOf(acc), nil, nil, 0, 1))
	if len(got) != len(keys) {
		t.Fatalf("%d rows, want %d", len(got), len(keys))
	}
	for i, r := range got {
		if r.key != keys[i] {
			t.Errorf("row %d is %s %#x, want %s %#x", i, r.key.Sym, r.key.Addr, keys[i].Sym, keys[i].Addr)
		}
	}
}
