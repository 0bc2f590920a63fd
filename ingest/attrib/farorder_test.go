package attrib

import (
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
		w := &treeWorker{trees: map[int32]*workerTree{}}
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
				op := treeOp{kind: opInsert, id: int32(len(addrs) + mapped), key: treeKey{a: uint64(rng.IntN(1 << 12)), dso: int32(rng.IntN(len(names)))}}
				if op.key.sym = rng.IntN(2) == 0; op.key.sym {
					op.key.b = op.key.a + 16
				}
				mapped++
				w.apply(&op, names)
			} else {
				id := rng.IntN(len(addrs))
				op := treeOp{kind: opSearch, id: int32(id), key: treeKey{a: addrs[id], noMap: true}, c: Counts{Samples: 1, Period: 1}}
				if wt != nil && id < len(wt.last) && wt.last[id].moves == wt.moved+1 {
					kept++
				} else {
					walked++
				}
				made := 0
				if wt != nil {
					made = len(wt.owner)
				}
				w.apply(&op, nil)
				if wt = w.trees[0]; len(wt.owner) > made && wt.owner[made].dup > 0 {
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
