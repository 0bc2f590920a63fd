package index

import (
	"errors"
	"fmt"
	"iter"
	"sync/atomic"

	"github.com/google/btree"
)

// btreeDegree is the google/btree degree: nodes hold up to 2*32-1 maps,
// the degree the library's own benchmarks use.
const btreeDegree = 32

// entry is a stored map: its range inline, the map behind a pointer.
// Small items keep the B-tree's in-node searches, which copy items into
// the less function, cheap.
type entry struct {
	end, start uint64
	m          *Map
}

// lessEntry orders stored entries by end, which orders them by start too,
// since stored maps are disjoint and non-empty. A key (at) with no map
// stands for one address a: it sorts after every entry ending at or
// before a and before every entry starting after a, so the B-tree's Get
// finds the map holding a and AscendGreaterOrEqual starts at the first
// map ending after a.
func lessEntry(x, y entry) bool {
	if x.m == nil {
		return x.start < y.start
	}
	if y.m == nil {
		return x.end <= y.start
	}
	return x.end < y.end
}

// at returns the search key for address a.
func at(a uint64) entry { return entry{start: a} }

// ErrOverlap is returned by Insert when the new map overlaps a stored one.
var ErrOverlap = errors.New("overlaps a stored map")

// Maps is an ordered set of non-overlapping, non-empty maps on a B-tree
// keyed on end address. The zero value is not usable; call New.
//
// Find descends the tree until enough lookups have followed the last
// change to pay for a flat copy (a Snapshot, O(n) to build); from then
// until the next change it answers from that copy. So interleaved changes
// and lookups (a KSYMBOL checks for a map, then inserts one) cost O(log n)
// each, and long runs of lookups (samples between MMAPs) run on a search
// tree of cache lines.
//
// Maps is not safe for concurrent mutation; concurrent Find calls are safe
// when nothing mutates.
type Maps struct {
	tree  *btree.BTreeG[entry]
	flat  atomic.Pointer[Snapshot] // nil after a change
	finds atomic.Int64             // lookups since the last change, while flat is nil
}

// New returns an empty Maps.
func New() *Maps {
	return &Maps{tree: btree.NewG(btreeDegree, lessEntry)}
}

// Len returns the number of stored maps.
func (ms *Maps) Len() int { return ms.tree.Len() }

func (ms *Maps) put(m Map) {
	ms.changed()
	ms.tree.ReplaceOrInsert(entry{end: m.End, start: m.Start, m: &m})
}

func (ms *Maps) delete(e entry) {
	ms.changed()
	ms.tree.Delete(e)
}

// changed drops the flat copy and restarts the count of lookups.
func (ms *Maps) changed() {
	if ms.flat.Load() != nil {
		ms.flat.Store(nil)
	}
	if ms.finds.Load() != 0 {
		ms.finds.Store(0)
	}
}

// flatAfter is how many lookups after a change make Find build the flat
// copy: the O(n) build is then paid for by O(1) lookups each.
func flatAfter(n int) int64 { return int64(max(32, n/8)) }

// Find returns the map with Start <= a < End: from the flat copy when
// there is one, else one descent of the B-tree (Get), which stops at the
// node holding the map.
func (ms *Maps) Find(a uint64) (Map, bool) {
	if s := ms.flat.Load(); s != nil {
		return s.Find(a)
	}
	if ms.finds.Add(1) > flatAfter(ms.tree.Len()) {
		s := ms.Snapshot()
		ms.flat.Store(s) // concurrent finders may each build one; all are equal
		return s.Find(a)
	}
	if e, ok := ms.tree.Get(at(a)); ok {
		return *e.m, true
	}
	return Map{}, false
}

// overlapping returns the stored entries that share an address with
// [start, end), in address order.
func (ms *Maps) overlapping(start, end uint64) []entry {
	var out []entry
	ms.tree.AscendGreaterOrEqual(at(start), func(e entry) bool {
		if e.start >= end {
			return false
		}
		out = append(out, e)
		return true
	})
	return out
}

// Insert stores m, which must not overlap any stored map.
func (ms *Maps) Insert(m Map) error {
	if err := m.Validate(); err != nil {
		return err
	}
	if o := ms.overlapping(m.Start, m.End); len(o) > 0 {
		return fmt.Errorf("insert %s: %w %s", m, ErrOverlap, *o[0].m)
	}
	ms.put(m)
	return nil
}

// FixupOverlapAndInsert stores m and lets it win over every stored map it
// overlaps (perf maps__fixup_overlap_and_insert): a map sticking out before
// m keeps its head with its pgoff, one sticking out after m keeps its tail
// with pgoff advanced by (m.End - old.Start), and a covered map is removed.
func (ms *Maps) FixupOverlapAndInsert(m Map) error {
	if err := m.Validate(); err != nil {
		return err
	}
	for _, e := range ms.overlapping(m.Start, m.End) {
		ms.delete(e)
		o := *e.m
		if o.Start < m.Start {
			ms.put(o.Slice(o.Start, m.Start))
		}
		if m.End < o.End {
			ms.put(o.Slice(m.End, o.End))
		}
	}
	ms.put(m)
	return nil
}

// MergeIn adds m where no stored map is (perf maps__merge_in): existing maps
// win and m is cut into the gaps between them, each piece with its pgoff
// advanced so MapIP stays continuous. No empty piece is stored; a fully
// covered m adds nothing.
func (ms *Maps) MergeIn(m Map) error {
	if err := m.Validate(); err != nil {
		return err
	}
	cur := m.Start
	for _, o := range ms.overlapping(m.Start, m.End) {
		if o.start > cur {
			ms.put(m.Slice(cur, o.start))
		}
		cur = max(cur, o.end)
	}
	if cur < m.End {
		ms.put(m.Slice(cur, m.End))
	}
	return nil
}

// Remove deletes the stored map with m's range and reports whether there
// was one.
func (ms *Maps) Remove(m Map) bool {
	hit, ok := ms.tree.Get(at(m.Start))
	if !ok || hit.start != m.Start || hit.end != m.End {
		return false
	}
	ms.delete(hit)
	return true
}

// RemoveFunc deletes every stored map for which remove returns true and
// returns how many it deleted.
func (ms *Maps) RemoveFunc(remove func(Map) bool) int {
	var doomed []entry
	ms.tree.Ascend(func(e entry) bool {
		if remove(*e.m) {
			doomed = append(doomed, e)
		}
		return true
	})
	for _, e := range doomed {
		ms.delete(e)
	}
	return len(doomed)
}

// All yields the stored maps in address order.
func (ms *Maps) All() iter.Seq[Map] {
	return func(yield func(Map) bool) {
		ms.tree.Ascend(func(e entry) bool { return yield(*e.m) })
	}
}

// Slice returns the stored maps in address order.
func (ms *Maps) Slice() []Map {
	out := make([]Map, 0, ms.tree.Len())
	for m := range ms.All() {
		out = append(out, m)
	}
	return out
}

// Canonical returns the canonical text of the stored maps.
func (ms *Maps) Canonical() string { return Canonical(ms.Slice()) }

// Digest returns the SHA-256 of the canonical text.
func (ms *Maps) Digest() string { return Digest(ms.Canonical()) }

// Clone returns an independent copy that shares nodes copy-on-write, and
// the flat copy if there is one.
func (ms *Maps) Clone() *Maps {
	c := &Maps{tree: ms.tree.Clone()}
	c.flat.Store(ms.flat.Load())
	return c
}

// Check verifies the invariants: address order, no overlap, no empty map.
// It exists for tests and fuzzers.
func (ms *Maps) Check() error { return CheckOrdered(ms.Slice()) }

// CheckOrdered verifies that maps are non-empty, ascending and disjoint.
func CheckOrdered(maps []Map) error {
	for i, m := range maps {
		if err := m.Validate(); err != nil {
			return fmt.Errorf("map %d: %w", i, err)
		}
		if i > 0 && maps[i-1].End > m.Start {
			return fmt.Errorf("map %d %s overlaps or precedes map %d %s", i, m, i-1, maps[i-1])
		}
	}
	return nil
}
