package attrib

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
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

// Through Run, a recording without FINISHED_ROUND that outgrows the queue
// bound gets one warning at the first half flush and keeps every sample.
func TestRunQueueBoundWarns(t *testing.T) {
	defer func(b int) { queueBound = b }(queueBound)
	queueBound = 64 << 10
	const n = 20000 // about 20 times the bound
	path := filepath.Join(t.TempDir(), "perf.data")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := perfdata.NewWriter(f, perfdata.WriterOptions{Arch: "x86_64"})
	if err != nil {
		t.Fatal(err)
	}
	u := perfdata.Info{Misc: uint16(perfdata.CPUModeUser)}
	w.WriteMmap(&perfdata.Mmap{Info: u, Pid: 7, Tid: 7, Addr: 0x400000, Len: 0x1000, Filename: "/bin/x", Prot: 5})
	for i := range n {
		tm := uint64(10 + i/2) // two interleaved ascending runs, as two CPUs give
		if i%2 == 1 {
			tm += 3
		}
		w.WriteSample(&perfdata.Sample{Info: u, Pid: 7, Tid: 7, Time: tm, Period: 1, IP: 0x400010})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, bound := range []int{64 << 10, maxQueueBytes} {
		queueBound = bound
		r, err := perfdata.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(r, Options{DebugDir: "-", NoFiles: true})
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		warned := 0
		for _, w := range res.Warnings {
			if strings.Contains(w, "no FINISHED_ROUND") {
				warned++
			}
		}
		want := 0
		if bound < n*eventSize {
			want = 1
		}
		if warned != want {
			t.Errorf("bound %d: %d queue warnings, want %d: %q", bound, warned, want, res.Warnings)
		}
		if res.Samples != n || res.Unknown != 0 {
			t.Errorf("bound %d: %d samples (%d unknown), want %d", bound, res.Samples, res.Unknown, n)
		}
	}
}

// Events are copied twice each and queued by the million: a field added
// carelessly grows them by a word. 80 bytes is what they take today.
func TestEventSize(t *testing.T) {
	if eventSize > 80 {
		t.Errorf("event is %d bytes, was 80", eventSize)
	}
}
