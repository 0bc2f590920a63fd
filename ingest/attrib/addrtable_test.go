package attrib

import (
	"math/rand/v2"
	"testing"
)

// TestAddrTable checks addrTable against a Go map over random keys: few
// distinct addresses (so that sets overwrite), clustered ones (so that
// probes run long), every tag from 0 to maxAddrTag, through many
// growths.
func TestAddrTable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		addrs func(r *rand.Rand) uint64
	}{
		{"random", func(r *rand.Rand) uint64 { return r.Uint64() }},
		{"few", func(r *rand.Rand) uint64 { return r.Uint64N(50) }},
		{"clustered", func(r *rand.Rand) uint64 { return 0xffffffff81000000 + r.Uint64N(1<<12)*16 }},
		{"zero", func(r *rand.Rand) uint64 { return 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(len(tc.name))))
			tags := []uint32{0, 1, 2, 1 << 16, maxAddrTag}
			want := map[noMapRank]int32{}
			tab := newAddrTable(0)
			for i := range 20000 {
				a, tag := tc.addrs(r), tags[r.IntN(len(tags))]
				k := noMapRank{a, int32(tag), 0}
				if r.IntN(3) > 0 {
					v := int32(r.Uint32())
					want[k] = v
					tab.set(a, tag, v)
				}
				got, ok := tab.get(a, tag)
				w, wok := want[k]
				if got != w || ok != wok {
					t.Fatalf("op %d: get(%#x, %d) = %d, %v; want %d, %v", i, a, tag, got, ok, w, wok)
				}
				if tab.len() != len(want) {
					t.Fatalf("op %d: len %d; want %d", i, tab.len(), len(want))
				}
			}
			for k, w := range want {
				if got, ok := tab.get(k.addr, uint32(k.event)); !ok || got != w {
					t.Fatalf("get(%#x, %d) = %d, %v at the end; want %d", k.addr, k.event, got, ok, w)
				}
			}
		})
	}
}

// TestAddrTableSeeded checks that two tables place the same keys apart:
// their hashes are seeded.
func TestAddrTableSeeded(t *testing.T) {
	a, b := newAddrTable(1000), newAddrTable(1000)
	same := 0
	for i := range uint64(64) {
		if a.home(i, 0) == b.home(i, 0) {
			same++
		}
	}
	if same == 64 {
		t.Fatal("two tables hash 64 keys alike")
	}
}

func BenchmarkAddrTable(b *testing.B) {
	const n = 400_000
	r := rand.New(rand.NewPCG(1, 2))
	keys := make([]uint64, n)
	for i := range keys {
		keys[i] = r.Uint64()
	}
	b.Run("addrTable", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			t := newAddrTable(0)
			for i, k := range keys {
				if _, ok := t.get(k, 0); !ok {
					t.set(k, 0, int32(i))
				}
			}
			for _, k := range keys {
				t.get(k, 0)
			}
		}
	})
	b.Run("map", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			type key struct {
				addr  uint64
				event int
			}
			m := map[key]int32{}
			for i, k := range keys {
				if _, ok := m[key{k, 0}]; !ok {
					m[key{k, 0}] = int32(i)
				}
			}
			for _, k := range keys {
				_ = m[key{k, 0}]
			}
		}
	})
}
