package attrib

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestTreeWorkerSearchCache: the trees' worker keeps each address's last
// search answer across the rotations it finds harmless
// (workerTree.rotated). After every operation, every answer it keeps must
// be where a search from the root ends now. Random searches for addresses
// from all over the address space (many 2^63 or more apart, where perf's
// comparison is no order; some near others, so that their order changes
// little) and entries with a map made among them, with rotationCheckMax at
// 1, 3 and its own value (so that checks also give up).
func TestTreeWorkerSearchCache(t *testing.T) {
	defer func(m int) { rotationCheckMax = m }(rotationCheckMax)
	rng := rand.New(rand.NewPCG(21, 22))
	kept, walked, dups := 0, 0, 0
	names := []string{"a.so", "b", "[kernel.kallsyms]"}
	for i := range 600 {
		rotationCheckMax = []int{1, 3, 64}[i%3]
		w := newTestTreeWorker()
		// One accumulator entry an address, as noMapEntry makes them.
		var addrs []uint64
		seen := map[uint64]bool{}
		for range 4 + rng.IntN(150) {
			a := rng.Uint64()
			if rng.IntN(3) == 0 && len(addrs) > 0 {
				a = addrs[rng.IntN(len(addrs))] + 1 + uint64(rng.IntN(64))
			}
			if !seen[a] {
				seen[a] = true
				addrs = append(addrs, a)
			}
		}
		mapped := 0
		for step := range 50 + rng.IntN(1500) {
			wt := w.trees[0]
			if rng.IntN(6) == 0 { // an entry with a map is made
				nk := namedKey{name: names[rng.IntN(len(names))]}
				start := uint64(rng.IntN(1 << 12))
				if nk.sym = rng.IntN(2) == 0; nk.sym {
					nk.end = start + 16
				}
				w.insert(int32(len(addrs)+mapped), 0, start, &nk)
				mapped++
				w.applyQueued()
			} else {
				id := rng.IntN(len(addrs))
				if wt != nil && id < len(wt.last) && wt.last[id].moves == wt.moved+1 {
					kept++
				} else {
					walked++
				}
				made := 0
				if wt != nil {
					made = wt.entries.len()
				}
				w.search(int32(id), 0, addrs[id], Counts{Samples: 1, Period: 1}, 0, false, false)
				w.applyQueued()
				if wt = w.trees[0]; wt.entries.len() > made && wt.entries.ptr(int32(made)).owner.dup > 0 {
					dups++
				}
			}
			wt = w.trees[0]
			for id, l := range wt.last {
				if id >= len(addrs) || l.moves != wt.moved+1 {
					continue
				}
				n, _, _ := wt.t.search(&treeKey{a: addrs[id], noMap: true})
				if n == nil || n.Value != l.found {
					t.Fatalf("case %d, step %d: the worker keeps entry %d as the end of the search for %#x; from the root it ends at %v", i, step, l.found, addrs[id], n)
				}
			}
		}
	}
	if kept < 10000 || walked < 10000 || dups < 100 {
		t.Errorf("%d answers kept, %d walked, %d second entries of an address: the test no longer tests the cache", kept, walked, dups)
	}
}

// BenchmarkTreeWorker applies a stream of tree operations shaped like
// the -a -g recording's (entries made mostly early, searches for
// addresses outside every map, a few of them hot, from all over the
// address space) to a fresh worker: the cost of keeping perf's tree per
// search sent.
func BenchmarkTreeWorker(b *testing.B) {
	rng := rand.New(rand.NewPCG(31, 32))
	const addrCount, opCount = 20000, 400000
	addrs := make([]uint64, 0, addrCount)
	seen := map[uint64]bool{}
	for len(addrs) < addrCount {
		a := rng.Uint64()
		if rng.IntN(2) == 0 { // user-space-like, near each other
			a = 0x7f0000000000 + rng.Uint64N(1<<32)
		}
		if !seen[a] {
			seen[a] = true
			addrs = append(addrs, a)
		}
	}
	names := []string{"libc.so.6", "python3", "[kernel.kallsyms]", "libm.so.6"}
	// The ops, queued by the attributor's calls, in the batches it sends.
	w := &treeWorker{ops: make(chan *treeBatch, opCount/treeBatchOps+1), batch: &treeBatch{}}
	mapped := 0
	for i := range opCount {
		// Entries with a map are made at a rate falling as the run goes.
		if rng.Float64() < 0.2*(1-float64(i)/opCount) {
			start := rng.Uint64N(1 << 20)
			w.insert(int32(addrCount+mapped), 0, start, &namedKey{name: names[rng.IntN(len(names))], sym: true, end: start + 64})
			mapped++
			continue
		}
		// Searches: the addresses met first are met most.
		id := min(int(rng.ExpFloat64()*addrCount/8), addrCount-1)
		w.search(int32(id), 0, addrs[id], Counts{Samples: 1, Period: 1}, 0, false, false)
	}
	w.ops <- w.batch
	close(w.ops)
	var batches []*treeBatch
	for b := range w.ops {
		batches = append(batches, b)
	}
	b.ReportAllocs()
	for b.Loop() {
		w := &treeWorker{trees: map[int32]*workerTree{}}
		for _, batch := range batches {
			for i := range batch.ops {
				w.apply(&batch.ops[i], batch)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*opCount), "ns/op-applied")
}

// newTestTreeWorker returns a worker without its goroutine: applyQueued
// applies what was queued since.
func newTestTreeWorker() *treeWorker {
	return &treeWorker{trees: map[int32]*workerTree{}, batch: &treeBatch{}}
}

func (w *treeWorker) applyQueued() {
	b := w.batch
	for i := range b.ops {
		w.apply(&b.ops[i], b)
	}
	b.ops, b.counts, b.named = b.ops[:0], b.counts[:0], b.named[:0]
}

// A last search's answer holds until voidAll, also when the count of
// voidings would wrap round.
func TestVoidAllWraps(t *testing.T) {
	wt := &workerTree{last: make([]lastSearch, 3)}
	for _, start := range []uint32{0, math.MaxUint32 - 3} {
		wt.moved = start
		for range 6 {
			for i := range wt.last {
				wt.last[i] = lastSearch{wt.moved + 1, int32(i)}
			}
			wt.voidAll()
			for i, l := range wt.last {
				if l.moves == wt.moved+1 {
					t.Fatalf("from %d: answer %d holds after voidAll (moved %d)", start, i, wt.moved)
				}
			}
		}
	}
	// An answer from before the wrap, never searched again, does not
	// hold again when the count comes round to it.
	wt.moved = 1
	wt.last[0] = lastSearch{wt.moved + 1, 0}
	for wt.moved = math.MaxUint32 - 3; wt.moved != 1; {
		wt.voidAll()
		if wt.last[0].moves == wt.moved+1 {
			t.Fatalf("an answer of a voiding count %d ago holds at %d", uint32(1-wt.moved), wt.moved)
		}
	}
}
