package attrib

import "math/rand/v2"

// addrTable maps an address and a tag (an event, a row's dup) to an
// int32: a hash table of 16-byte slots, four to a cache line, probed
// linearly, that holds no pointers. It stands in for Go maps keyed by
// address where a children table holds hundreds of thousands of random
// addresses (a -g recording of code built without frame pointers, whose
// callchains hold stack words): there a Go map's lookup missed the cache
// at its directory, its control word and its slot, and such lookups took
// 0.35 s of the attributor's 1.5 s on a gcc build's recording (a CPU
// profile, 3 runs); this one misses once.
// The collector does not scan it either. Hand-written: the kept tables
// of integer keys (github.com/kamstrup/intmap) take one integer for a
// key and hash it without a seed; a key here is an address and a tag.
//
// The hash is seeded at random per table, as Go's maps are, so that a
// crafted recording cannot make its addresses collide.
type addrTable struct {
	slots []addrSlot
	n     int    // slots in use
	shift uint   // 64 - log2(len(slots))
	seed  uint64 // the hash's
}

// addrSlot is a key and its value; tag holds the key's tag + 1, 0 in an
// empty slot.
type addrSlot struct {
	addr uint64
	tag  uint32
	val  int32
}

// maxAddrTag is the largest tag an addrTable takes.
const maxAddrTag = 1<<32 - 2

// minAddrSlots is a new table's size: a children table has one table per
// DSO, and most DSOs have few addresses without a symbol.
const minAddrSlots = 8

// newAddrTable returns a table with room for about n keys.
func newAddrTable(n int) *addrTable {
	size := minAddrSlots
	for size*3/4 < n {
		size *= 2
	}
	t := &addrTable{seed: rand.Uint64()}
	t.alloc(size)
	return t
}

func (t *addrTable) alloc(size int) {
	t.slots = make([]addrSlot, size)
	t.shift = 64
	for s := size; s > 1; s >>= 1 {
		t.shift--
	}
}

// home returns the slot a key's probe starts at: splitmix64's finalizer
// of the seeded key, its top bits.
func (t *addrTable) home(addr uint64, tag uint32) int {
	x := addr ^ t.seed ^ uint64(tag)<<32 ^ uint64(tag)
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return int(x >> t.shift)
}

// get returns the value of (addr, tag), if set. tag is at most
// maxAddrTag.
func (t *addrTable) get(addr uint64, tag uint32) (int32, bool) {
	mask := len(t.slots) - 1
	for i := t.home(addr, tag); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.tag == tag+1 && s.addr == addr {
			return s.val, true
		}
		if s.tag == 0 {
			return 0, false
		}
	}
}

// set sets the value of (addr, tag). tag is at most maxAddrTag.
func (t *addrTable) set(addr uint64, tag uint32, val int32) {
	mask := len(t.slots) - 1
	for i := t.home(addr, tag); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.tag == tag+1 && s.addr == addr {
			s.val = val
			return
		}
		if s.tag == 0 {
			*s = addrSlot{addr: addr, tag: tag + 1, val: val}
			if t.n++; t.n > len(t.slots)*3/4 {
				t.grow()
			}
			return
		}
	}
}

// grow doubles the table.
func (t *addrTable) grow() {
	old := t.slots
	t.alloc(2 * len(old))
	mask := len(t.slots) - 1
	for _, s := range old {
		if s.tag == 0 {
			continue
		}
		i := t.home(s.addr, s.tag-1)
		for t.slots[i].tag != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}

// each calls f with every key and value of t, in slot order.
func (t *addrTable) each(f func(addr uint64, tag uint32, val int32)) {
	for _, s := range t.slots {
		if s.tag != 0 {
			f(s.addr, s.tag-1, s.val)
		}
	}
}

// len returns the number of keys set.
func (t *addrTable) len() int { return t.n }
