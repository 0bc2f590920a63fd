package attrib

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestReplayConsistentMatchesCounts replays random samples whose entries
// perf compares consistently (no inlined entry): perf's tree then finds
// the entry of each key, so the replay must give the accumulator's own
// Children counts, and Self by the sample's entry, with no second row of
// a key. Samples repeat entries (recursion), which count once each.
func TestReplayConsistentMatchesCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	// DSOs of distinct short names, each symbol at its own start: perf
	// merges symbols of one span in DSOs of one short name, which the
	// accumulator's keys tell apart.
	dsos := []string{"/lib/a.so", "/lib/b.so", "/usr/bin/c", "[kernel.kallsyms]", "[unknown]"}
	defer func(b int) { logBlock = b }(logBlock)
	for i := range 200 {
		logBlock = 1 + rng.IntN(20) // samples across blocks
		ac := newAccumulator()
		ac.log = &entryLog{}
		ac.anyInlined = true // replay though nothing is inlined
		var ids []int32
		for range 1 + rng.IntN(40) {
			k := Key{DSO: dsos[rng.IntN(len(dsos))], Sym: "[unknown]", Addr: uint64(rng.IntN(64)), Event: rng.IntN(2)}
			var end uint64
			if k.DSO != "[unknown]" && rng.IntN(3) > 0 {
				k.Addr = uint64(rng.IntN(8)) * 16
				k.Sym = fmt.Sprint("f", k.Addr)
				end = k.Addr + 16
			}
			id := ac.entry(k)
			ac.meta.set(id, entryMeta{end: end})
			ids = append(ids, id)
		}
		self := map[Key]Counts{}
		for s := range rng.IntN(300) {
			ac.stamp = uint32(s + 1)
			first := ids[rng.IntN(len(ids))]
			sample := []int32{first}
			for range rng.IntN(8) {
				if id := ids[rng.IntN(len(ids))]; ac.keys.at(id).Event == ac.keys.at(first).Event {
					sample = append(sample, id)
				}
			}
			c := Counts{Samples: 1, Period: uint64(1 + rng.IntN(3))}
			for _, id := range sample {
				ac.add(id, c)
			}
			ac.log.add(sample, nil, c, 1)
			k := ac.keys.at(first)
			n := self[k]
			n.add(c)
			self[k] = n
		}
		children, replayedSelf, _, _, ok := ac.replay()
		if !ok {
			t.Fatalf("case %d: no replay", i)
		}
		want := countsMap(ac.result(&Result{}))
		maps.DeleteFunc(want, func(_ Key, c Counts) bool { return c == Counts{} }) // entries no sample counted in
		if !maps.Equal(children, want) {
			for k, c := range children {
				if want[k] != c {
					t.Errorf("key %+v: replayed %v, counted %v", k, c, want[k])
				}
			}
			for k, c := range want {
				if _, ok := children[k]; !ok {
					t.Errorf("key %+v: counted %v, not replayed", k, c)
				}
			}
			t.Fatalf("case %d: replayed Children differ from the counts", i)
		}
		if !maps.Equal(replayedSelf, self) {
			t.Fatalf("case %d: replayed Self %v, want %v", i, replayedSelf, self)
		}
	}
}

// TestReplayOnlyWithInlinedEntries: without an inlined entry, or
// without a log, the counts stay the accumulator's.
func TestReplayOnlyWithInlinedEntries(t *testing.T) {
	ac := newAccumulator()
	ac.log = &entryLog{}
	if _, _, _, _, ok := ac.replay(); ok {
		t.Error("replayed without an inlined entry")
	}
	ac.log, ac.anyInlined = nil, true
	if _, _, _, _, ok := ac.replay(); ok {
		t.Error("replayed without a log")
	}
}

// TestNoMapOrderMatchesReplay counts random samples whose callchains hold
// addresses outside every map from all over the address space, many 2^63
// or more apart (perf's comparison of them is then no order), with the
// accumulator's tree of them (noMapOrder, which searches for those
// addresses alone) and replays them through a tree searched for every
// entry, as perf does (replay): both must give the same Children and
// Self columns, rows of one address included, and the same order of the
// rows without a map.
func TestNoMapOrderMatchesReplay(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	dsos := []string{"/lib/a.so", "/usr/bin/c", "[kernel.kallsyms]"}
	split, far := 0, 0
	for i := range 300 {
		ac := newAccumulator()
		ac.log = &entryLog{}
		var addrs []uint64
		for range 2 + rng.IntN(30) {
			addrs = append(addrs, rng.Uint64())
		}
		switch {
		case i%3 == 0: // near ones too: the tree starts late, if at all
			for j := range addrs {
				addrs[j] >>= 2 + rng.IntN(10)
			}
		case i%5 == 1: // about 2^63, less than 2^62 apart: an order, not the signed one
			for j := range addrs {
				addrs[j] = 1<<63 - 1<<61 + rng.Uint64N(1<<62)
			}
		}
		var mapped []Key
		for range 1 + rng.IntN(20) {
			k := Key{DSO: dsos[rng.IntN(len(dsos))], Sym: "[unknown]", Addr: uint64(rng.IntN(64))}
			if rng.IntN(2) == 0 {
				k.Addr = uint64(rng.IntN(8)) * 16
				k.Sym = fmt.Sprint("f", k.Addr)
			}
			mapped = append(mapped, k)
		}
		entry := func() (int32, uint64, bool) {
			if rng.IntN(2) == 0 {
				addr := addrs[rng.IntN(len(addrs))]
				return ac.noMapEntry(addr, false, false, 0), addr, true
			}
			k := mapped[rng.IntN(len(mapped))]
			id := ac.entry(k)
			if k.Sym != "[unknown]" {
				ac.meta.set(id, entryMeta{end: k.Addr + 16})
			}
			return id, 0, false
		}
		bySym := map[Key]Counts{}
		for s := range 1 + rng.IntN(300) {
			ac.stamp = uint32(s + 1)
			var ids []int32
			var nm []noMapFrame
			for j := range 1 + rng.IntN(8) {
				id, addr, noMap := entry()
				ids = append(ids, id)
				if noMap {
					nm = append(nm, noMapFrame{addr, 0})
				}
				if j == 0 {
					k := ac.keys.at(id)
					c := bySym[k]
					c.add(Counts{Samples: 1, Period: 2})
					bySym[k] = c
				}
			}
			ac.count(ids, objectHits(ac, ids), nm, 0, Counts{Samples: 1, Period: 2}, 1)
		}
		if rank := ac.finishTrees(); rank != nil {
			rank()
		}
		ac.anyInlined = true // replay though nothing is inlined
		// Offsets naming rows as in object symbols (objectHits): every
		// row the replay makes of an entry, a second row of its key too,
		// gets its own.
		byKey := map[Key][]int32{}
		for id := range int32(ac.keys.len()) {
			k := ac.keys.at(id)
			byKey[noLevel(k)] = append(byKey[noLevel(k)], id)
		}
		wantChildren, wantSelf, wantRanks, objects, _ := ac.replay()
		for k := range wantChildren {
			first := k
			first.dup = 0
			if ids := byKey[noLevel(first)]; len(ids) == 1 {
				if o, ok := objects[noLevel(k)]; !ok || o.off() != uint64(ids[0])+1 {
					t.Fatalf("case %d: row %+v named with offset %#x (%v), want its entry's %#x", i, k, o.off(), ok, ids[0]+1)
				}
			}
		}
		listed := ac.result(&Result{})
		children := countsMap(listed)
		if len(children) != listed.len() {
			t.Fatalf("case %d: %d Children entries for %d keys: a key listed twice", i, listed.len(), len(children))
		}
		maps.DeleteFunc(children, func(_ Key, c Counts) bool { return c == Counts{} })
		if !maps.Equal(children, wantChildren) {
			t.Fatalf("case %d: Children %v, replayed %v", i, children, wantChildren)
		}
		self := ac.selfColumn(bySym)
		if self == nil {
			self = bySym
		}
		maps.DeleteFunc(self, func(_ Key, c Counts) bool { return c.Samples == 0 })
		if !maps.Equal(self, wantSelf) {
			t.Fatalf("case %d: Self %v, replayed %v", i, self, wantSelf)
		}
		// The rows without a map, in order.
		order := func(r map[rankKey]int32) []rankKey {
			keys := slices.Collect(maps.Keys(r))
			slices.SortFunc(keys, func(a, b rankKey) int { return cmp.Compare(r[a], r[b]) })
			return keys
		}
		if ranks := ac.ranks; ranks != nil {
			far++
			if got, want := order(ranks.all()), order(wantRanks.all()); !slices.Equal(got, want) {
				t.Fatalf("case %d: rows without a map in the order %v, replayed %v", i, got, want)
			}
		} else if want := order(wantRanks.all()); !slices.IsSortedFunc(want, func(a, b rankKey) int { return cmp.Compare(int64(a.addr), int64(b.addr)) }) {
			// Unranked, tableOrder orders them as signed numbers.
			t.Fatalf("case %d: rows without a map unranked, as signed numbers, replayed in the order %v", i, want)
		}
		for k := range children {
			if k.dup > 0 {
				split++
				break
			}
		}
	}
	if far < 100 || split < 20 {
		t.Errorf("only %d cases needed the tree and %d split an address's entry: the test no longer tests them", far, split)
	}
}

// TestReplayInlineFoundFromAnotherMap: perf's entry of an inline symbol,
// found from a map other than the one it was made in (the same library
// in another process), takes that map's symbol at its start: the
// function it is inlined into (hists__findnew_entry's map update). Its
// row is named so from then on, and the inline symbol's next sample
// makes an entry of its own. In the second case the search that finds
// it from the other map is a new one (the tree grew since its last), so
// that the cache of searches must not keep its answer.
func TestReplayInlineFoundFromAnotherMap(t *testing.T) {
	appMain := Key{DSO: "/bin/app", Sym: "main", Addr: 0x10}
	appOther := Key{DSO: "/bin/app", Sym: "other", Addr: 0x60}
	inl := Key{DSO: "/lib/libc.so.6", Sym: "__libc_malloc (inlined)", Addr: 0x100}
	base := Key{DSO: "/lib/libc.so.6", Sym: "malloc", Addr: 0x100}
	type sample struct {
		keys  []Key
		owner int32
	}
	for _, tc := range []struct {
		name    string
		samples []sample
		want    map[Key]Counts
	}{
		{"cached search", []sample{{[]Key{appMain, inl}, 1}, {[]Key{appMain, inl}, 2}, {[]Key{appMain, inl}, 2}},
			map[Key]Counts{appMain: {3, 3}, base: {2, 2}, inl: {1, 1}}},
		{"new search", []sample{{[]Key{appMain, inl}, 1}, {[]Key{appMain, appOther, inl}, 2}, {[]Key{appMain, inl}, 2}},
			map[Key]Counts{appMain: {3, 3}, appOther: {1, 1}, base: {2, 2}, inl: {1, 1}}},
	} {
		ac := newAccumulator()
		ac.log = &entryLog{}
		ends := map[Key]uint64{appMain: 0x50, appOther: 0x80}
		for _, k := range []Key{appMain, appOther, inl} {
			ac.meta.set(ac.entry(k), entryMeta{end: ends[k]})
		}
		ac.meta.set(ac.entry(inl), entryMeta{end: 0x200, inlined: true, base: "malloc"})
		ac.anyInlined = true
		for _, s := range tc.samples {
			var ids []int32
			for _, k := range s.keys {
				ids = append(ids, ac.entry(k))
			}
			ac.log.add(ids, nil, Counts{Samples: 1, Period: 1}, s.owner)
		}
		children, _, _, _, ok := ac.replay()
		if !ok {
			t.Fatalf("%s: no replay", tc.name)
		}
		maps.DeleteFunc(children, func(_ Key, c Counts) bool { return c == Counts{} })
		if !maps.Equal(children, tc.want) {
			t.Errorf("%s: Children %v, want %v", tc.name, children, tc.want)
		}
	}
}

// TestOwnerPerExec: a process's user maps after an exec are new ones for
// perf, so an inline entry made before it and found after it becomes the
// function it is inlined into, as from another process.
func TestOwnerPerExec(t *testing.T) {
	ac := newAccumulator()
	ac.log = &entryLog{}
	in := ac.entry(Key{DSO: "/lib/libc.so.6", Sym: "__libc_malloc (inlined)", Addr: 0x100})
	ac.meta.set(in, entryMeta{end: 0x200, inlined: true, base: "malloc"})
	ac.anyInlined = true
	c := Counts{Samples: 1, Period: 1}
	x := execs{}
	before := x.owner(7)
	ac.log.add([]int32{in}, nil, c, before)
	if x.owner(7) != before {
		t.Fatal("the owner changed without an exec")
	}
	x[7]++
	if x.owner(7) == before || x.owner(8) == x.owner(7) {
		t.Fatalf("owners %d, %d after an exec, %d of another process", before, x.owner(7), x.owner(8))
	}
	ac.log.add([]int32{in}, nil, c, x.owner(7))
	children, _, _, _, _ := ac.replay()
	want := map[Key]Counts{{DSO: "/lib/libc.so.6", Sym: "malloc", Addr: 0x100}: {2, 2}}
	if !maps.Equal(children, want) {
		t.Errorf("Children %v, want %v", children, want)
	}
}

// objectHits marks every entry of ids as in an object symbol, made at
// the entry's id + 1 in a map that maps the symbol's start to 0: its
// row's offset is the id + 1 of the entry that made it.
func objectHits(ac *accumulator, ids []int32) []entryHit {
	hits := make([]entryHit, len(ids))
	for i, id := range ids {
		hits[i] = entryHit{i, objectName{true, uint64(id) + 1, 0}}
		if ac.objects == nil {
			ac.objects = make(map[int32]objectName)
		}
		if _, ok := ac.objects[id]; !ok {
			ac.objects[id] = hits[i].h
		}
	}
	return hits
}
