package attrib

import (
	"unsafe"

	"github.com/kmapindex/kmapindex/ingest/machine"
	"github.com/kmapindex/kmapindex/ingest/symbols"
)

// A rowCache finds a sample's row in a table by sort keys from what
// sample knows of it (rowHint: its map's counts and its symbol, or its
// address where it has none) instead of from its key. rowCounter.add hashed each sample's RowKey, three
// strings and more, or with the comm key searched perf's tree of hist
// entries with it: on the 2.91 M-sample -a recording, -sort pid,dso,sym
// and comm,dso,sym took 6 times as long as the dso,sym table.
//
// Without a tree, rows are keyed by what the cache key holds: a final
// table's symbol i has one DSO and one symbol in every map of that DSO
// and table sampled at one level (a rowClass: the processes of a build
// share their answers), an address without a symbol one DSO and that
// address (map-relative, as perf's entries compare it), and the thread's
// tid and the CPU are taken as the keys need them. The answer never
// changes.
//
// With a tree (the comm key, and sym only with dso, outside children
// tables), perf's search for a sample finds the entry equal to it, or
// makes one, wherever the tree's shape put the entries, as long as its
// in-order walk is strictly increasing under the comparison and the
// comparison is an order. Then the search's answer for a key is the
// same until an entry changes its name: that answer is what the cache
// keeps. The comm key compares command names (sort__comm_cmp), so the
// cache keys a sample by its thread's name at the sample, not by the
// thread's entry: a gcc build's cc1 processes, each of its own entry,
// share their answers (keyed by entry, a quarter of the -sort
// comm,dso,sym table's samples searched the tree). Two things break the
// order:
//   - a command-name entry renamed in place (a thread's first name,
//     machine.OnCommRename): the entries holding it compare by the new
//     name. Each is then checked against its neighbours in the walk, and
//     the answers cached are void (gen): those leading to its entries,
//     and any a new equal entry could change. An entry no tree entry
//     holds voids none: keys hold names, and no entry of the old name or
//     the new one changed.
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
	// names numbers the command names the keys hold (from 1); last
	// remembers a few entries' names and numbers, as samples come in
	// runs of a thread.
	names map[string]int32
	last  [8]namedComm
	// classes numbers the rowClasses of the maps whose symbols the keys
	// hold (from 1; mapState.rowClass remembers a map's).
	classes map[rowClass]int32
}

// rowClass is what a sample's row takes of its map beyond its symbol: the
// DSO, the level it was sampled at and the symbol table.
type rowClass struct {
	dso    string
	kernel bool
	table  *symbols.Table
}

// namedComm is a command-name entry, its name when last seen and the
// name's number.
type namedComm struct {
	e    *machine.CommEntry
	name string
	id   int32
}

// rowSlot is a key and its answer.
type rowSlot struct {
	k rowCacheKey
	v rowCacheVal
}

// rowCacheBits sizes the cache: 64 Ki slots of 56 bytes.
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
	class    int32 // the map's (rowClass)
	i, event int32
	comm     int32 // the thread's command name's number (rowCache.names)
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
	return &rowCache{slots: make([]rowSlot, 1<<rowCacheBits), gen: 1, names: make(map[string]int32), classes: make(map[rowClass]int32)}
}

// slot returns k's slot.
func (c *rowCache) slot(k *rowCacheKey) *rowSlot {
	h := k.addr * 0x9e3779b97f4a7c15
	h ^= (uint64(uint32(k.i)) | uint64(uint32(k.tid))<<32) * 0x94d049bb133111eb
	h ^= (uint64(uint32(k.comm)) | uint64(uint32(k.class))<<32) * 0xbf58476d1ce4e5b9
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
	k := rowCacheKey{class: c.classOf(h.st), i: h.i, event: int32(event)}
	if h.i < 0 {
		k.addr = h.addr
	}
	var comm *machine.CommEntry
	comm, k.tid, k.cpu = rc.threadKeys(t, cpu)
	if comm != nil {
		k.comm = c.nameOf(comm)
	}
	return k, true
}

// classOf returns the number of st's rowClass, which st remembers: st's
// table is final, and st is of the cache's run.
func (c *rowCache) classOf(st *mapState) int32 {
	if st.rowClass == 0 {
		k := rowClass{st.key.m.DSO, st.key.kernel, st.table}
		id, ok := c.classes[k]
		if !ok {
			id = int32(len(c.classes) + 1)
			c.classes[k] = id
		}
		st.rowClass = id
	}
	return st.rowClass
}

// nameOf returns the number of e's name.
func (c *rowCache) nameOf(e *machine.CommEntry) int32 {
	m := &c.last[uintptr(unsafe.Pointer(e))>>4%uintptr(len(c.last))]
	if m.e == e && m.name == e.Name {
		return m.id
	}
	id, ok := c.names[e.Name]
	if !ok {
		id = int32(len(c.names) + 1)
		c.names[e.Name] = id
	}
	*m = namedComm{e, e.Name, id}
	return id
}

// get returns the cached answer for k, if any and not void.
func (c *rowCache) get(k rowCacheKey) (rowCacheVal, bool) {
	s := c.slot(&k)
	return s.v, s.v.gen == c.gen && s.k == k
}

// put caches v for k.
func (c *rowCache) put(k rowCacheKey, v rowCacheVal) {
	v.gen = c.gen
	*c.slot(&k) = rowSlot{k, v}
}

// renamed handles e's rename in place (machine.OnCommRename) for the
// trees of rc: if entries hold it, the answers cached are void, and the
// cache goes off unless each of them still lies strictly between its
// neighbours in its tree's walk.
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
	if held {
		c.gen++
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
