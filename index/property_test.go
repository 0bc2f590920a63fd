package index_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kmapindex/kmapindex/index"
)

const delta = 0x1234000 // p_offset - p_vaddr of every generated segment (wrapping)

func linearSeg(start, size uint64) index.Segment {
	return index.Segment{Vaddr: start, Size: size, Offset: start + delta}
}

// randomLayout returns kcore segments in file order, landmarks and BPF
// maps. When realistic is set, the segments other than the one holding
// _stext are pairwise disjoint, as in every real kcore (the only nesting
// is text inside vmalloc); otherwise anything goes.
func randomLayout(rng *rand.Rand, realistic bool) ([]index.Segment, index.Landmarks, []index.Map) {
	page := uint64(0x1000)
	slot := func() uint64 { return uint64(rng.IntN(64)) * page }
	var segs []index.Segment
	stext := slot() + 0x10
	back := min(uint64(rng.IntN(4)), stext/page)
	replStart := stext - stext%page - back*page
	segs = append(segs, linearSeg(replStart, (back+1+uint64(rng.IntN(8)))*page))
	var others []index.Segment
	for range rng.IntN(8) {
		s := linearSeg(slot(), uint64(1+rng.IntN(16))*page)
		if realistic && (s.Contains(stext) || slices.ContainsFunc(others, func(o index.Segment) bool { return s.Vaddr < o.End() && o.Vaddr < s.End() })) {
			continue
		}
		others = append(others, s)
	}
	segs = append(segs, others...)
	rng.Shuffle(len(segs), func(i, j int) { segs[i], segs[j] = segs[j], segs[i] })
	var bpf []index.Map
	for range rng.IntN(3) {
		start := slot() + uint64(rng.IntN(0x800))
		b := index.Map{Start: start, End: start + uint64(1+rng.IntN(0x400)), Kind: index.KindBPFProg, DSO: "bpf_prog_x"}
		if b.Contains(stext) || (realistic && b.Overlaps(index.Map{Start: segs[0].Vaddr, End: segs[0].End()})) ||
			slices.ContainsFunc(bpf, b.Overlaps) {
			continue
		}
		bpf = append(bpf, b)
	}
	lm := index.Landmarks{Stext: index.Landmark{Addr: stext, OK: true}, Text: index.Landmark{Addr: stext - 0x10, OK: true}}
	return segs, lm, bpf
}

// Realistic layouts: ours equals the literal perf mainline model for the
// file order, and stays equal for every other order of the segments.
func TestKcoreMatchesPerfModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for iter := range 3000 {
		segs, lm, bpf := randomLayout(rng, true)
		stext := lm.Stext.Addr
		// BPF maps overlapping the replacement segment would be stored
		// overlapping by perf's plain insert; keep them out of the model.
		repl := smallestContaining(segs, stext)
		bpf = slices.DeleteFunc(bpf, func(b index.Map) bool { return b.Overlaps(index.Map{Start: repl.Vaddr, End: repl.End()}) })
		model := &perfModel{}
		for _, b := range bpf {
			model.insert(b)
		}
		model.insert(index.Map{Start: 0x100000, End: 0x200000, Kind: index.KindModule, DSO: "[m]"}) // removed by the load
		model.loadKcore(segs, stext)
		want := index.Canonical(model.a)
		for _, order := range [][]index.Segment{segs, reversed(segs), shuffled(rng, segs)} {
			for _, im := range impls {
				ms := im.new()
				for _, b := range bpf {
					ms.Insert(b)
				}
				ms.Insert(index.Map{Start: 0x100000, End: 0x200000, Kind: index.KindModule, DSO: "[m]"})
				if _, err := im.loadKcore(ms, order, lm); err != nil {
					t.Fatalf("iter %d impl=%s: %v", iter, im.name, err)
				}
				if got := ms.Canonical(); got != want {
					t.Fatalf("iter %d impl=%s segs %v stext %#x bpf %v\ngot\n%swant (perf model)\n%s", iter, im.name, segs, stext, bpf, got, want)
				}
			}
		}
	}
}

// smallestContaining returns the replacement perf picks, the earliest in
// its pushed-front list (the latest in file order) on a size tie.
func smallestContaining(segs []index.Segment, a uint64) index.Segment {
	var best index.Segment
	found := false
	for _, s := range reversed(segs) {
		if s.Contains(a) && (!found || s.Size < best.Size) {
			best, found = s, true
		}
	}
	return best
}

func shuffled(rng *rand.Rand, s []index.Segment) []index.Segment {
	r := slices.Clone(s)
	rng.Shuffle(len(r), func(i, j int) { r[i], r[j] = r[j], r[i] })
	return r
}

// Arbitrary layouts (any nesting and partial overlap): the result does
// not depend on the segment order, the invariants hold, and every address
// a segment covers resolves, outside kept BPF maps, to its file offset
// (the object-code reading invariant). Both implementations agree.
func TestKcoreOrderIndependentAndObjectCode(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for iter := range 3000 {
		segs, lm, bpf := randomLayout(rng, false)
		var want string
		for k, order := range [][]index.Segment{segs, reversed(segs), shuffled(rng, segs), shuffled(rng, segs)} {
			for _, im := range impls {
				ms := im.new()
				for _, b := range bpf {
					if err := ms.Insert(b); err != nil {
						t.Fatal(err)
					}
				}
				kernel, err := im.loadKcore(ms, order, lm)
				if err != nil {
					t.Fatalf("iter %d: %v", iter, err)
				}
				got := ms.Canonical()
				if err := index.CheckOrdered(ms.Slice()); err != nil {
					t.Fatalf("iter %d impl=%s: %v\n%s", iter, im.name, err, got)
				}
				if k == 0 && im.name == "btree" {
					want = got
				} else if got != want {
					t.Fatalf("iter %d impl=%s order %d differs:\n%swant\n%s", iter, im.name, k, got, want)
				}
				if !kernel.Contains(lm.Stext.Addr) || kernel.Kind != index.KindKernel || kernel.Mapping != index.MappingDSO {
					t.Fatalf("iter %d: kernel map %s", iter, kernel)
				}
				if k == 0 {
					checkObjectCode(t, ms, segs, bpf, rng)
				}
			}
		}
	}
}

func checkObjectCode(t *testing.T, ms impl, segs []index.Segment, bpf []index.Map, rng *rand.Rand) {
	t.Helper()
	for _, s := range segs {
		if s.Size == 0 {
			continue
		}
		for _, a := range []uint64{s.Vaddr, s.End() - 1, s.Vaddr + rng.Uint64N(s.Size)} {
			if slices.ContainsFunc(bpf, func(b index.Map) bool { return b.Contains(a) }) {
				continue
			}
			got, ok := ms.Find(a)
			if !ok {
				t.Fatalf("covered address %#x lost", a)
			}
			if got.MapIP(a) != s.FileOffset(a) {
				t.Fatalf("map_ip(%#x) = %#x in %s, want file offset %#x", a, got.MapIP(a), got, s.FileOffset(a))
			}
		}
	}
}
