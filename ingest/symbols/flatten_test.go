package symbols

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// The direct flattening of non-overlapping symbols answers exactly as the
// replayed tree walk does, on every address where an answer can change.
func TestFlattenMatchesTreeWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 2000 {
		var b builder
		n := 1 + rng.IntN(40)
		for range n {
			start := rng.Uint64N(1 << 12)
			if iter%10 == 0 {
				start = ^uint64(0) - rng.Uint64N(1<<12) // near the top: ends may wrap
			}
			size := uint64(0)
			if rng.IntN(3) > 0 {
				size = rng.Uint64N(64)
			}
			b.insert(entry{start: start, end: start + size, name: "s", binding: uint8(rng.IntN(3))})
		}
		b.fixupEnd(iter%2 == 0)
		b.fixupDuplicate()
		fast := b.table(nil)
		slow := b.table(func(*entry) bool { return true })
		var probes []uint64
		for _, s := range slow.syms {
			probes = append(probes, s.start-1, s.start, s.start+1, s.end-1, s.end, s.end+1)
		}
		probes = append(probes, 0, ^uint64(0))
		for _, p := range probes {
			f, fok := fast.Find(p)
			s, sok := slow.Find(p)
			if f != s || fok != sok {
				t.Fatalf("iter %d Find(%#x): flattened %v %v, tree walk %v %v\nsyms %v", iter, p, f, fok, s, sok, slow.Symbols())
			}
		}
		if !slices.Equal(fast.Symbols(), slow.Symbols()) {
			t.Fatalf("iter %d: symbols differ", iter)
		}
	}
}
