package attrib

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
)

// TestReplayConsistentMatchesCounts replays random samples whose entries
// perf compares consistently (no inlined entry): perf's tree then finds
// the entry of each key, so the replay must give the accumulator's own
// Children counts, and Self by the sample's entry, with no second row of
// a key. Samples repeat entries (recursion), which count once each.
func TestReplayConsistentMatchesCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	// DSOs of distinct short names, each symbol at its own start: perf
	// merges symbols of one span in DSOs of one short name, which the
	// accumulator's keys tell apart.
	dsos := []string{"/lib/a.so", "/lib/b.so", "/usr/bin/c", "[kernel.kallsyms]", "[unknown]"}
	defer func(b int) { logBlock = b }(logBlock)
	for i := range 200 {
		logBlock = 1 + rng.IntN(20) // samples across blocks
		ac := newAccumulator()
		ac.log = &entryLog{}
		ac.anyInlined = true // replay though nothing is inlined
		var ids []int32
		for range 1 + rng.IntN(40) {
			k := Key{DSO: dsos[rng.IntN(len(dsos))], Sym: "[unknown]", Addr: uint64(rng.IntN(64)), Event: rng.IntN(2)}
			var end uint64
			if k.DSO != "[unknown]" && rng.IntN(3) > 0 {
				k.Addr = uint64(rng.IntN(8)) * 16
				k.Sym = fmt.Sprint("f", k.Addr)
				end = k.Addr + 16
			}
			id := ac.entry(k)
			ac.meta[id].end = end
			ids = append(ids, id)
		}
		self := map[Key]Counts{}
		for s := range rng.IntN(300) {
			ac.stamp = uint32(s + 1)
			first := ids[rng.IntN(len(ids))]
			sample := []int32{first}
			for range rng.IntN(8) {
				if id := ids[rng.IntN(len(ids))]; ac.keys[id].Event == ac.keys[first].Event {
					sample = append(sample, id)
				}
			}
			c := Counts{Samples: 1, Period: uint64(1 + rng.IntN(3))}
			for _, id := range sample {
				ac.add(id, c)
			}
			ac.log.add(sample, c)
			k := ac.keys[first]
			if k.DSO == "[unknown]" {
				k.Kernel = false
			}
			n := self[k]
			n.add(c)
			self[k] = n
		}
		children, replayedSelf, ok := ac.replay()
		if !ok {
			t.Fatalf("case %d: no replay", i)
		}
		want := ac.result(&Result{})
		maps.DeleteFunc(want, func(_ Key, c Counts) bool { return c == Counts{} }) // entries no sample counted in
		if !maps.Equal(children, want) {
			for k, c := range children {
				if want[k] != c {
					t.Errorf("key %+v: replayed %v, counted %v", k, c, want[k])
				}
			}
			for k, c := range want {
				if _, ok := children[k]; !ok {
					t.Errorf("key %+v: counted %v, not replayed", k, c)
				}
			}
			t.Fatalf("case %d: replayed Children differ from the counts", i)
		}
		if !maps.Equal(replayedSelf, self) {
			t.Fatalf("case %d: replayed Self %v, want %v", i, replayedSelf, self)
		}
	}
}

// TestReplayOnlyWithInlinedEntries: without an inlined entry, or
// without a log, the counts stay the accumulator's.
func TestReplayOnlyWithInlinedEntries(t *testing.T) {
	ac := newAccumulator()
	ac.log = &entryLog{}
	if _, _, ok := ac.replay(); ok {
		t.Error("replayed without an inlined entry")
	}
	ac.log, ac.anyInlined = nil, true
	if _, _, ok := ac.replay(); ok {
		t.Error("replayed without a log")
	}
}
