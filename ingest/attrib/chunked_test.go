package attrib

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

func TestChunked(t *testing.T) {
	for _, n := range []int{0, 1, 1<<chunkBits - 1, 1 << chunkBits, 1<<chunkBits + 1, 3<<chunkBits + 7} {
		var c chunked[uint64]
		for i := range n {
			if got := c.append(uint64(i) * 3); got != int32(i) {
				t.Fatalf("append %d returned %d", i, got)
			}
		}
		if c.len() != n {
			t.Fatalf("len %d, want %d", c.len(), n)
		}
		p := c.prefix(n / 2)
		if n > 0 {
			*c.ptr(0) = 1 // a write through ptr shows in at
		}
		for range 2 << chunkBits {
			c.append(7) // appends leave the prefix alone
		}
		if p.len() != n/2 {
			t.Fatalf("prefix len %d, want %d", p.len(), n/2)
		}
		for i := range int32(n) {
			want := uint64(i) * 3
			if i == 0 {
				want = 1
			}
			if got := c.at(i); got != want {
				t.Fatalf("n %d: element %d is %d, want %d", n, i, got, want)
			}
			if i < int32(n/2) && p.at(i) != want {
				t.Fatalf("n %d: prefix element %d is %d, want %d", n, i, p.at(i), want)
			}
		}
	}
}

// A prefix is read on another goroutine while the sequence grows, as the
// replay reads the entries' keys (go test -race).
func TestChunkedPrefixWhileGrowing(t *testing.T) {
	var c chunked[int32]
	for i := range int32(100) {
		c.append(i)
	}
	p := c.prefix(c.len())
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range int32(p.len()) {
			if p.at(i) != i {
				t.Errorf("element %d is %d", i, p.at(i))
			}
		}
	})
	for i := range int32(4 << chunkBits) {
		c.append(100 + i)
	}
	wg.Wait()
}

// entryMetas holds what a slice of metas would: over random appends and
// sets (zero ones too), with prefixes taken on the way left as they were.
func TestEntryMetas(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	var m entryMetas
	var want []entryMeta
	type snap struct {
		p    entryMetas
		want []entryMeta
	}
	var snaps []snap
	for range 20000 {
		switch r := rng.IntN(10); {
		case r < 5 || len(want) == 0:
			m.append()
			want = append(want, entryMeta{})
		case r < 9:
			i := int32(rng.IntN(len(want)))
			v := entryMeta{}
			if rng.IntN(4) > 0 {
				v = entryMeta{end: rng.Uint64(), inlined: rng.IntN(2) == 0, base: fmt.Sprint(rng.IntN(9))}
			}
			// A prefix's entries are not set (setMeta stops the replay first).
			if len(snaps) > 0 && int(i) < snaps[len(snaps)-1].p.len() {
				continue
			}
			m.set(i, v)
			want[i] = v
		default:
			snaps = append(snaps, snap{m.prefix(len(want)), slices.Clone(want)})
		}
	}
	check := func(name string, m *entryMetas, want []entryMeta) {
		if m.len() != len(want) {
			t.Fatalf("%s: %d metas, want %d", name, m.len(), len(want))
		}
		for i, w := range want {
			if got := m.at(int32(i)); got != w {
				t.Fatalf("%s: meta %d is %+v, want %+v", name, i, got, w)
			}
		}
	}
	check("metas", &m, want)
	for i, s := range snaps {
		check(fmt.Sprint("prefix ", i), &s.p, s.want)
	}
}
