package attrib

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
)

// The replay run alongside the attribution, block by block, gives what
// the replay of the whole log at the end gives; an entry's meta changed
// after the replay may have read it stops the one alongside, and the
// replay at the end starts over with the changed meta.
func TestConcurrentReplayMatchesSequential(t *testing.T) {
	defer func(b int) { logBlock = b }(logBlock)
	logBlock = 32 // many blocks
	rng := rand.New(rand.NewPCG(21, 22))
	dsos := []string{"/lib/libc.so.6", "/bin/app", "[kernel.kallsyms]"}
	ran, stopped := 0, 0
	for i := range 200 {
		change := i%4 == 3 // change an early entry's meta midway
		var accs [2]*accumulator
		for j := range accs {
			ac := newAccumulator()
			ac.log = &entryLog{}
			if j == 1 {
				ac.startReplay()
			}
			accs[j] = ac
		}
		var keys []Key
		var metas []entryMeta
		for range 2 + rng.IntN(20) {
			k := Key{DSO: dsos[rng.IntN(len(dsos))], Sym: fmt.Sprint("f", rng.IntN(6)), Addr: uint64(rng.IntN(6)) * 16}
			m := entryMeta{end: k.Addr + uint64(8+rng.IntN(24))}
			if rng.IntN(3) == 0 {
				k.Sym += " (inlined)"
				m.inlined, m.base = true, fmt.Sprint("g", rng.IntN(3))
			}
			keys, metas = append(keys, k), append(metas, m)
		}
		samples := 1 + rng.IntN(200)
		for s := range samples {
			var ids []int32
			n := 1 + rng.IntN(8)
			picks := make([]int, n)
			for j := range picks {
				picks[j] = rng.IntN(len(keys))
			}
			c := Counts{Samples: 1, Period: uint64(1 + rng.IntN(3))}
			owner := int32(rng.IntN(3))
			for _, ac := range accs {
				ids = ids[:0]
				for _, p := range picks {
					id := ac.entry(keys[p])
					ac.setMeta(id, metas[p])
					ids = append(ids, id)
				}
				ac.anyInlined = true
				ac.log.add(ids, nil, c, owner)
				if change && s == samples/2 {
					m := ac.meta.at(0)
					m.end += 100
					ac.setMeta(0, m)
				}
			}
		}
		if accs[1].rep != nil {
			ran++
		}
		if accs[1].noRep {
			stopped++
		}
		wc, ws, wr, wo, wok := accs[0].replay()
		gc, gs, gr, gobj, gok := accs[1].replay()
		if wok != gok || !maps.Equal(gc, wc) || !maps.Equal(gs, ws) || !maps.Equal(gr.all(), wr.all()) || !maps.Equal(gobj, wo) {
			t.Fatalf("case %d: alongside %v %v %v, at the end %v %v %v", i, gc, gs, gr, wc, ws, wr)
		}
		if accs[1].rep != nil {
			t.Fatalf("case %d: the replay alongside still runs", i)
		}
	}
	if ran < 100 || stopped < 20 {
		t.Errorf("the replay ran alongside in %d cases and was stopped in %d: the test no longer tests them", ran, stopped)
	}
}
