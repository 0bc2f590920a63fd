// Package bench is kmapindex's benchmark suite: every workload runs on the
// B-tree (package index) and on the list reference (package listref), on
// identical inputs, and the suite checks that both give identical output
// before it times anything. Benchmark names carry impl=… and n=… so
// benchstat can set the implementations side by side.
package bench

import (
	"math/rand/v2"

	"github.com/kmapindex/kmapindex/index"
)

// Sizes are the map counts the suite measures.
var Sizes = []int{100, 1_000, 10_000, 100_000}

const page = 0x1000

// RandomSegments returns n kcore-like segments over an address space about
// 16n pages wide: random starts and sizes, so many overlap, nest or share
// an end, all with one file-offset delta (the linear rule).
func RandomSegments(n int, seed uint64) []index.Segment {
	rng := rand.New(rand.NewPCG(seed, 0x6b636f7265))
	span := uint64(n) * 16
	segs := make([]index.Segment, n)
	for i := range segs {
		start := 0xffff800000000000 + rng.Uint64N(span)*page
		size := (1 + rng.Uint64N(32)) * page
		segs[i] = index.Segment{Vaddr: start, Size: size, Offset: start - 0xffff000000000000 + 0x2000}
	}
	return segs
}

// RandomMaps returns n random maps over the same kind of space (for
// merge-in and fixup-insert workloads, which cut them against each other).
func RandomMaps(n int, seed uint64, kind index.Kind) []index.Map {
	segs := RandomSegments(n, seed)
	maps := make([]index.Map, n)
	for i, s := range segs {
		maps[i] = index.Map{Start: s.Vaddr, End: s.End(), Pgoff: s.Offset, Kind: kind, DSO: kind.String()}
	}
	return maps
}

// DisjointMaps returns n disjoint maps with gaps between them, in address
// order, as a lookup workload.
func DisjointMaps(n int, seed uint64) []index.Map {
	rng := rand.New(rand.NewPCG(seed, 0x6d617073))
	maps := make([]index.Map, n)
	a := uint64(0xffffffffc0000000)
	for i := range maps {
		a += rng.Uint64N(4) * page // gap
		size := (1 + rng.Uint64N(16)) * page
		maps[i] = index.Map{Start: a, End: a + size, Pgoff: uint64(i) * page, Kind: index.KindModule, DSO: "[m]"}
		a += size
	}
	return maps
}

// KcoreLayout returns n disjoint segments with a text segment nested in the
// first ("vmalloc") one, landmarks for it, and n/10 BPF programs inside the
// vmalloc range: the arm64 shape, scaled up.
func KcoreLayout(n int, seed uint64) ([]index.Segment, index.Landmarks, []index.Map) {
	rng := rand.New(rand.NewPCG(seed, 0x6c61796f))
	const po = 0xffff000000000000
	seg := func(start, size uint64) index.Segment {
		return index.Segment{Vaddr: start, Size: size, Offset: start - po + 0x2000}
	}
	vmStart := uint64(0xffff800080000000)
	vmSize := uint64(n+16) * 64 * page
	segs := []index.Segment{seg(vmStart, 32*page), seg(vmStart, vmSize)}
	a := vmStart + vmSize + 0x100000
	for len(segs) < n {
		a += rng.Uint64N(8) * page
		size := (1 + rng.Uint64N(16)) * page
		segs = append(segs, seg(a, size))
		a += size
	}
	rng.Shuffle(len(segs), func(i, j int) { segs[i], segs[j] = segs[j], segs[i] })
	var bpf []index.Map
	b := vmStart + 64*page
	for range n / 10 {
		b += (1 + rng.Uint64N(32)) * page
		bpf = append(bpf, index.Map{Start: b, End: b + 0x1e8, Kind: index.KindBPFProg, DSO: "bpf_prog"})
	}
	lm := index.Landmarks{Text: index.Landmark{Addr: vmStart, OK: true}, Stext: index.Landmark{Addr: vmStart + 0x10000, OK: true}}
	return segs, lm, bpf
}

// Addresses returns n lookup addresses over the span of maps: uniformly
// random when clustered is false; otherwise in bursts of 64 within one map,
// the way consecutive samples fall.
func Addresses(maps []index.Map, n int, clustered bool, seed uint64) []uint64 {
	rng := rand.New(rand.NewPCG(seed, 0x61646472))
	lo, hi := maps[0].Start, maps[len(maps)-1].End
	out := make([]uint64, n)
	for i := 0; i < n; {
		if !clustered {
			out[i] = lo + rng.Uint64N(hi-lo)
			i++
			continue
		}
		m := maps[rng.IntN(len(maps))]
		for j := 0; j < 64 && i < n; j++ {
			out[i] = m.Start + rng.Uint64N(m.Size())
			i++
		}
	}
	return out
}
