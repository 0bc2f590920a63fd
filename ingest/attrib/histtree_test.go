package attrib

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/machine"
)

// randomHistEntry returns a sample's entry from a small space, so that
// entries repeat: two DSOs of one short name, entries without a map or a
// symbol, and with far, addresses 2^63 apart, which perf's signed
// differences order inconsistently too.
func randomHistEntry(rng *rand.Rand, symOnly, addrOnly, far bool) histEntry {
	shift := 0
	if far {
		shift = rng.IntN(2) * 63
	}
	e := histEntry{tid: int32(rng.IntN(3)), cpu: int32(rng.IntN(2))}
	switch rng.IntN(4) {
	case 0:
		e.noMap = true
	case 1:
		e.dso = "libc.so.6"
	default:
		e.dso = []string{"a", "b", "[kernel.kallsyms]"}[rng.IntN(3)]
	}
	hasSym := !e.noMap && rng.IntN(2) == 0
	if symOnly || addrOnly {
		hasSym = symOnly
	}
	if hasSym && e.noMap { // a symbol has a map
		e.noMap, e.dso = false, "a"
	}
	if hasSym {
		e.sym = true
		e.dsoPath = "/lib/" + e.dso + []string{"", ".old"}[rng.IntN(2)]
		e.start = uint64(rng.IntN(6)) << shift
		e.end = e.start + uint64(1+rng.IntN(2))
	} else {
		e.ip = uint64(rng.IntN(8)) << shift
	}
	return e
}

var histTreeKeys = [][]string{{SortSym}, {SortPid, SortSym}, {SortSym, SortCPU}, {SortCPU, SortSym}}

// TestHistTreeConsistentKeys checks the tree where perf's comparison is
// a consistent order (every entry with a symbol, or none): each sample
// finds the entry it compares equal to, one entry per class, and the
// in-order walk is sorted by the comparison.
func TestHistTreeConsistentKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 400 {
		keys := histTreeKeys[i%len(histTreeKeys)]
		h := newHistTree(keys)
		symOnly := i%2 == 0
		var samples []histEntry
		for range rng.IntN(300) {
			e := randomHistEntry(rng, symOnly, !symOnly, false)
			samples = append(samples, e)
			got := h.find(e)
			for j := range h.entries {
				if (h.compare(&h.entries[j], &e) == 0) != (int32(j) == got) {
					t.Fatalf("case %d (%v): sample %+v is in entry %d, but compares equal to entry %d %+v", i, keys, e, got, j, h.entries[j])
				}
			}
		}
		_, ranks := h.collapse()
		order := make([]int32, len(ranks))
		for e, r := range ranks {
			order[r] = int32(e)
		}
		if !slices.IsSortedFunc(order, func(a, b int32) int { return -h.compare(&h.entries[a], &h.entries[b]) }) {
			t.Fatalf("case %d (%v): in-order walk is not sorted", i, keys)
		}
		// perf's trees walk ascending: by the first key's tid or CPU, or
		// by DSO name for symbols, by address without.
		ascending := func(a, b int32) int {
			x, y := h.entries[a], h.entries[b]
			switch {
			case keys[0] == SortPid:
				return cmp.Compare(x.tid, y.tid)
			case keys[0] == SortCPU:
				return cmp.Compare(x.cpu, y.cpu)
			case symOnly:
				return cmp.Compare(x.dso, y.dso)
			}
			return cmp.Compare(x.ip, y.ip)
		}
		if !slices.IsSortedFunc(order, ascending) {
			t.Fatalf("case %d (%v): in-order walk does not ascend", i, keys)
		}
	}
}

// TestHistTreeMixedEntries replays random samples, entries with and
// without symbols mixed (an inconsistent comparison) and addresses 2^63
// apart: each lands in an entry it compares equal to, a second search
// for it at once lands there again (the search depends on the tree
// alone), and the walk ranks every entry once.
func TestHistTreeMixedEntries(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	splits := 0
	for i := range 400 {
		keys := histTreeKeys[i%len(histTreeKeys)]
		h := newHistTree(keys)
		byKey := map[histEntry]int32{}
		for j := range rng.IntN(400) {
			e := randomHistEntry(rng, false, false, true)
			id := h.find(e)
			if h.compare(&h.entries[id], &e) != 0 {
				t.Fatalf("case %d (%v): sample %d %+v is in entry %d %+v, which it does not equal", i, keys, j, e, id, h.entries[id])
			}
			if again := h.find(e); again != id {
				t.Fatalf("case %d (%v): sample %d found entry %d, then %d", i, keys, j, id, again)
			}
			if prev, ok := byKey[e]; ok && prev != id {
				splits++ // perf's tree missed an equal entry: a second row
			}
			byKey[e] = id
		}
		_, ranks := h.collapse()
		seen := make([]bool, len(ranks))
		for _, r := range ranks {
			if seen[r] {
				t.Fatalf("case %d (%v): rank %d given twice", i, keys, r)
			}
			seen[r] = true
		}
	}
	if splits == 0 {
		t.Error("no sample missed its entry: the inputs do not exercise perf's inconsistent comparison")
	}
}

// TestHistTreeCollapse checks perf's collapse (histTree.collapse) with
// the comm key, where the comparison is a consistent order (every entry
// with a symbol) but commands are renamed while samples come in (perf's
// comm__override), so that the first tree holds entries where their old
// names put them and makes second entries for renamed ones. Collapsed,
// with the final names, each class of equal entries must be one entry:
// the class's first in the first tree's in-order walk, as perf moves
// them; and the entries kept, in rank order, must be sorted.
func TestHistTreeCollapse(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	keySets := [][]string{{SortComm, SortSym}, {SortSym, SortComm}, {SortComm, SortPid, SortSym}}
	names := []string{":12", ":13", "alpha", "beta"}
	renamedSome := false
	for i := range 300 {
		keys := keySets[i%len(keySets)]
		h := newHistTree(keys)
		comms := make([]*machine.CommEntry, 4)
		for j := range comms {
			comms[j] = &machine.CommEntry{Name: names[rng.IntN(len(names))]}
		}
		for range rng.IntN(200) {
			if rng.IntN(20) == 0 { // a COMM overrides a thread's first name
				comms[rng.IntN(len(comms))].Name = names[rng.IntN(len(names))]
				renamedSome = true
			}
			e := randomHistEntry(rng, true, false, false)
			e.comm = comms[rng.IntN(len(comms))]
			h.find(e)
		}
		kept, ranks := h.collapse()
		var walk []int32
		for n := h.tree.First(); n != nil; n = n.Next() {
			walk = append(walk, n.Value)
		}
		firstOf := func(id int32) int32 {
			for _, w := range walk {
				if h.compare(&h.entries[w], &h.entries[id]) == 0 {
					return w
				}
			}
			return -1
		}
		var survivors []int32
		for id := range h.entries {
			if want := firstOf(int32(id)); kept[id] != want {
				t.Fatalf("case %d (%v): entry %d %+v kept in %d, want %d, the first equal one in the walk", i, keys, id, h.entries[id], kept[id], want)
			}
			if kept[id] == int32(id) {
				survivors = append(survivors, int32(id))
			}
		}
		slices.SortFunc(survivors, func(a, b int32) int { return cmp.Compare(ranks[a], ranks[b]) })
		for j := 1; j < len(survivors); j++ {
			if ranks[survivors[j]] != int32(j) {
				t.Fatalf("case %d (%v): the entries kept are ranked %v", i, keys, ranks)
			}
			if h.compare(&h.entries[survivors[j-1]], &h.entries[survivors[j]]) <= 0 {
				t.Fatalf("case %d (%v): entries kept not in order at rank %d", i, keys, j)
			}
		}
	}
	if !renamedSome {
		t.Error("no command was renamed")
	}
}

// TestRowsOrderIsTotal sorts the rows of a table by sym of two events,
// whose hist trees rank their rows, from shuffled inputs: every sort must
// give the same order (a comparison that ranked rows of one event but
// compared those of two by address was not an order, and the table came
// out different from run to run).
func TestRowsOrderIsTotal(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for i := range 200 {
		r := &Rows{Keys: []string{SortCPU, SortSym}, ranks: map[int][]int32{}}
		for ev := range 2 {
			n := 1 + rng.IntN(40)
			ranks := make([]int32, n)
			for j, p := range rng.Perm(n) {
				ranks[j] = int32(p)
			}
			r.ranks[ev] = ranks
			for j := range n {
				k := RowKey{CPU: int32(rng.IntN(2)), Sym: "[unknown]", Addr: uint64(rng.IntN(1000)), Event: ev, entry: int32(j + 1)}
				r.list = append(r.list, &row{key: k, c: Counts{Samples: 1, Period: uint64(1 + rng.IntN(2))}})
			}
		}
		keysOf := func(rows []*row) []RowKey {
			var keys []RowKey
			for _, s := range rows {
				keys = append(keys, s.key)
			}
			return keys
		}
		want := keysOf(r.order())
		for range 5 {
			rng.Shuffle(len(r.list), func(a, b int) { r.list[a], r.list[b] = r.list[b], r.list[a] })
			keys := keysOf(r.order())
			if !slices.Equal(keys, want) {
				t.Fatalf("case %d: the order depends on the input's", i)
			}
		}
	}
}

// An answer whose path from the root was found clean of poisoned entries
// at a poison epoch stays clean while the epoch does (rowCache.stands):
// random entries made and poisoned, each answer kept with the epoch it
// was found clean at checked against the path it has now.
func TestPoisonEpochCoversPaths(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 5))
		h := newHistTree([]string{SortDSO, SortSym})
		h.byComm = map[*machine.CommEntry][]int32{}
		h.tree.Rotated = h.rotated
		answers := map[int32]uint32{} // entry: the epoch its path was found clean at
		for step := range 3000 {
			if rng.IntN(8) == 0 && len(h.entries) > 0 {
				h.poison(int32(rng.IntN(len(h.entries))))
			} else {
				id := h.find(histEntry{noMap: true, ip: rng.Uint64N(1 << 20)})
				if h.npoisoned == 0 || h.cleanFrom(h.nodes[id]) {
					answers[id] = h.poisonEpoch
				}
			}
			if step%10 != 0 {
				continue
			}
			for id, seen := range answers {
				if seen == h.poisonEpoch && !h.cleanFrom(h.nodes[id]) {
					t.Fatalf("seed %d, step %d: entry %d's path holds a poisoned entry at the epoch it was found clean at", seed, step, id)
				}
			}
		}
	}
}

// collapse returns collapseTree's kept entries and the ranks of its
// tree's walk.
func (h *histTree) collapse() (kept, ranks []int32) {
	kept, t := h.collapseTree()
	return kept, h.walkRanks(t)
}
