package index_test

import (
	"slices"

	"github.com/kmapindex/kmapindex/index"
)

// perfModel is an independent, literal model of perf mainline's array maps
// (tools/perf/util/maps.c v6.10+, perf-maps-semantics.md §1.8, §1.9, §3.6):
// a slice kept in start order, __maps__fixup_overlap_and_insert and
// maps__merge_in transcribed step by step, and dso__load_kcore with the
// pushed-front segment list and the replacement map inserted first.
type perfModel struct{ a []index.Map }

func (p *perfModel) sort() {
	slices.SortStableFunc(p.a, func(x, y index.Map) int {
		if x.Start != y.Start {
			if x.Start < y.Start {
				return -1
			}
			return 1
		}
		if x.End < y.End {
			return -1
		}
		if x.End > y.End {
			return 1
		}
		return 0
	})
}

func (p *perfModel) insert(m index.Map) { p.a = append(p.a, m); p.sort() }

func (p *perfModel) firstEndingAfter(start uint64) int {
	for i, m := range p.a {
		if m.End > start {
			return i
		}
	}
	return len(p.a)
}

func (p *perfModel) insertAt(i int, ms ...index.Map) {
	p.a = slices.Insert(p.a, i, ms...)
}

func (p *perfModel) fixupOverlapAndInsert(n index.Map) {
	i := p.firstEndingAfter(n.Start)
	for i < len(p.a) {
		pos := p.a[i]
		if pos.Start >= n.End {
			break
		}
		var before, after *index.Map
		if n.Start > pos.Start {
			b := pos
			b.End = n.Start
			before = &b
		}
		if n.End < pos.End {
			a := pos
			a.Start = n.End
			a.Pgoff += n.End - pos.Start
			after = &a
		}
		switch {
		case before != nil && after != nil:
			p.a[i] = *before
			p.insertAt(i+1, n, *after)
			return
		case before != nil:
			p.a[i] = *before
			i++
		case after != nil:
			p.a[i] = n
			p.insertAt(i+1, *after)
			return
		default:
			if i+1 == len(p.a) || p.a[i+1].Start >= n.End {
				p.a[i] = n
				return
			}
			p.a = slices.Delete(p.a, i, i+1)
		}
	}
	p.insertAt(i, n)
}

func (p *perfModel) mergeIn(n index.Map) {
	f := p.firstEndingAfter(n.Start)
	if f == len(p.a) || p.a[f].Start >= n.End {
		p.insert(n)
		return
	}
	old := p.a
	p.a = slices.Clone(old[:f])
	p.insert(n)
	for _, m := range old[f:] {
		p.fixupOverlapAndInsert(m)
	}
}

// loadKcore models dso__load_kcore; segs are in file order.
func (p *perfModel) loadKcore(segs []index.Segment, stext uint64) {
	var md []index.Map // kcore_mapfn pushes to the front
	for _, s := range segs {
		if s.Size == 0 {
			continue
		}
		md = append([]index.Map{{Start: s.Vaddr, End: s.End(), Pgoff: s.Offset, Kind: index.KindKcore, DSO: index.KernelDSO}}, md...)
	}
	p.a = slices.DeleteFunc(p.a, func(m index.Map) bool { return m.Kind != index.KindBPFProg })
	repl := -1
	for i, m := range md {
		if m.Start <= stext && stext < m.End && (repl < 0 || m.End-m.Start < md[repl].End-md[repl].Start) {
			repl = i
		}
	}
	if repl < 0 {
		repl = 0
	}
	kernel := md[repl]
	kernel.Kind = index.KindKernel
	p.insert(kernel)
	for i, m := range md {
		if i != repl {
			p.mergeIn(m)
		}
	}
}
