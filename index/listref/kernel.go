package listref

import (
	"fmt"
	"math"

	"github.com/kmapindex/kmapindex/index"
)

type segNode struct {
	s    index.Segment
	next *segNode
}

// OrderSegments puts segments in the kcore segment order with the seed
// change's loop: each segment is inserted before the first node with
// node.end > new.end, or node.end == new.end and node.start <= new.start;
// otherwise it is appended.
func OrderSegments(segs []index.Segment) []index.Segment {
	var head *segNode
	for _, s := range segs {
		pp := &head
		for *pp != nil {
			n := (*pp).s
			if n.End() > s.End() || (n.End() == s.End() && n.Vaddr <= s.Vaddr) {
				break
			}
			pp = &(*pp).next
		}
		*pp = &segNode{s: s, next: *pp}
	}
	var out []index.Segment
	for p := head; p != nil; p = p.next {
		out = append(out, p.s)
	}
	return out
}

// CheckSegments compares every pair of segments: none may wrap past 2^64,
// and overlapping ones must have equal p_offset - p_vaddr.
func CheckSegments(segs []index.Segment) error {
	for i, a := range segs {
		if a.Size == 0 {
			continue
		}
		if a.Vaddr+a.Size < a.Vaddr || a.Vaddr+a.Size == 0 || a.Offset+a.Size < a.Offset || a.Offset+a.Size == 0 {
			return fmt.Errorf("kcore segment %d %s: range wraps past 2^64", i, a)
		}
		for _, b := range segs[:i] {
			if b.Size == 0 {
				continue
			}
			if a.Vaddr < b.End() && b.Vaddr < a.End() && a.Vaddr-a.Offset != b.Vaddr-b.Offset {
				return fmt.Errorf("kcore segments %s and %s overlap but map to different file offsets", b, a)
			}
		}
	}
	return nil
}

// LoadKcore is the reference for index.LoadKcore: the kernel segment is
// the smallest holding _stext, the first of equals in the kcore segment
// order; else the last non-empty header; the rest as LoadKcoreAt.
func LoadKcore(l *Maps, segs []index.Segment, lm index.Landmarks) (index.Map, error) {
	if err := CheckSegments(segs); err != nil {
		return index.Map{}, err
	}
	holds := func(s index.Segment) bool {
		return lm.Stext.OK && s.Size != 0 && s.Vaddr <= lm.Stext.Addr && lm.Stext.Addr < s.End()
	}
	var best index.Segment
	found := false
	for _, s := range OrderSegments(segs) {
		if holds(s) && (!found || s.Size < best.Size) {
			best, found = s, true
		}
	}
	if found {
		for i, s := range segs {
			if s == best {
				return LoadKcoreAt(l, segs, i, lm.Stext.Addr)
			}
		}
	}
	for i := len(segs) - 1; i >= 0; i-- {
		if segs[i].Size != 0 {
			return LoadKcoreAt(l, segs, i, segs[i].Vaddr)
		}
	}
	return index.Map{}, fmt.Errorf("kcore: no usable program headers")
}

// LoadKcoreAt is the reference for index.LoadKcoreAt.
func LoadKcoreAt(l *Maps, segs []index.Segment, repl int, text uint64) (index.Map, error) {
	if err := CheckSegments(segs); err != nil {
		return index.Map{}, err
	}
	if repl < 0 || repl >= len(segs) || segs[repl].Size == 0 {
		return index.Map{}, fmt.Errorf("kcore: no usable program headers")
	}
	kseg := segs[repl]
	if !(kseg.Vaddr <= text && text < kseg.End()) {
		return index.Map{}, fmt.Errorf("kcore: kernel text address %#x outside the kernel segment %s", text, kseg)
	}
	for p := l.head; p != nil; p = p.next {
		if p.m.Kind == index.KindBPFProg && p.m.Start <= text && text < p.m.End {
			return index.Map{}, fmt.Errorf("kcore: BPF program %s covers the kernel text address %#x", p.m, text)
		}
	}
	var rest []index.Segment
	for i, s := range segs {
		if i != repl && s.Size != 0 {
			rest = append(rest, s)
		}
	}
	l.RemoveFunc(func(m index.Map) bool { return m.Kind != index.KindBPFProg })
	toMap := func(s index.Segment, k index.Kind) index.Map {
		return index.Map{Start: s.Vaddr, End: s.Vaddr + s.Size, Pgoff: s.Offset, Mapping: index.MappingDSO, Kind: k, DSO: index.KernelDSO}
	}
	if err := l.MergeIn(toMap(kseg, index.KindKernel)); err != nil {
		return index.Map{}, err
	}
	for _, s := range OrderSegments(rest) {
		if err := l.MergeIn(toMap(s, index.KindKcore)); err != nil {
			return index.Map{}, err
		}
	}
	kernel, _ := l.Find(text)
	return kernel, nil
}

// FixupEnd is the reference for index.FixupEnd: insertion sort by
// (start, end), then each map with end 0 or reaching past the next start
// ends at that start; a last map with end 0 ends at 2^64-1.
func FixupEnd(maps []index.Map) []index.Map {
	var out []index.Map
	for _, m := range maps {
		i := len(out)
		for i > 0 && (out[i-1].Start > m.Start || (out[i-1].Start == m.Start && out[i-1].End > m.End)) {
			i--
		}
		out = append(out, index.Map{})
		copy(out[i+1:], out[i:])
		out[i] = m
	}
	for i := 0; i+1 < len(out); i++ {
		if out[i].End == 0 || out[i].End > out[i+1].Start {
			out[i].End = out[i+1].Start
		}
	}
	if n := len(out); n > 0 && out[n-1].End == 0 {
		out[n-1].End = math.MaxUint64
	}
	return out
}

// KernelMaps is the reference for index.KernelMaps.
func KernelMaps(lm index.Landmarks, modules []index.Module) (*Maps, error) {
	var kernel index.Map
	switch {
	case lm.Text.OK:
		kernel.Start = lm.Text.Addr
	case lm.Stext.OK:
		kernel.Start = lm.Stext.Addr
	default:
		return nil, fmt.Errorf("kernel maps: kallsyms has neither _text nor _stext")
	}
	kernel.Mapping, kernel.Kind, kernel.DSO = index.MappingIdentity, index.KindKernel, index.KernelDSO
	if lm.Edata.OK {
		kernel.End = lm.Edata.Addr
	} else if lm.Etext.OK {
		kernel.End = lm.Etext.Addr
	}
	if kernel.End != 0 && kernel.End < kernel.Start {
		return nil, fmt.Errorf("kernel maps: kernel end %#x before _text %#x", kernel.End, kernel.Start)
	}
	all := []index.Map{kernel}
	for _, mod := range modules {
		if mod.Start == 0 {
			return nil, fmt.Errorf("kernel maps: module %s has address 0 (addresses restricted by kptr_restrict?)", mod.Where())
		}
		end := mod.Start + mod.Size
		if end < mod.Start || (end == 0 && mod.Size != 0) {
			return nil, fmt.Errorf("kernel maps: module %s [%#x, +%#x) wraps past 2^64", mod.Name, mod.Start, mod.Size)
		}
		all = append(all, index.Map{Start: mod.Start, End: end, Kind: index.KindModule, DSO: "[" + mod.Name + "]"})
	}
	l := &Maps{}
	for _, m := range FixupEnd(all) {
		if m.Start != m.End {
			if err := l.Insert(m); err != nil {
				return nil, fmt.Errorf("kernel maps: %w", err)
			}
		}
	}
	return l, nil
}
