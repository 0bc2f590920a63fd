package attrib

// chunked is a sequence that grows in chunks of 1<<chunkBits elements
// that never move. Appending copies nothing: the children table's
// entries (keys and meta, 96 bytes each) in slices that doubled took
// 27 ms of a 0.8 s run, most of it copying them, and held up to twice
// their size. A prefix (prefix) handed to another goroutine stays valid
// while the sequence grows past it.
type chunked[T any] struct {
	chunks [][]T
	n      int
}

const chunkBits = 12

// len returns the number of elements.
func (c *chunked[T]) len() int { return c.n }

// at returns a copy of element i; ptr reads one of its fields without
// copying it.
func (c *chunked[T]) at(i int32) T { return *c.ptr(i) }

// ptr returns the address of element i.
func (c *chunked[T]) ptr(i int32) *T {
	return &c.chunks[i>>chunkBits][i&(1<<chunkBits-1)]
}

// append appends v and returns its index.
func (c *chunked[T]) append(v T) int32 {
	if c.n>>chunkBits == len(c.chunks) {
		c.chunks = append(c.chunks, make([]T, 1<<chunkBits))
	}
	i := int32(c.n)
	*c.ptr(i) = v
	c.n++
	return i
}

// prefix returns the first n elements, which later appends leave alone.
func (c *chunked[T]) prefix(n int) chunked[T] {
	k := (n + 1<<chunkBits - 1) >> chunkBits
	return chunked[T]{chunks: c.chunks[:k:k], n: n}
}

// entryMetas is each accumulator entry's meta, kept only for the entries
// that have one (a symbol's or an inlined function's): a large children
// table's entries are mostly addresses without a symbol, whose meta is
// zero (382 k of a gcc build's 514 k, 12 MB as 32-byte metas).
type entryMetas struct {
	of    chunked[uint32] // per entry: 1 + the index of its meta, 0 for none
	metas chunked[entryMeta]
}

// append adds an entry with a zero meta.
func (m *entryMetas) append() { m.of.append(0) }

// len returns the number of entries.
func (m *entryMetas) len() int { return m.of.len() }

// at returns entry i's meta.
func (m *entryMetas) at(i int32) entryMeta {
	if x := m.of.at(i); x != 0 {
		return m.metas.at(int32(x - 1))
	}
	return entryMeta{}
}

// set sets entry i's meta.
func (m *entryMetas) set(i int32, v entryMeta) {
	x := m.of.ptr(i)
	if *x == 0 {
		if v == (entryMeta{}) {
			return
		}
		*x = uint32(m.metas.append(v)) + 1
		return
	}
	*m.metas.ptr(int32(*x - 1)) = v
}

// prefix returns the metas of the first n entries, which later appends
// and sets of other entries leave alone.
func (m *entryMetas) prefix(n int) entryMetas {
	return entryMetas{of: m.of.prefix(n), metas: m.metas.prefix(m.metas.len())}
}
