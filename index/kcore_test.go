package index_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/listref"
)

// The arm64 inputs of vectors K1–K5 (perf-maps-semantics.md §3.11).
const (
	pageOffset = 0xffff000000000000
	dataOff    = 0x2000
	text       = 0xffff800080000000
	stext      = 0xffff800080010000
	edata      = 0xffff800082229200
	end        = 0xffff8000822f0000
	bpfStart   = 0xffff800082545aac
	bpfEnd     = 0xffff800082545c94
)

func seg(start, end uint64) index.Segment {
	return index.Segment{Vaddr: start, Size: end - start, Offset: start - pageOffset + dataOff}
}

var (
	k1Segments = []index.Segment{ // file order
		seg(text, end),
		seg(0xffff800080000000, 0xfffffdffbf800000), // vmalloc
		seg(0xffff800000000000, 0xffff800080000000), // modules
		seg(0xffff000000000000, 0xffff00001ac00000), // RAM
		seg(0xfffffdffc0000000, 0xfffffdffc06b0000), // vmemmap
	}
	k1Landmarks = index.Landmarks{
		Text:  index.Landmark{Addr: text, OK: true},
		Stext: index.Landmark{Addr: stext, OK: true},
		Edata: index.Landmark{Addr: edata, OK: true},
		End:   index.Landmark{Addr: end, OK: true},
	}
	k1BPF = index.Map{Start: bpfStart, End: bpfEnd, Kind: index.KindBPFProg, DSO: "bpf_prog_6deef7357e7b4530_sd_fw_egress"}
)

// k1Before fills ms with the kernel maps before kcore: the identity kernel
// map, a module and a BPF program.
func k1Before(t *testing.T, ms impl) {
	t.Helper()
	for _, x := range []index.Map{
		{Start: text, End: edata, Mapping: index.MappingIdentity, Kind: index.KindKernel, DSO: index.KernelDSO},
		{Start: 0xffff80007b1e0000, End: 0xffff80007b22a000, Kind: index.KindModule, DSO: "[nf_tables]"},
		k1BPF,
	} {
		if err := ms.Insert(x); err != nil {
			t.Fatal(err)
		}
	}
}

const k1Want = `ffff000000000000-ffff00001ac00000 2000 dso kcore [kernel.kallsyms]
ffff800000000000-ffff800080000000 800000002000 dso kcore [kernel.kallsyms]
ffff800080000000-ffff8000822f0000 800080002000 dso kernel [kernel.kallsyms]
ffff8000822f0000-ffff800082545aac 8000822f2000 dso kcore [kernel.kallsyms]
ffff800082545aac-ffff800082545c94 0 dso bpf_prog bpf_prog_6deef7357e7b4530_sd_fw_egress
ffff800082545c94-fffffdffbf800000 800082547c94 dso kcore [kernel.kallsyms]
fffffdffc0000000-fffffdffc06b0000 fdffc0002000 dso kcore [kernel.kallsyms]
`

// K1 (mainline) and K4 (Leo Yan v3: the same ranges and offsets, the
// kernel map being the kcore text map), for every order of the segments.
func TestVectorK1K4(t *testing.T) {
	orders := [][]index.Segment{k1Segments, reversed(k1Segments)}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		s := slices.Clone(k1Segments)
		rng.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
		orders = append(orders, s)
	}
	for _, im := range impls {
		for i, segs := range orders {
			ms := im.new()
			k1Before(t, ms)
			kernel, err := im.loadKcore(ms, segs, k1Landmarks)
			if err != nil {
				t.Fatalf("impl=%s order %d: %v", im.name, i, err)
			}
			if got := ms.Canonical(); got != k1Want {
				t.Fatalf("impl=%s order %d:\n%swant\n%s", im.name, i, got, k1Want)
			}
			if kernel.Start != text || kernel.End != end || kernel.Kind != index.KindKernel || kernel.Mapping != index.MappingDSO {
				t.Errorf("impl=%s kernel map %s", im.name, kernel)
			}
			for _, tc := range []struct{ ip, want uint64 }{
				{stext, 0x800080012000},
				{0xffff800082229210, 0x80008222b210}, // bss: covered since kcore
				{0xffff800082545b00, 0x54},           // inside the BPF program
				{0xffff8000822f0040, 0x8000822f2040}, // vmalloc piece
			} {
				got, ok := ms.Find(tc.ip)
				if !ok || got.MapIP(tc.ip) != tc.want {
					t.Errorf("impl=%s Find(%#x) = %v, map_ip %#x, want %#x", im.name, tc.ip, got, got.MapIP(tc.ip), tc.want)
				}
			}
		}
	}
}

func reversed[T any](s []T) []T {
	r := slices.Clone(s)
	slices.Reverse(r)
	return r
}

// naiveMergeInOrder is the "subset lost" model of vector K5: old maps but
// BPF removed, no replacement, segments merged in the order given.
func naiveMergeInOrder(segs []index.Segment) *index.Maps {
	ms := index.New()
	ms.Insert(k1BPF)
	for _, s := range segs {
		ms.MergeIn(index.Map{Start: s.Vaddr, End: s.End(), Pgoff: s.Offset, Kind: index.KindKcore, DSO: index.KernelDSO})
	}
	return ms
}

// K5 as a negative: merging in perf's pushed-front order (vmalloc before
// text) loses the text map; the kcore segment order keeps it even without
// the replacement step, and offsets stay right either way.
func TestVectorK5(t *testing.T) {
	hasText := func(ms *index.Maps) bool {
		for x := range ms.All() {
			if x.Start == text && x.End == end {
				return true
			}
		}
		return false
	}
	lost := naiveMergeInOrder(reversed(k1Segments))
	if hasText(lost) {
		t.Fatal("pushed-front order kept the text map; the K5 model is wrong")
	}
	if got, _ := lost.Find(text); got.Start != text || got.End != bpfStart {
		t.Errorf("K5: text address in %s, want the swallowing vmalloc piece [text, bpf)", got)
	}
	kept := naiveMergeInOrder(index.OrderSegments(reversed(k1Segments)))
	if !hasText(kept) {
		t.Errorf("kcore segment order lost the text map:\n%s", kept.Canonical())
	}
	for _, ms := range []*index.Maps{lost, kept} {
		if got, _ := ms.Find(stext); got.MapIP(stext) != 0x800080012000 {
			t.Errorf("offset of _stext %#x", got.MapIP(stext))
		}
	}
}

// The seed's ordering rule, checked against the list loop on random sets
// with many equal ends and identical ranges.
func TestSegmentOrderMatchesSeedLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		n := rng.IntN(30)
		var segs []index.Segment
		for range n {
			start := uint64(rng.IntN(8)) * 0x1000
			size := uint64(1+rng.IntN(8)) * 0x1000
			segs = append(segs, index.Segment{Vaddr: start, Size: size, Offset: uint64(len(segs))}) // offset tags identity
		}
		got, want := index.OrderSegments(segs), listref.OrderSegments(segs)
		if !slices.Equal(got, want) {
			t.Fatalf("btree %v\nlist  %v", got, want)
		}
	}
}

// With no segment holding _stext (or no _stext), perf makes the last
// program header the kernel map (the head of its pushed-front list).
func TestLoadKcoreFallback(t *testing.T) {
	for _, tc := range []struct {
		name string
		segs []index.Segment
		lm   index.Landmarks
	}{
		{"no _stext", k1Segments, index.Landmarks{Text: k1Landmarks.Text}},
		{"no segment holds _stext", k1Segments[3:], k1Landmarks},
	} {
		for _, im := range impls {
			ms := im.new()
			k1Before(t, ms)
			kernel, err := im.loadKcore(ms, tc.segs, tc.lm)
			last := tc.segs[len(tc.segs)-1]
			if err != nil || kernel.Start != last.Vaddr || kernel.End != last.End() || kernel.Pgoff != last.Offset || kernel.Kind != index.KindKernel {
				t.Errorf("%s impl=%s: kernel map %s, %v; want the last header %s", tc.name, im.name, kernel, err, last)
			}
		}
	}
}

func TestLoadKcoreErrors(t *testing.T) {
	tests := []struct {
		name string
		segs []index.Segment
		lm   index.Landmarks
		want string
	}{
		{"no headers", nil, k1Landmarks, "no usable program headers"},
		{"linear rule", []index.Segment{seg(text, end), {Vaddr: 0xffff800080000000, Size: 0x1000000, Offset: 0x5000}}, k1Landmarks, "different file offsets"},
		{"wraps", []index.Segment{seg(text, end), {Vaddr: 0xfffffffffffff000, Size: 0x2000, Offset: 0}}, k1Landmarks, "wraps"},
	}
	for _, tc := range tests {
		for _, im := range impls {
			ms := im.new()
			k1Before(t, ms)
			before := ms.Canonical()
			_, err := im.loadKcore(ms, tc.segs, tc.lm)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s impl=%s: err = %v, want %q", tc.name, im.name, err, tc.want)
			}
			if ms.Canonical() != before {
				t.Errorf("%s impl=%s: maps changed on error", tc.name, im.name)
			}
		}
	}
	// A BPF program over the text address.
	for _, im := range impls {
		ms := im.new()
		ms.Insert(index.Map{Start: stext, End: stext + 8, Kind: index.KindBPFProg, DSO: "bpf_prog_x"})
		if _, err := im.loadKcore(ms, k1Segments, k1Landmarks); err == nil || !strings.Contains(err.Error(), "BPF program") {
			t.Errorf("impl=%s: BPF over text: %v", im.name, err)
		}
	}
}

// ppc64: no kcore text segment; the linear-map segment holding _stext
// becomes the kernel map.
func TestLoadKcorePPC64(t *testing.T) {
	const po = 0xc000000000000000
	segs := []index.Segment{
		{Vaddr: po, Size: 0x80000000, Offset: 0x1000},                          // RAM, holds the kernel
		{Vaddr: 0xc008000000000000, Size: 0x10000000, Offset: 0x8000000001000}, // vmalloc
	}
	lm := index.Landmarks{Text: index.Landmark{Addr: po, OK: true}, Stext: index.Landmark{Addr: po, OK: true}}
	for _, im := range impls {
		ms := im.new()
		kernel, err := im.loadKcore(ms, segs, lm)
		if err != nil {
			t.Fatal(err)
		}
		if kernel.Start != po || kernel.End != po+0x80000000 || kernel.Kind != index.KindKernel || kernel.MapIP(po+0x100) != 0x1100 {
			t.Errorf("impl=%s kernel %s", im.name, kernel)
		}
	}
}
