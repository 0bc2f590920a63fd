package attrib

import (
	"cmp"
	"fmt"
	"math/rand/v2"
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
		evs := make([]event, n)
		base := uint64(0)
		for i := range keys {
			if rng.IntN(10) == 0 {
				base = rng.Uint64N(50) // start another run
			}
			base += rng.Uint64N(3)
			keys[i] = orderKey{base, &evs[i]}
		}
		want := slices.Clone(keys)
		slices.SortStableFunc(want, func(a, b orderKey) int { return cmp.Compare(a.time, b.time) })
		var got []orderKey
		got, tmp = sortKeys(slices.Clone(keys), tmp)
		if !slices.Equal(got, want) {
			t.Fatalf("sortKeys(%v) = %v, want %v", keys, got, want)
		}
	}
}

// mergeSome, stopped after any number of keys, has merged a prefix of
// the stable merge, and taken its keys from the fronts of a and b.
func TestMergeSome(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		evs := make([]event, 64)
		run := func(n int) []orderKey {
			keys := make([]orderKey, n)
			t := rng.Uint64N(8)
			for i := range keys {
				t += rng.Uint64N(3)
				keys[i] = orderKey{t, &evs[rng.IntN(len(evs))]}
			}
			return keys
		}
		a, b := run(rng.IntN(30)), run(rng.IntN(30))
		want := slices.SortedStableFunc(slices.Values(append(slices.Clone(a), b...)), func(x, y orderKey) int { return cmp.Compare(x.time, y.time) })
		n := rng.IntN(len(a) + len(b) + 1)
		dst := make([]orderKey, n)
		i, j := mergeSome(dst, a, b)
		took := slices.SortedStableFunc(slices.Values(append(slices.Clone(a[:i]), b[:j]...)), func(x, y orderKey) int { return cmp.Compare(x.time, y.time) })
		if i+j != n || !slices.Equal(dst, want[:n]) || !slices.Equal(took, dst) {
			t.Fatalf("mergeSome(%d keys, %v, %v) = %v (took %d, %d), want %v", n, a, b, dst, i, j, want[:n])
		}
	}
}

// orderSink collects an orderer's deliveries and poisons the segments it
// gets back, as reuse would overwrite them: a segment handed back too
// early shows as a poisoned event delivered later.
type orderSink struct {
	got      []uint64 // delivered events' ip
	poisoned int
	segs     int
}

func (s *orderSink) send(d delivery) {
	for _, k := range d.keys {
		if k.e.kind() == evHalfFlush {
			continue
		}
		if k.e.ip == ^uint64(0) {
			s.poisoned++
		}
		for j, w := range k.e.addrs {
			if w != chainWord(k.e.ip, j) {
				s.poisoned++ // its chain's storage was handed back, or not copied
				break
			}
		}
		s.got = append(s.got, k.e.ip)
	}
	for _, sg := range d.done {
		for i := range sg.events[:cap(sg.events)] {
			sg.events[:cap(sg.events)][i].ip = ^uint64(0)
		}
		for _, b := range sg.chains {
			for i := range b {
				b[i] = ^uint64(0)
			}
		}
		s.segs++
	}
}

// chainWord is word j of the callchain the tests give event ip.
func chainWord(ip uint64, j int) uint64 { return ip<<8 | uint64(j) }

// refOrder is perf's ordered_events the simple way: a queue stably sorted
// at each flush.
type refOrder struct {
	queue     []orderKey
	got       []uint64
	bytes     int
	last      uint64
	maxTime   uint64
	nextFlush uint64
}

func (r *refOrder) push(e event, t uint64) {
	if t == 0 || t == ^uint64(0) {
		r.got = append(r.got, e.ip)
		return
	}
	r.queue = append(r.queue, orderKey{t, &e})
	r.maxTime, r.last = max(r.maxTime, t), t
	r.bytes += eventSize + 8*len(e.addrs)
	if r.bytes > queueBound {
		first := r.queue[0].time
		for _, q := range r.queue {
			first = min(first, q.time)
		}
		limit := first
		if r.last > first {
			limit += (r.last - first) / 2
		}
		r.flush(limit)
	}
}

func (r *refOrder) flush(limit uint64) {
	slices.SortStableFunc(r.queue, func(a, b orderKey) int { return cmp.Compare(a.time, b.time) })
	n := 0
	for n < len(r.queue) && r.queue[n].time <= limit {
		r.got = append(r.got, r.queue[n].e.ip)
		r.bytes -= eventSize + 8*len(r.queue[n].e.addrs)
		n++
	}
	r.queue = slices.Delete(r.queue, 0, n)
}

// The orderer delivers what a stable sort at every flush delivers, on
// random streams: per-CPU ascending runs, late events, events without a
// time, rounds or none (half flushes), and it hands back no segment
// before the last of its events is delivered. Callchains come from one
// buffer the test overwrites after each push, as the reader's is: the
// orderer's copies, moved with their events by half flushes, must
// arrive intact.
func TestOrdererDifferential(t *testing.T) {
	defer func(b int) { queueBound = b }(queueBound)
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		queueBound = maxQueueBytes
		if trial%3 == 0 {
			queueBound = (1 + rng.IntN(400)) * eventSize
		}
		var sink orderSink
		o := &orderer{send: sink.send}
		o.onHalf = func() { o.deliverNow(&event{kf: uint8(evHalfFlush)}, 0, false) }
		ref := &refOrder{}
		cpus := 1 + rng.IntN(4)
		clock := make([]uint64, cpus)
		n := rng.IntN(6000)
		roundEvery := 1 + rng.IntN(1500)
		scratch := make([]uint64, 4)
		if trial%4 == 0 {
			roundEvery = 0 // no FINISHED_ROUND
		}
		for i := range n {
			c := rng.IntN(cpus)
			clock[c] += rng.Uint64N(4)
			e, tm := event{ip: uint64(i)}, clock[c]+1
			switch rng.IntN(50) {
			case 0:
				tm = 0
			case 1:
				tm = 1 + rng.Uint64N(clock[c]+1) // late
			}
			copyChain := false
			if rng.IntN(8) == 0 {
				e.addrs = scratch[:rng.IntN(4)]
				for j := range e.addrs {
					e.addrs[j] = chainWord(e.ip, j)
				}
				copyChain = true
			}
			o.push(&e, tm, copyChain)
			ref.push(e, tm)
			for j := range scratch {
				scratch[j] = 1 // the reader's next record
			}
			if roundEvery > 0 && i%roundEvery == roundEvery-1 {
				o.round()
				ref.flush(ref.nextFlush)
				ref.nextFlush = ref.maxTime
			}
		}
		o.finish()
		ref.flush(^uint64(0))
		if sink.poisoned > 0 {
			t.Fatalf("trial %d: %d events delivered from segments handed back", trial, sink.poisoned)
		}
		if !slices.Equal(sink.got, ref.got) {
			i := 0
			for i < min(len(sink.got), len(ref.got)) && sink.got[i] == ref.got[i] {
				i++
			}
			t.Fatalf("trial %d (%d events, %d cpus, round every %d, bound %d): delivery differs at %d of %d/%d",
				trial, n, cpus, roundEvery, queueBound, i, len(sink.got), len(ref.got))
		}
		if o.bytes != 0 || o.sized != 0 {
			t.Fatalf("trial %d: the queue holds nothing, yet its bytes are %d and its sized events %d", trial, o.bytes, o.sized)
		}
		if len(o.segs) != 0 || sink.segs == 0 && n > 0 {
			t.Fatalf("trial %d: %d segments kept at the end, %d handed back", trial, len(o.segs), sink.segs)
		}
	}
}

// A stream without FINISHED_ROUND keeps a bounded queue: past
// maxQueueBytes the oldest half is delivered (perf's OE_FLUSH__HALF), in
// time order; everything is delivered in the end.
func TestOrdererBounded(t *testing.T) {
	n, delivered, halves := 3*maxQueueBytes/eventSize, 0, 0
	var last uint64
	o := &orderer{send: func(d delivery) {
		for _, k := range d.keys {
			if k.e.kind() == evHalfFlush {
				halves++
				continue
			}
			if k.time < last {
				t.Fatalf("event at %d delivered after %d", k.time, last)
			}
			last = k.time
			delivered++
		}
	}}
	o.onHalf = func() { o.deliverNow(&event{kf: uint8(evHalfFlush)}, 0, false) }
	peak := 0
	for i := range n {
		// Two interleaved, each ascending: what two CPUs' buffers give.
		tm := uint64(1 + i/2)
		if i%2 == 1 {
			tm += 3
		}
		o.push(&event{}, tm, false)
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
	path, w, done := tempRecording(t)
	u := perfdata.Info{Misc: uint16(perfdata.CPUModeUser)}
	w.WriteMmap(&perfdata.Mmap{Info: u, Pid: 7, Tid: 7, Addr: 0x400000, Len: 0x1000, Filename: "/bin/x", Prot: 5})
	for i := range n {
		tm := uint64(10 + i/2) // two interleaved ascending runs, as two CPUs give
		if i%2 == 1 {
			tm += 3
		}
		w.WriteSample(&perfdata.Sample{Info: u, Pid: 7, Tid: 7, Time: tm, Period: 1, IP: 0x400010})
	}
	done()
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

// Events are copied once each and queued by the million: a field added
// carelessly grows them past the cache line they fill today.
func TestEventSize(t *testing.T) {
	if eventSize > 64 {
		t.Errorf("event is %d bytes, was 64", eventSize)
	}
	// The kinds fit below kindBits, a sample's flags above them.
	if evText > kindBits || sampleLBR&kindBits != 0 || sampleKnownMarkers&kindBits != 0 || sampleLBR == sampleKnownMarkers {
		t.Errorf("event.kf: kinds up to %d in bits %#x, flags %#x and %#x", evText, kindBits, sampleLBR, sampleKnownMarkers)
	}
}

// Samples made in the orderer's segment (plainSample) are the events
// push makes of them: every view's output is the same with them pushed,
// on every committed recording.
func TestPlainSamplesChangeNothing(t *testing.T) {
	viewsUnchanged(t, "samples made in place", func(off bool) func() {
		was := plainSampleOff
		plainSampleOff = off
		return func() { plainSampleOff = was }
	})
}

// BenchmarkOrderCPUs puts the samples of 1 to 32 CPUs in perf's order as
// BenchmarkStageOrder does, in rounds of 8,000 samples, each CPU's
// ascending, their clocks drifting apart: the orderer keeps two CPUs'
// runs as they are and sorts more (flush).
func BenchmarkOrderCPUs(b *testing.B) {
	for _, cpus := range []int{1, 2, 8, 32} {
		b.Run(fmt.Sprintf("cpus=%d", cpus), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			var times []uint64
			clock := make([]uint64, cpus)
			for range 300 {
				for c := range cpus {
					for range 8000 / cpus {
						clock[c] += 1 + rng.Uint64N(20*uint64(cpus))
						times = append(times, clock[c])
					}
				}
				times = append(times, roundMark)
			}
			benchOrder(b, times)
		})
	}
}
