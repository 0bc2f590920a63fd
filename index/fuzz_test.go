package index_test

import (
	"cmp"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/listref"
)

// byteSource hands out fuzz input bytes; exhausted input reads as zeros.
type byteSource struct{ b []byte }

func (s *byteSource) next() byte {
	if len(s.b) == 0 {
		return 0
	}
	c := s.b[0]
	s.b = s.b[1:]
	return c
}

func (s *byteSource) empty() bool { return len(s.b) == 0 }

// addr spreads a byte over a small address space so ranges collide often;
// byte 255 lands at the top of the 64-bit space to exercise the edges.
func (s *byteSource) addr() uint64 {
	c := s.next()
	if c == 255 {
		return ^uint64(0) - 0x100
	}
	return uint64(c) * 0x100
}

func (s *byteSource) rangeMap() index.Map {
	start := s.addr()
	size := uint64(s.next()) * 0x40
	kinds := []index.Kind{index.KindUser, index.KindBPFProg, index.KindModule, index.KindAnon}
	k := kinds[s.next()%4]
	return index.Map{Start: start, End: start + size, Pgoff: uint64(s.next()) << 12, Kind: k, DSO: k.String()}
}

// runOps interprets data as a sequence of operations applied to the
// B-tree, the list reference and (for the map operations) the literal perf
// model, and fails on the first difference in canonical output, errors or
// Find answers, or on a broken invariant.
func runOps(t *testing.T, data []byte) {
	src := &byteSource{b: data}
	bt, lr, model := index.New(), &listref.Maps{}, &perfModel{}
	for step := 0; !src.empty() && step < 200; step++ {
		op := src.next() % 7
		what := ""
		switch op {
		case 0, 1, 2:
			x := src.rangeMap()
			var eb, el error
			switch op {
			case 0:
				what = "insert " + x.String()
				eb, el = bt.Insert(x), lr.Insert(x)
				if eb == nil {
					model.insert(x)
				}
			case 1:
				what = "fixup " + x.String()
				eb, el = bt.FixupOverlapAndInsert(x), lr.FixupOverlapAndInsert(x)
				if eb == nil {
					model.fixupOverlapAndInsert(x)
				}
			case 2:
				what = "merge " + x.String()
				eb, el = bt.MergeIn(x), lr.MergeIn(x)
				if eb == nil {
					model.mergeIn(x)
				}
			}
			if (eb == nil) != (el == nil) {
				t.Fatalf("step %d %s: btree err %v, list err %v", step, what, eb, el)
			}
			if eb != nil && x.Start < x.End && !errors.Is(eb, index.ErrOverlap) {
				t.Fatalf("step %d %s: unexpected error %v", step, what, eb)
			}
		case 3:
			all := bt.Slice()
			var x index.Map
			if len(all) > 0 && src.next()%4 != 0 {
				x = all[int(src.next())%len(all)]
			} else {
				x = src.rangeMap()
			}
			what = "remove " + x.String()
			rb, rl := bt.Remove(x), lr.Remove(x)
			if rb != rl {
				t.Fatalf("step %d %s: btree %v, list %v", step, what, rb, rl)
			}
			if rb {
				i := slices.IndexFunc(model.a, func(m index.Map) bool { return m.Start == x.Start && m.End == x.End })
				model.a = slices.Delete(model.a, i, i+1)
			}
		case 4:
			// A run of lookups: past 32 without a change, Find answers
			// from its flat copy.
			a := src.addr() + uint64(src.next())
			n, stride := 1+int(src.next()%48), uint64(src.next())*0x40
			what = "find"
			for j := range n {
				x := a + uint64(j)*stride
				gb, okb := bt.Find(x)
				gl, okl := lr.Find(x)
				if okb != okl || gb != gl {
					t.Fatalf("step %d Find(%#x), lookup %d of a run: btree %v %v, list %v %v", step, x, j, gb, okb, gl, okl)
				}
			}
		case 5:
			var segs []index.Segment
			n := int(src.next() % 6)
			for range n {
				start := src.addr()
				segs = append(segs, index.Segment{Vaddr: start, Size: uint64(src.next()) * 0x100, Offset: start + 0x5000})
			}
			lm := index.Landmarks{Stext: index.Landmark{Addr: src.addr() + 0x10, OK: src.next()%8 != 0}}
			what = "kcore"
			kb, eb := index.LoadKcore(bt, segs, lm)
			kl, el := listref.LoadKcore(lr, segs, lm)
			if (eb == nil) != (el == nil) || kb != kl {
				t.Fatalf("step %d kcore %v: btree %v %v, list %v %v", step, segs, kb, eb, kl, el)
			}
			if eb == nil {
				kept := slices.DeleteFunc(bt.Slice(), func(m index.Map) bool { return m.Kind != index.KindBPFProg })
				checkObjectCode(t, bt, segs, kept, rand.New(rand.NewPCG(uint64(step), 0)))
			}
			model.a = bt.Slice() // the model's kcore order is perf's, not ours
		case 6:
			k := index.Kind(src.next() % 4)
			what = "removefunc " + k.String()
			nb := bt.RemoveFunc(func(m index.Map) bool { return m.Kind == k })
			nl := lr.RemoveFunc(func(m index.Map) bool { return m.Kind == k })
			model.a = slices.DeleteFunc(model.a, func(m index.Map) bool { return m.Kind == k })
			if nb != nl {
				t.Fatalf("step %d %s: removed %d vs %d", step, what, nb, nl)
			}
		}
		cb := bt.Canonical()
		if cl := lr.Canonical(); cb != cl {
			t.Fatalf("step %d %s: btree\n%slist\n%s", step, what, cb, cl)
		}
		if cm := index.Canonical(model.a); cb != cm {
			t.Fatalf("step %d %s: btree\n%sperf model\n%s", step, what, cb, cm)
		}
		if err := bt.Check(); err != nil {
			t.Fatalf("step %d %s: %v", step, what, err)
		}
		if bt.Len() != lr.Len() {
			t.Fatalf("step %d: Len %d vs %d", step, bt.Len(), lr.Len())
		}
	}
}

func FuzzDifferential(f *testing.F) {
	f.Add([]byte{1, 10, 20, 0, 1, 1, 12, 4, 0, 2, 2, 5, 40, 1, 3, 4, 11, 3})
	f.Add([]byte{5, 3, 0, 40, 10, 8, 30, 4, 200, 1, 9, 4, 4, 11, 0})
	f.Add([]byte{0, 255, 4, 0, 0, 4, 255, 200, 2, 0, 255, 0, 0})
	f.Fuzz(runOps)
}

// TestDifferentialRandom runs the fuzz body on pseudo-random inputs so
// `go test` covers it without -fuzz.
func TestDifferentialRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for range 2000 {
		data := make([]byte, rng.IntN(400))
		for i := range data {
			data[i] = byte(rng.IntN(40))
			if rng.IntN(10) == 0 {
				data[i] = byte(rng.IntN(256))
			}
		}
		runOps(t, data)
	}
}

// Every lookup path — the tree's descent, its flat copy, a Snapshot and a
// cached Finder — answers like the list reference, on the edges of every
// map, in sets from empty to four search-tree levels, with maps at both
// ends of the address space; Index gives the map's address-order place.
func TestSnapshotMatchesList(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	sizes := []int{0, 1, 2, 7, 8, 9, 63, 64, 65, 80, 81, 100, 728, 729, 730, 1000, 3000}
	for _, n := range sizes {
		for round := range 8 {
			ms, l := index.New(), &listref.Maps{}
			var a uint64
			var built []index.Map
			if round%2 == 1 {
				a = rng.Uint64N(3) // a map may start at 0
			}
			for i := range n {
				size := 1 + rng.Uint64N(1<<12)
				m := index.Map{Start: a, End: a + size, Pgoff: rng.Uint64(), DSO: "x"}
				if round%4 >= 2 && i == n-1 {
					m.End = ^uint64(0) // the last map may end at the top
				}
				ms.Insert(m)
				built = append(built, m)
				a = m.End + rng.Uint64N(3)*rng.Uint64N(1<<10) // gaps or none
			}
			for i := len(built) - 1; i >= 0; i-- { // in reverse: each insert is at the head
				l.FixupOverlapAndInsert(built[i])
			}
			maps := l.Slice()
			probes := []uint64{0, 1, ^uint64(0), ^uint64(0) - 1}
			for _, m := range maps {
				probes = append(probes, m.Start-1, m.Start, m.Start+1, m.End-1, m.End)
			}
			for range 200 {
				probes = append(probes, rng.Uint64N(a+2))
			}
			// place is the list's answer, by binary search of its maps (its
			// own Find walks the list: quadratic over these probes).
			place := func(p uint64) int {
				i, _ := slices.BinarySearchFunc(maps, p, func(m index.Map, p uint64) int {
					return cmp.Compare(m.End, p+1) // the first map ending after p
				})
				if i == len(maps) || !maps[i].Contains(p) {
					return -1
				}
				return i
			}
			check := func(what string, find func(uint64) (index.Map, bool)) {
				t.Helper()
				for _, p := range probes {
					var want index.Map
					i := place(p)
					if i >= 0 {
						want = maps[i]
					}
					if got, ok := find(p); got != want || ok != (i >= 0) {
						t.Fatalf("n=%d round %d: %s Find(%#x) = %v %v, list %v %v", n, round, what, p, got, ok, want, i >= 0)
					}
				}
			}
			// The first lookups after a change descend the tree; a run
			// longer than the threshold builds the flat copy.
			check("tree", ms.Find)
			check("tree, flat copy", ms.Find)
			snap := ms.Snapshot()
			check("snapshot", snap.Find)
			check("finder", index.NewFinder(snap).Find)
			if snap.Len() != len(maps) {
				t.Fatalf("n=%d: snapshot Len %d, list %d", n, snap.Len(), len(maps))
			}
			for _, p := range probes {
				want := place(p)
				if got := snap.Index(p); got != want {
					t.Fatalf("n=%d round %d: Index(%#x) = %d, want %d", n, round, p, got, want)
				}
				if want >= 0 && snap.Map(want) != maps[want] {
					t.Fatalf("n=%d: Map(%d) = %v, want %v", n, want, snap.Map(want), maps[want])
				}
			}
			// A change drops the flat copy: the next lookups see it.
			if n > 0 {
				gone := maps[n/2]
				ms.Remove(gone)
				l.Remove(gone)
				maps = l.Slice()
				check("tree after Remove", ms.Find)
				check("tree after Remove, flat copy", ms.Find)
			}
		}
	}
}
