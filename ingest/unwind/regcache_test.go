package unwind

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestRegCache reproduces what libunwind's register-state cache does to
// perf's unwinds: a return address at the start of a function whose
// preceding byte no FDE covers ends the unwind (the frame-pointer guess
// finds nothing), unless a frame at that very address (a sample at the
// function's entry) put the entry's row in the process's cache: the
// unwind then takes it and goes on. A new cache (an exec flushes it) or
// evicting the row (RegCacheSize later rows) undoes that.
func TestRegCache(t *testing.T) {
	fns := []testFDE{
		{0x1100, 0x80, nil}, // B: CFA = RSP+8
		// a gap: no FDE covers 0x1180..0x11a0
		{0x11a0, 0x60, nil}, // E: CFA = RSP+8
		{0x1200, 0x100, cat([]byte{cfaUndefined}, uleb(dwRIP))}, // C: the outermost
	}
	f := testFile("zR", stdCIE, fns, make([]byte, 0x2000))
	pad := uint64(0)
	atEntry := Sample{Regs: regsOf(mapStart+0x11a0, sp0, 1), Stack: stackOf(mapStart+0x1250, pad)}
	viaEntry := Sample{Regs: regsOf(mapStart+0x1110, sp0, 1), Stack: stackOf(mapStart+0x11a0, mapStart+0x1250, pad)}
	stops := []uint64{mapStart + 0x1110, mapStart + 0x119f}
	goesOn := []uint64{mapStart + 0x1110, mapStart + 0x119f, mapStart + 0x124f}
	evict := func(c *RegCache) {
		for i := range RegCacheSize {
			c.insert(uint64(0x9000+i), &rowInfo{})
		}
	}
	for _, tc := range []struct {
		name  string
		cache bool
		warm  bool            // unwind atEntry first
		then  func(*RegCache) // after warming
		want  []uint64
	}{
		{name: "no cache", want: stops},
		{name: "cold cache", cache: true, want: stops},
		{name: "no cache, warmed", warm: true, want: stops},
		{name: "warm cache", cache: true, warm: true, want: goesOn},
		{name: "flushed", cache: true, warm: true, then: func(c *RegCache) { *c = RegCache{} }, want: stops},
		{name: "evicted", cache: true, warm: true, then: evict, want: stops},
		{name: "all but evicted", cache: true, warm: true, then: func(c *RegCache) {
			for i := range RegCacheSize - 3 { // the warm-up cached E's and C's rows
				c.insert(uint64(0x9000+i), &rowInfo{})
			}
		}, want: goesOn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var u Unwinder
			if tc.cache {
				u.Cache = new(RegCache)
			}
			if tc.warm {
				got := u.Unwind(&atEntry, finder(f), nil)
				if want := []uint64{mapStart + 0x11a0, mapStart + 0x124f}; !reflect.DeepEqual(got, want) {
					t.Fatalf("sample at E's entry: got %#x, want %#x", got, want)
				}
			}
			if tc.then != nil {
				tc.then(u.Cache)
			}
			if got := u.Unwind(&viaEntry, finder(f), nil); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#x, want %#x", got, tc.want)
			}
		})
	}
}

// TestRegCacheTable: the cache's own table of places answers as a map
// from ip to the last row inserted for it, with libunwind's round-robin
// eviction, over random inserts and lookups of ips drawn from a few
// hundred (evictions, collisions and wrap-around at the table's end all
// happen).
func TestRegCacheTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 20 {
		var c RegCache
		model := map[uint64]*rowInfo{}
		var order []uint64 // the model's slots, round-robin
		for step := range 20000 {
			ip := uint64(rng.IntN(300 + round*20))
			if round%2 == 1 {
				ip = ip<<12 | 0xabc // high bits vary, low bits alike
			}
			got, want := c.lookup(ip), model[ip]
			if got != want {
				t.Fatalf("round %d step %d: lookup(%#x) = %p, want %p", round, step, ip, got, want)
			}
			if want != nil {
				continue // rows are inserted on a miss only
			}
			r := &rowInfo{}
			if len(order) == RegCacheSize {
				delete(model, order[0])
				order = order[1:]
			}
			order = append(order, ip)
			model[ip] = r
			c.insert(ip, r)
		}
		n := 0
		for _, s := range c.at {
			if s != 0 {
				n++
			}
		}
		if n != len(model) {
			t.Fatalf("round %d: %d places for %d cached rows", round, n, len(model))
		}
	}
}
