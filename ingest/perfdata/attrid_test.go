package perfdata

import (
	"math/rand/v2"
	"testing"
)

// TestAttrByIDLikeMap sets random ids (clustered as perf's are, far from
// 0, and scattered) on a Reader and checks that attrByID answers as a
// plain map does for them and for ids never set, whichever table holds
// them.
func TestAttrByIDLikeMap(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 7))
		r := &Reader{idToAttr: make(map[uint64]*Attr)}
		attrs := make([]*Attr, 1+rng.IntN(4))
		for i := range attrs {
			attrs[i] = &Attr{Index: i}
		}
		r.attrs = attrs
		want := map[uint64]*Attr{}
		base := 1 + rng.Uint64N(1<<20) // id 0 is the synthesized records' (attrs[0])
		var ids []uint64
		for range 1 + rng.IntN(200) {
			var id uint64
			switch rng.IntN(4) {
			case 0:
				id = 1 + rng.Uint64N(1<<17) // small, maybe below base
			case 1:
				id = rng.Uint64() | 1 // far away
			default:
				id = base + rng.Uint64N(denseIDs+100) // near the first
			}
			a := attrs[rng.IntN(len(attrs))]
			r.setID(id, a)
			want[id] = a
			ids = append(ids, id)
		}
		for range 200 {
			ids = append(ids, 1+rng.Uint64N(1<<18), base+rng.Uint64N(2*denseIDs))
		}
		for _, id := range ids {
			got, err := r.attrByID(id, "SAMPLE", 8)
			if a, ok := want[id]; ok {
				if err != nil || got != a {
					t.Fatalf("seed %d: id %d: got attr %v, %v; want %d", seed, id, got, err, a.Index)
				}
			} else if err == nil {
				t.Fatalf("seed %d: id %d was never set, got attr %d and no error", seed, id, got.Index)
			}
		}
		if len(r.idDense) > denseIDs {
			t.Fatalf("seed %d: dense table of %d entries, more than %d", seed, len(r.idDense), denseIDs)
		}
	}
}
