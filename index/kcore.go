package index

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/google/btree"
)

// segItem is a kcore segment plus its insertion sequence.
type segItem struct {
	Segment
	seq uint64
}

// lessSeg is the kcore segment order: end ascending; on equal end the
// larger start (the subset) first; on an identical range the later-added
// first. It is the order the seed change's list insertion produces: each
// new segment goes before the first node with node.end > new.end, or
// node.end == new.end and node.start <= new.start.
func lessSeg(a, b segItem) bool {
	if ae, be := a.End(), b.End(); ae != be {
		return ae < be
	}
	if a.Vaddr != b.Vaddr {
		return a.Vaddr > b.Vaddr
	}
	return a.seq > b.seq
}

// SegmentOrder is an ordered set of kcore segments in the kcore segment
// order, with O(log n) insertion. The zero value is not usable; call
// NewSegmentOrder.
type SegmentOrder struct {
	tree *btree.BTreeG[segItem]
	seq  uint64
}

// NewSegmentOrder returns an empty SegmentOrder.
func NewSegmentOrder() *SegmentOrder {
	return &SegmentOrder{tree: btree.NewG(btreeDegree, lessSeg)}
}

// Add inserts s.
func (o *SegmentOrder) Add(s Segment) {
	o.seq++
	o.tree.ReplaceOrInsert(segItem{Segment: s, seq: o.seq})
}

// Len returns the number of segments.
func (o *SegmentOrder) Len() int { return o.tree.Len() }

// Segments returns the segments in order.
func (o *SegmentOrder) Segments() []Segment {
	out := make([]Segment, 0, o.tree.Len())
	o.tree.Ascend(func(it segItem) bool {
		out = append(out, it.Segment)
		return true
	})
	return out
}

// OrderSegments returns segs in the kcore segment order, treating later
// elements of segs as added later.
func OrderSegments(segs []Segment) []Segment {
	o := NewSegmentOrder()
	for _, s := range segs {
		o.Add(s)
	}
	return o.Segments()
}

// CheckSegments rejects segments that perf could not use consistently: a
// range that wraps past 2^64, and overlapping segments whose file offsets
// break the linear rule (p_offset - p_vaddr must be equal, as
// fs/proc/kcore.c guarantees). Empty segments are allowed; perf skips them.
// Errors name the segments by their index in segs. It is the one check of
// kcore segments (ingest/kcore.Validate adds only that none is empty).
func CheckSegments(segs []Segment) error {
	var live []int
	for i, s := range segs {
		if s.Size == 0 {
			continue
		}
		if s.Vaddr > math.MaxUint64-s.Size {
			return fmt.Errorf("kcore segment %d %s: vaddr %#x + size %#x overflows 2^64 (the range wraps past 2^64)", i, s, s.Vaddr, s.Size)
		}
		if s.Offset > math.MaxUint64-s.Size {
			return fmt.Errorf("kcore segment %d %s: file range wraps past 2^64", i, s)
		}
		live = append(live, i)
	}
	slices.SortStableFunc(live, func(a, b int) int { return cmp.Compare(segs[a].Vaddr, segs[b].Vaddr) })
	return checkLinear(segs, live)
}

// checkLinear checks the linear rule on the segments segs[i] for i in
// sorted (by start): each segment is compared with the one reaching
// furthest so far, which suffices because overlap chains with equal deltas
// share one delta.
func checkLinear(segs []Segment, sorted []int) error {
	reach := -1 // the segment reaching furthest among those seen
	for _, i := range sorted {
		s := segs[i]
		if reach >= 0 {
			r := segs[reach]
			if s.Vaddr < r.End() && s.Vaddr-s.Offset != r.Vaddr-r.Offset {
				a, b := min(i, reach), max(i, reach)
				return fmt.Errorf("kcore segments %d %s and %d %s overlap but map to different file offsets (p_offset - p_vaddr %#x vs %#x)",
					a, segs[a], b, segs[b], segs[a].Offset-segs[a].Vaddr, segs[b].Offset-segs[b].Vaddr)
			}
		}
		if reach < 0 || s.End() > segs[reach].End() {
			reach = i
		}
	}
	return nil
}

// LoadKcore rebuilds the kernel maps of ms from /proc/kcore program
// headers, as perf mainline's dso__load_kcore does (v6.10+, "replacement
// first"):
//
//  1. every stored map except BPF programs is removed;
//  2. the replacement segment (KcoreKernelSegment: the smallest one
//     holding _stext, else the last header) becomes the kernel map: DSO
//     mapping, pgoff the segment's file offset, kind KindKernel; it is
//     merged in first, so a superset segment (arm64 vmalloc) is cut around
//     it;
//  3. every other segment is merged in (existing maps win) in the kcore
//     segment order, so a subset is never lost to its superset.
//
// When a segment holds _stext the result does not depend on the order of
// segs. It returns the kernel map. Architectures without a kcore text
// segment (ppc64) get the linear-map segment that holds the text. On error
// ms is unchanged.
func LoadKcore(ms *Maps, segs []Segment, lm Landmarks) (Map, error) {
	if err := CheckSegments(segs); err != nil {
		return Map{}, err
	}
	repl, text, err := KcoreKernelSegment(segs, lm)
	if err != nil {
		return Map{}, err
	}
	return LoadKcoreAt(ms, segs, repl, text)
}

// KcoreKernelSegment picks the kernel ("replacement") segment among segs
// (file order) with the kallsyms landmarks lm and returns its index and
// the text address LoadKcoreAt needs. It is perf's choice wherever
// perf's is defined by the layout: the smallest non-empty segment holding
// _stext; when two of equal size do, perf takes the later program header
// and here the first in the kcore segment order, so that the result does
// not depend on header order. When no segment holds _stext (or kallsyms
// has none), perf takes the last program header, and so does this; text
// is then the segment's start.
func KcoreKernelSegment(segs []Segment, lm Landmarks) (repl int, text uint64, err error) {
	if lm.Stext.OK {
		var best Segment
		found := false
		for _, s := range OrderSegments(segs) {
			if s.Size != 0 && s.Contains(lm.Stext.Addr) && (!found || s.Size < best.Size) {
				best, found = s, true
			}
		}
		if found {
			return slices.Index(segs, best), lm.Stext.Addr, nil
		}
	}
	for i := len(segs) - 1; i >= 0; i-- {
		if segs[i].Size != 0 {
			return i, segs[i].Vaddr, nil
		}
	}
	return -1, 0, fmt.Errorf("kcore: no usable program headers")
}

// LoadKcoreAt is LoadKcore with the kernel ("replacement") segment given
// as its index in segs, as KcoreKernelSegment picks it, and text an address
// in it (_stext, or the segment's start when it does not hold _stext): no
// BPF program may cover text, and the piece of the kernel map holding it
// is returned.
func LoadKcoreAt(ms *Maps, segs []Segment, repl int, text uint64) (Map, error) {
	if err := CheckSegments(segs); err != nil {
		return Map{}, err
	}
	if repl < 0 || repl >= len(segs) || segs[repl].Size == 0 {
		return Map{}, fmt.Errorf("kcore: no usable program headers")
	}
	if !segs[repl].Contains(text) {
		return Map{}, fmt.Errorf("kcore: kernel text address %#x outside the kernel segment %s", text, segs[repl])
	}
	for m := range ms.All() {
		if m.Kind == KindBPFProg && m.Contains(text) {
			return Map{}, fmt.Errorf("kcore: BPF program %s covers the kernel text address %#x", m, text)
		}
	}
	rest := make([]Segment, 0, len(segs))
	for i, s := range segs {
		if i != repl && s.Size != 0 {
			rest = append(rest, s)
		}
	}
	ms.RemoveFunc(func(m Map) bool { return m.Kind != KindBPFProg })
	if err := ms.MergeIn(segmentMap(segs[repl], KindKernel)); err != nil {
		return Map{}, fmt.Errorf("kcore: kernel map: %w", err)
	}
	for _, s := range OrderSegments(rest) {
		if err := ms.MergeIn(segmentMap(s, KindKcore)); err != nil {
			return Map{}, fmt.Errorf("kcore: segment %s: %w", s, err)
		}
	}
	got, _ := ms.Find(text) // the replacement holds text and no BPF map does
	return got, nil
}

// segmentMap returns the map of a kcore segment.
func segmentMap(s Segment, kind Kind) Map {
	return Map{Start: s.Vaddr, End: s.End(), Pgoff: s.Offset, Mapping: MappingDSO, Kind: kind, DSO: KernelDSO}
}
