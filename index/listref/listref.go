// Package listref is the reference implementation of package index: the
// same rules written the obvious way on a linked list, for correctness,
// never for speed. Tests and benchmarks compare the B-tree against it. It
// shares only the data types (index.Map, index.Segment, ...) with the
// B-tree code.
package listref

import (
	"fmt"
	"iter"

	"github.com/kmapindex/kmapindex/index"
)

type node struct {
	m    index.Map
	next *node
}

// Maps is a list of non-overlapping, non-empty maps in address order.
// The zero value is an empty list.
type Maps struct {
	head *node
	n    int
}

// Len returns the number of maps.
func (l *Maps) Len() int { return l.n }

// All yields the maps in address order.
func (l *Maps) All() iter.Seq[index.Map] {
	return func(yield func(index.Map) bool) {
		for p := l.head; p != nil; p = p.next {
			if !yield(p.m) {
				return
			}
		}
	}
}

// Slice returns the maps in address order.
func (l *Maps) Slice() []index.Map {
	var out []index.Map
	for p := l.head; p != nil; p = p.next {
		out = append(out, p.m)
	}
	return out
}

// Canonical returns the canonical text of the maps.
func (l *Maps) Canonical() string { return index.Canonical(l.Slice()) }

// Digest returns the SHA-256 of the canonical text.
func (l *Maps) Digest() string { return index.Digest(l.Canonical()) }

// Find walks the list for the map with Start <= a < End.
func (l *Maps) Find(a uint64) (index.Map, bool) {
	for p := l.head; p != nil; p = p.next {
		if p.m.Start <= a && a < p.m.End {
			return p.m, true
		}
	}
	return index.Map{}, false
}

// link puts m at its place in address order (before the first map that
// starts after it).
func (l *Maps) link(m index.Map) {
	pp := &l.head
	for *pp != nil && (*pp).m.Start < m.Start {
		pp = &(*pp).next
	}
	*pp = &node{m: m, next: *pp}
	l.n++
}

func overlaps(a, b index.Map) bool { return a.Start < b.End && b.Start < a.End }

func checkMap(m index.Map) error {
	if m.End < m.Start {
		return fmt.Errorf("map %s: end %#x before start %#x", m.DSO, m.End, m.Start)
	}
	if m.End == m.Start {
		return fmt.Errorf("map %s: empty range at %#x", m.DSO, m.Start)
	}
	return nil
}

// Insert links m, which must not overlap any map in the list.
func (l *Maps) Insert(m index.Map) error {
	if err := checkMap(m); err != nil {
		return err
	}
	for p := l.head; p != nil; p = p.next {
		if overlaps(p.m, m) {
			return fmt.Errorf("insert %s: %w %s", m, index.ErrOverlap, p.m)
		}
	}
	l.link(m)
	return nil
}

// FixupOverlapAndInsert links m after cutting every overlapping map: the
// part before m keeps its pgoff, the part after m gets
// pgoff + (m.End - old.Start), and a covered map disappears.
func (l *Maps) FixupOverlapAndInsert(m index.Map) error {
	if err := checkMap(m); err != nil {
		return err
	}
	// Walk the list once: cut each overlapping node in place and link m
	// in front of the first node that starts at or after it.
	pp := &l.head
	for *pp != nil {
		p := *pp
		old := p.m
		if !overlaps(old, m) {
			if old.Start >= m.End {
				break
			}
			pp = &p.next
			continue
		}
		switch {
		case old.Start < m.Start && m.End < old.End: // split in two around m
			after := old
			after.Start = m.End
			after.Pgoff = old.Pgoff + (m.End - old.Start)
			p.m.End = m.Start
			p.next = &node{m: after, next: p.next}
			l.n++
			pp = &p.next
		case old.Start < m.Start: // keep the head
			p.m.End = m.Start
			pp = &p.next
		case m.End < old.End: // keep the tail
			p.m.Start = m.End
			p.m.Pgoff = old.Pgoff + (m.End - old.Start)
			pp = &p.next
		default: // covered: unlink
			*pp = p.next
			l.n--
		}
	}
	// *pp is now the first node past m's head; find m's place from the top
	// to stay obviously right.
	l.link(m)
	return nil
}

// MergeIn walks the list in address order clipping m against each map it
// meets (the rbtree-era perf algorithm, minus its empty pieces): a part of
// m before an existing map becomes a piece, the rest continues past that
// map, and whatever is left at the end is the last piece.
func (l *Maps) MergeIn(m index.Map) error {
	if err := checkMap(m); err != nil {
		return err
	}
	var pieces []index.Map
	rest := m
	dropped := false
	for p := l.head; p != nil; p = p.next {
		old := p.m
		if !overlaps(old, rest) {
			continue
		}
		if rest.Start < old.Start {
			piece := rest
			piece.End = old.Start
			pieces = append(pieces, piece)
		}
		if rest.End <= old.End {
			dropped = true
			break
		}
		rest.Pgoff += old.End - rest.Start
		rest.Start = old.End
	}
	if !dropped {
		pieces = append(pieces, rest)
	}
	for _, piece := range pieces {
		l.link(piece)
	}
	return nil
}

// Remove unlinks the map with m's range.
func (l *Maps) Remove(m index.Map) bool {
	for pp := &l.head; *pp != nil; pp = &(*pp).next {
		if (*pp).m.Start == m.Start && (*pp).m.End == m.End {
			*pp = (*pp).next
			l.n--
			return true
		}
	}
	return false
}

// RemoveFunc unlinks every map for which remove returns true.
func (l *Maps) RemoveFunc(remove func(index.Map) bool) int {
	removed := 0
	for pp := &l.head; *pp != nil; {
		if remove((*pp).m) {
			*pp = (*pp).next
			l.n--
			removed++
			continue
		}
		pp = &(*pp).next
	}
	return removed
}

// Clone returns a copy of the list.
func (l *Maps) Clone() *Maps {
	c := &Maps{n: l.n}
	pp := &c.head
	for p := l.head; p != nil; p = p.next {
		*pp = &node{m: p.m}
		pp = &(*pp).next
	}
	return c
}
