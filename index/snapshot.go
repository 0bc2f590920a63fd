package index

// Snapshot is an immutable, flat copy of a Maps for the lookup hot path:
// the ends in one sorted []uint64 searched without data-dependent
// branches, the maps beside them. Any number of goroutines may read one
// Snapshot; rebuild it (Maps.Snapshot) when the maps change.
type Snapshot struct {
	ends []uint64
	maps []Map
}

// Snapshot returns a flat copy of the current maps.
func (ms *Maps) Snapshot() *Snapshot {
	s := &Snapshot{ends: make([]uint64, 0, ms.Len()), maps: make([]Map, 0, ms.Len())}
	for m := range ms.All() {
		s.ends = append(s.ends, m.End)
		s.maps = append(s.maps, m)
	}
	return s
}

// Len returns the number of maps.
func (s *Snapshot) Len() int { return len(s.maps) }

// Map returns the i'th map in address order.
func (s *Snapshot) Map(i int) Map { return s.maps[i] }

// Index returns the position of the map holding a, or -1.
func (s *Snapshot) Index(a uint64) int {
	ends := s.ends
	// Lower bound of the first end > a; the loop body compiles to a
	// conditional move, so its cost does not depend on the data.
	lo, n := 0, len(ends)
	for n > 1 {
		half := n / 2
		if ends[lo+half-1] <= a {
			lo += half
		}
		n -= half
	}
	if n == 1 && ends[lo] <= a {
		lo++
	}
	if lo < len(ends) && s.maps[lo].Start <= a {
		return lo
	}
	return -1
}

// Find returns the map holding a.
func (s *Snapshot) Find(a uint64) (Map, bool) {
	if i := s.Index(a); i >= 0 {
		return s.maps[i], true
	}
	return Map{}, false
}

// Finder is a Snapshot reader with a last-hit cache, for one goroutine:
// consecutive samples tend to fall in the same map.
type Finder struct {
	s    *Snapshot
	last int
}

// NewFinder returns a Finder over s.
func NewFinder(s *Snapshot) *Finder { return &Finder{s: s, last: -1} }

// Index returns the position of the map holding a, or -1.
func (f *Finder) Index(a uint64) int {
	if f.last >= 0 && f.s.maps[f.last].Contains(a) {
		return f.last
	}
	i := f.s.Index(a)
	if i >= 0 {
		f.last = i
	}
	return i
}

// Find returns the map holding a.
func (f *Finder) Find(a uint64) (Map, bool) {
	if i := f.Index(a); i >= 0 {
		return f.s.maps[i], true
	}
	return Map{}, false
}
