package attrib

import (
	"unsafe"

	"github.com/kmapindex/kmapindex/ingest/machine"
)

// A rowCache finds a sample's row in a table by sort keys from what
// sample knows of it (rowHint: its map's counts and its symbol, or its
// address where it has none) instead of from its key. rowCounter.add hashed each sample's RowKey, three
// strings and more, or with the comm key searched perf's tree of hist
// entries with it: on the 2.91 M-sample -a recording, -sort pid,dso,sym
// and comm,dso,sym took 6 times as long as the dso,sym table.
//
// Without a tree, rows are keyed by what the cache key holds: a final
// table's symbol i in st's map has one DSO and one symbol (an address
// without a symbol, one DSO and that address), and the thread's
// command-name entry (a pointer), its tid and the CPU are taken as the
// keys need them. The answer never changes.
//
// With a tree (the comm key, and sym only with dso, outside children
// tables), perf's search for a sample finds the entry equal to it, or
// makes one, wherever the tree's shape put the entries, as long as its
// in-order walk is strictly increasing under the comparison and the
// comparison is an order. Then the search's answer for a key is the
// same until an entry changes its name: that answer is what the cache
// keeps. Two things break the order:
//   - a command-name entry renamed in place (a thread's first name,
//     machine.OnCommRename): the entries holding it compare by the new
//     name. Each is then checked against its neighbours in the walk; and
//     the answers cached for the renamed entry's samples, or leading to
//     its entries, are void (gen).
//   - _sort__addr_cmp's signed difference, no order among addresses
//     2^63 or more apart: the addresses each DSO's entries compare are
//     spanned as entries are made (addrSpans).
//
// Once the order may be broken, the cache is off for the rest of the
// run: every sample searches the tree, as perf does.
//
// The cache is direct-mapped, a slot per key's hash, overwritten by the
// next key of the slot: a gcc build's addresses without a symbol are
// hundreds of thousands, most seen a few times, and a Go map of them
// made its -sort pid,dso,sym table 12 % slower and 116 MB larger.
type rowCache struct {
	slots []rowSlot
	// treeOff says the tree's order may be broken; gen counts the
	// renames that voided the answers cached before (from 1: a slot
	// never filled has gen 0).
	treeOff bool
	gen     uint64
	// comms are the command-name entries of unnamed threads (whose
	// first COMM renames them in place) that the cache's keys hold.
	comms map[*machine.CommEntry]bool
}

// rowSlot is a key and its answer.
type rowSlot struct {
	k rowCacheKey
	v rowCacheVal
}

// rowCacheBits sizes the cache: 64 Ki slots of 64 bytes.
const rowCacheBits = 16

// rowHint is what sample knows of a sample's row beyond its key: its
// map's counts, its symbol's index in the map's table (-1: none) and its
// map-relative address, which names a row without a symbol; or no st.
type rowHint struct {
	st   *mapState
	i    int32
	addr uint64
}

// rowCacheKey is a sample's row, as a rowHint and the sample's thread
// and CPU tell it (the fields the keys do not use are zero).
type rowCacheKey struct {
	st       *mapState
	comm     *machine.CommEntry
	i, event int32
	tid, cpu int32
	addr     uint64 // without a symbol
}

// rowCacheVal is a cached row: the tree's entry, or without a tree the
// row; gen is the cache's when it was cached.
type rowCacheVal struct {
	gen uint64
	id  int32
	r   *row
}

// newRowCache returns the cache for rc, or nil where it does not apply:
// children tables, and trees searched with sym but not dso, whose
// comparison is no order.
func newRowCache(rc *rowCounter, children bool) *rowCache {
	if rowCacheOff || children || rc.hist != nil && rc.sym && !rc.dso {
		return nil
	}
	return &rowCache{slots: make([]rowSlot, 1<<rowCacheBits), gen: 1, comms: make(map[*machine.CommEntry]bool)}
}

// slot returns k's slot.
func (c *rowCache) slot(k *rowCacheKey) *rowSlot {
	h := k.addr ^ uint64(uintptr(unsafe.Pointer(k.st)))*0x9e3779b97f4a7c15
	h ^= uint64(uintptr(unsafe.Pointer(k.comm))) * 0xbf58476d1ce4e5b9
	h ^= (uint64(uint32(k.i)) | uint64(uint32(k.tid))<<32) * 0x94d049bb133111eb
	h ^= (uint64(uint32(k.cpu)) | uint64(uint32(k.event))<<32) * 0xd6e8feb86659fd93
	h ^= h >> 29
	h *= 0x9e3779b97f4a7c15
	return &c.slots[h>>(64-rowCacheBits)]
}

// rowCacheOff turns the cache off (tests).
var rowCacheOff bool

// key returns the cache key of a sample of event in thread t on cpu with
// hint h, and whether the cache may answer it: its map's table is final,
// and a tree's order holds.
func (c *rowCache) key(rc *rowCounter, h rowHint, t *machine.Thread, cpu int32, event int) (rowCacheKey, bool) {
	if c == nil || h.st == nil || !h.st.final || rc.hist != nil && c.treeOff {
		return rowCacheKey{}, false
	}
	k := rowCacheKey{st: h.st, i: h.i, event: int32(event)}
	if h.i < 0 {
		k.addr = h.addr
	}
	k.comm, k.tid, k.cpu = rc.threadKeys(t, cpu)
	return k, true
}

// get returns the cached answer for k, if any and not void.
func (c *rowCache) get(k rowCacheKey) (rowCacheVal, bool) {
	s := c.slot(&k)
	return s.v, s.v.gen == c.gen && s.k == k
}

// put caches v for k, a key of a sample of thread t.
func (c *rowCache) put(k rowCacheKey, v rowCacheVal, t *machine.Thread) {
	v.gen = c.gen
	*c.slot(&k) = rowSlot{k, v}
	if k.comm != nil && !t.CommSet() {
		c.comms[k.comm] = true
	}
}

// renamed handles e's rename in place (machine.OnCommRename) for the
// trees of rc: the answers cached for it or for its entries are void,
// and the cache goes off unless each entry holding it still lies
// strictly between its neighbours in its tree's walk.
func (c *rowCache) renamed(rc *rowCounter, e *machine.CommEntry) {
	if c == nil || rc.hist == nil || c.treeOff {
		return
	}
	held := false
	for _, h := range rc.hist {
		for _, id := range h.byComm[e] {
			held = true
			n := h.nodes[id]
			if p := n.Prev(); p != nil && h.compare(&h.entries[p.Value], &h.entries[id]) <= 0 {
				c.treeOff = true
			}
			if s := n.Next(); s != nil && h.compare(&h.entries[id], &h.entries[s.Value]) <= 0 {
				c.treeOff = true
			}
		}
	}
	if held || c.comms[e] {
		c.gen++
		clear(c.comms)
	}
}

// made notes entry id of h, just made, in the spans of the addresses
// its DSO's entries compare, and turns the cache off when they span
// 2^63 or more.
func (c *rowCache) made(h *histTree, id int32) {
	if c == nil || c.treeOff {
		return
	}
	e := &h.entries[id]
	g := spanGroup{e.dso, e.noMap}
	s := h.spans[g]
	if s == nil {
		s = &addrSpans{}
		h.spans[g] = s
	}
	if e.sym {
		s.syms.add(e.start)
		s.syms.add(e.end)
	} else {
		s.ips.add(e.ip)
	}
	if s.syms.wide() || s.ips.wide() {
		c.treeOff = true
	}
}

// spanGroup is the entries whose addresses compare with each other's:
// one DSO's (by short name), or those without a map.
type spanGroup struct {
	dso   string
	noMap bool
}

// addrSpans are the spans of a group's symbol bounds and of its
// addresses without a symbol.
type addrSpans struct{ syms, ips addrSpan }

// addrSpan is the smallest and largest of some addresses.
type addrSpan struct {
	lo, hi uint64
	set    bool
}

func (s *addrSpan) add(a uint64) {
	if !s.set {
		s.lo, s.hi, s.set = a, a, true
		return
	}
	s.lo, s.hi = min(s.lo, a), max(s.hi, a)
}

// wide reports whether the span's ends lie 2^63 or more apart, where
// _sort__addr_cmp orders no more.
func (s *addrSpan) wide() bool { return s.set && s.hi-s.lo >= 1<<63 }
