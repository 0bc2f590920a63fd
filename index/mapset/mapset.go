// Package mapset puts the two map implementations — the B-tree of
// package index and the list reference of package listref — behind one
// interface, so that callers (corpus, ingest, bench) run the same work on
// either and compare the results.
package mapset

import (
	"fmt"
	"iter"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/listref"
)

// Set is an ordered set of non-overlapping maps.
type Set interface {
	Find(uint64) (index.Map, bool)
	Insert(index.Map) error
	FixupOverlapAndInsert(index.Map) error
	MergeIn(index.Map) error
	Remove(index.Map) bool
	RemoveFunc(func(index.Map) bool) int
	All() iter.Seq[index.Map]
	Slice() []index.Map
	Len() int
	Canonical() string
	Digest() string
}

// Finder is a read-only map set: any number of goroutines may call Find
// at once.
type Finder interface {
	Find(uint64) (index.Map, bool)
	Len() int
}

// Impl is one implementation of Set and of the kernel-map builders.
type Impl struct {
	Name string
	// New returns an empty set.
	New func() Set
	// Clone returns an independent copy of s, which must come from this
	// Impl.
	Clone func(s Set) Set
	// Freeze returns an immutable copy of s's current maps, safe for
	// concurrent lookups while s goes on changing: O(1) for the B-tree
	// (copy-on-write), O(n) for the list.
	Freeze func(s Set) Finder
	// KernelMaps builds the kernel maps perf builds without kcore.
	KernelMaps func(index.Landmarks, []index.Module) (Set, error)
	// LoadKcore rebuilds the kernel maps of s from kcore segments.
	LoadKcore func(s Set, segs []index.Segment, lm index.Landmarks) (index.Map, error)
	// LoadKcoreAt rebuilds them with segs[repl] as the kernel map and
	// text an address in it (index.LoadKcoreAt).
	LoadKcoreAt func(s Set, segs []index.Segment, repl int, text uint64) (index.Map, error)
}

// BTree is the B-tree of package index, whose Find answers from a flat
// copy once enough lookups follow a change (index.Maps), behind a
// last-hit cache: consecutive lookups tend to fall in one map.
var BTree = Impl{
	Name:   "btree",
	New:    func() Set { return newTree(index.New()) },
	Clone:  func(s Set) Set { return newTree(s.(*tree).Maps.Clone()) },
	Freeze: func(s Set) Finder { return s.(*tree).Maps.Clone() },
	KernelMaps: func(lm index.Landmarks, mods []index.Module) (Set, error) {
		ms, err := index.KernelMaps(lm, mods)
		if err != nil {
			return nil, err
		}
		return newTree(ms), nil
	},
	LoadKcore: func(s Set, segs []index.Segment, lm index.Landmarks) (index.Map, error) {
		t := s.(*tree)
		t.changed()
		return index.LoadKcore(t.Maps, segs, lm)
	},
	LoadKcoreAt: func(s Set, segs []index.Segment, repl int, text uint64) (index.Map, error) {
		t := s.(*tree)
		t.changed()
		return index.LoadKcoreAt(t.Maps, segs, repl, text)
	},
}

// List is the linked-list reference of package listref.
var List = Impl{
	Name:   "list",
	New:    func() Set { return &listref.Maps{} },
	Clone:  func(s Set) Set { return s.(*listref.Maps).Clone() },
	Freeze: func(s Set) Finder { return s.(*listref.Maps).Clone() },
	KernelMaps: func(lm index.Landmarks, mods []index.Module) (Set, error) {
		return listref.KernelMaps(lm, mods)
	},
	LoadKcore: func(s Set, segs []index.Segment, lm index.Landmarks) (index.Map, error) {
		return listref.LoadKcore(s.(*listref.Maps), segs, lm)
	},
	LoadKcoreAt: func(s Set, segs []index.Segment, repl int, text uint64) (index.Map, error) {
		return listref.LoadKcoreAt(s.(*listref.Maps), segs, repl, text)
	},
}

// All lists the implementations, B-tree first.
var All = []Impl{BTree, List}

// ByName returns the implementation called name ("btree" or "list").
func ByName(name string) (Impl, error) {
	for _, im := range All {
		if im.Name == name {
			return im, nil
		}
	}
	return Impl{}, fmt.Errorf("unknown implementation %q (want btree or list)", name)
}

// tree is an index.Maps with a last-hit cache.
type tree struct {
	*index.Maps
	last    index.Map
	hasLast bool // last is a stored map; false after a change
}

func newTree(ms *index.Maps) *tree { return &tree{Maps: ms} }

func (t *tree) changed() { t.hasLast = false }

func (t *tree) Find(a uint64) (index.Map, bool) {
	if t.hasLast && t.last.Contains(a) {
		return t.last, true
	}
	m, ok := t.Maps.Find(a)
	if ok {
		t.last, t.hasLast = m, true
	}
	return m, ok
}

func (t *tree) Insert(m index.Map) error { t.changed(); return t.Maps.Insert(m) }

func (t *tree) FixupOverlapAndInsert(m index.Map) error {
	t.changed()
	return t.Maps.FixupOverlapAndInsert(m)
}

func (t *tree) MergeIn(m index.Map) error { t.changed(); return t.Maps.MergeIn(m) }

func (t *tree) Remove(m index.Map) bool { t.changed(); return t.Maps.Remove(m) }

func (t *tree) RemoveFunc(f func(index.Map) bool) int { t.changed(); return t.Maps.RemoveFunc(f) }
