package attrib

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// sortKeys equals a stable sort by time, whatever the runs.
func TestSortKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var tmp []orderKey
	for range 2000 {
		n := rng.IntN(200)
		keys := make([]orderKey, n)
		base := uint64(0)
		for i := range keys {
			if rng.IntN(10) == 0 {
				base = rng.Uint64N(50) // start another run
			}
			base += rng.Uint64N(3)
			keys[i] = orderKey{base, int32(i)}
		}
		want := slices.Clone(keys)
		slices.SortStableFunc(want, func(a, b orderKey) int {
			switch {
			case a.time < b.time:
				return -1
			case a.time > b.time:
				return 1
			}
			return 0
		})
		var got []orderKey
		got, tmp = sortKeys(slices.Clone(keys), tmp)
		if !slices.Equal(got, want) {
			t.Fatalf("sortKeys(%v) = %v, want %v", keys, got, want)
		}
	}
}

// A stream without FINISHED_ROUND keeps a bounded queue: past
// maxQueueBytes the oldest half is delivered (perf's OE_FLUSH__HALF), in
// time order; everything is delivered in the end.
func TestOrdererBounded(t *testing.T) {
	n, delivered, halves := 3*maxQueueBytes/eventSize, 0, 0
	var last uint64
	o := &orderer{deliver: func(e *event) {
		if e.time < last {
			t.Fatalf("event at %d delivered after %d", e.time, last)
		}
		last = e.time
		delivered++
	}, onHalf: func() { halves++ }}
	peak := 0
	for i := range n {
		// Two interleaved, each ascending: what two CPUs' buffers give.
		tm := uint64(1 + i/2)
		if i%2 == 1 {
			tm += 3
		}
		o.push(&event{time: tm})
		peak = max(peak, o.bytes)
	}
	o.finish()
	if delivered != n || halves == 0 || peak > maxQueueBytes+eventSize {
		t.Errorf("%d of %d delivered, %d half flushes, peak queue %d bytes (bound %d)", delivered, n, halves, peak, maxQueueBytes)
	}
}
