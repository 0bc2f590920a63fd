package mapset_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/mapset"
)

// Lookups interleaved with every kind of change must see the change: the
// B-tree's snapshot is rebuilt, and clones are independent.
func TestSetsAgreeThroughChanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		sets := []mapset.Set{mapset.BTree.New(), mapset.List.New()}
		var clones []mapset.Set
		var atClone string
		for step := range 100 {
			start := rng.Uint64N(1 << 16)
			m := index.Map{Start: start, End: start + 1 + rng.Uint64N(1<<12), Pgoff: rng.Uint64N(1 << 20), DSO: "x"}
			op := rng.IntN(6)
			for _, s := range sets {
				switch op {
				case 0:
					s.Insert(m)
				case 1, 2:
					s.FixupOverlapAndInsert(m)
				case 3:
					s.MergeIn(m)
				case 4:
					if all := s.Slice(); len(all) > 0 {
						s.Remove(all[len(all)/2])
					}
				case 5:
					s.RemoveFunc(func(x index.Map) bool { return x.Pgoff%3 == 0 })
				}
			}
			if step == 50 {
				clones = []mapset.Set{mapset.BTree.Clone(sets[0]), mapset.List.Clone(sets[1])}
				atClone = sets[0].Digest()
			}
			lookups := 20 // below the snapshot threshold: the tree answers
			if step%5 == 0 {
				lookups = 200 // past it: the snapshot answers
			}
			for range lookups {
				a := rng.Uint64N(1 << 17)
				x, okx := sets[0].Find(a)
				y, oky := sets[1].Find(a)
				if x != y || okx != oky {
					t.Fatalf("step %d Find(%#x): btree %v %v, list %v %v", step, a, x, okx, y, oky)
				}
			}
			if sets[0].Digest() != sets[1].Digest() {
				t.Fatalf("step %d: digests differ", step)
			}
			for _, s := range sets {
				checkAll(t, s, rng.IntN(s.Len()+1))
			}
		}
		for _, c := range clones {
			if c.Digest() != atClone {
				t.Fatal("a clone changed with its original")
			}
		}
	}
}

func TestByName(t *testing.T) {
	for _, name := range []string{"btree", "list"} {
		if im, err := mapset.ByName(name); err != nil || im.Name != name {
			t.Errorf("ByName(%q) = %v, %v", name, im.Name, err)
		}
	}
	if _, err := mapset.ByName("rbtree"); err == nil {
		t.Error("ByName(rbtree) succeeded")
	}
}

// checkAll checks that All yields Slice's maps in order and stops after
// the first stop of them when the loop breaks.
func checkAll(t *testing.T, s mapset.Set, stop int) {
	t.Helper()
	want := s.Slice()
	var got []index.Map
	for m := range s.All() {
		got = append(got, m)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("All yields %v, Slice returns %v", got, want)
	}
	got = got[:0]
	for m := range s.All() {
		if len(got) == stop {
			break
		}
		got = append(got, m)
	}
	if !slices.Equal(got, want[:stop]) {
		t.Fatalf("All broken after %d yields %v", stop, got)
	}
}
