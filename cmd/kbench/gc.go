package main

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// The garbage collector's settings for a run (unless GOGC or GOMEMLIMIT
// is set). A run's heap mostly grows: symbol tables, counts, the
// orderer's queue. Collecting while it grows finds little garbage; at Go's
// default pace a report ran six collections in its first 0.2 s, the first
// taking 38 ms of a 0.3 s run. So collections wait until the heap reaches
// startHeap (a memory limit of startLimit backs that up should the watch
// be late); from then on the collector runs at GOGC=steadyGOGC, half the
// default growth, which kept the peak memory of a children table of
// 1.15 M samples a tenth lower (117 to 105 MB) at the same speed. Waiting
// until 32 MiB rather than 48 MiB lowered the peak memory of the -a table
// (72 to 65 MB) and of the children table (76 to 72 MB), at the same
// speed; 16 or 24 MiB did no better.
//
// Children tables run at tightGOGC instead (collectTighter): their
// entries are most of their heap, and the core the decoder leaves idle
// in them takes the collector's work. Interleaved medians
// (scripts/abbench.sh), 50 against 25: the -a -g children table 62.6 ->
// 58.1 MB, 0.60 -> 0.59 s (9 runs); by pid,sym 240 -> 192 MB, 6.08 ->
// 6.04 s (3 runs; perf: 181 and 216 MB). Then 25 against 15: the -a -g
// children table 71.1 -> 66.1 MB, 0.515 -> 0.525 s (6 runs), a DWARF
// one 60.2 -> 57.2 MB, 0.250 -> 0.240 s; 10 took 64.1 MB but was 9 %
// slower (4 runs). Other views stay at
// steadyGOGC, where 25 cost more than it saved: the -a table spent 20 ms
// more in the collector (8 collections instead of 4) and was 3-7 % slower
// for 2-4 MB less; the flat -a table by pid,sym 1.19 -> 1.26 s for
// 103 -> 99 MB (7 runs; perf: 104 MB).
//
// A children table whose live heap reaches largeHeap runs at largeGOGC
// from then on (settleLarge): each collection marks the whole live heap.
// At tightGOGC a table of 514 k rows (a gcc build's recording, its chains
// full of addresses outside every map, 230 MB live at the stream's end)
// ran 45 collections, a sixth of its CPU time, and went back to
// steadyGOGC at 96 MiB: 3.94 -> 3.56 s, peak RSS equal (385 MB, set by
// the table's end; GOGC=100 there: 3.38 s but 402 MB, scripts/abbench.sh,
// 5 runs). Once that table's rows took less memory than its entries
// (compact rows without a map) the stream's peak was the run's, and 20
// rather than 50 kept it lower: the table 210 -> 202 MB, 1.48 -> 1.41 s;
// by comm,dso,sym 350 -> 314 MB, 3.99 -> 4.05 s (5 and 3 runs). Since
// then fresh memory has cost more than collections (the kernel zeroes
// each page; about 1 ms a MB here), and 10 rather than 20, with
// collectRun's limit at the memory held, took a 2.4 M-sample gcc build's
// children table 169-174 -> 162 MB at about the same speed (1.80 vs 1.87
// s and 2.17 vs 2.14 s, 7 and 9 runs), by comm,dso,sym 322 -> 289 MB and
// 6.32 -> 6.00 s (3 runs; 15: 161 and 304 MB); the -a -g children table,
// whose live heap stays under largeHeap, did not change (0.785 vs 0.777 s,
// 64 MB).
const (
	startHeap = 32 << 20
	// smallHeap is startHeap for a recording below hugeHeapMinSize (with
	// huge pages or not). Such a run's heap is mostly the kernel's and the
	// DSOs' symbol tables and the garbage of making them, and seldom
	// reaches startHeap, so nothing was collected: on four small group
	// recordings made here (gcc, python, shell) kbench report's peak RSS
	// was 0.6-3.5 MB above perf report's. From 12 MiB (scripts/abbench.sh,
	// 7 runs each, same speed): their tables 30.9 -> 27.4 MB (perf 27.9),
	// 28.5 -> 27.7 (27.1), 37.3 -> 36.7 (37.4), 17.7 -> 17.5 (16.5); their
	// children tables 30.9 -> 28.1 (28.0), 30.1 -> 26.3 (28.2); the
	// committed DWARF recording's children table 32.9 -> 25.6.
	smallHeap = 12 << 20
	// smallGOGC is steadyGOGC for a recording below hugeHeapMinSize,
	// whose heap is mostly symbol tables and the garbage of making them:
	// a 369 KB recording of node (perf record -g), whose table of
	// /usr/bin/node is 22 MB and was made among 100 MB of garbage, peaked
	// at 83.4 -> 74.1 MB (perf report: 63.7) for the same time, and
	// system-wide ones of 0.6-10.7 MB at the same RSS or up to 1 MB lower
	// (the -g 4.3 MB one's script 29.7 -> 29.0 MB, perf's 29.5), at the
	// same speed (/tmp-made recordings, 3 runs each, interleaved).
	smallGOGC  = 25
	startLimit = 64 << 20
	steadyGOGC = 50
	largeGOGC  = 10
	tightGOGC  = 15
	heapWatch  = 2 * time.Millisecond // how often the heap is looked at until then
	startTime  = 5 * time.Second      // and for how long at most (kbench top runs for long)
	largeHeap  = 96 << 20
	largeWatch = 10 * time.Millisecond // how often settleLarge looks at the live heap
)

// gcSteady is the setting the collector switches to at startHeap, and
// whether it did (on), with startGC managing it at all.
var gcSteady struct {
	sync.Mutex
	percent     int
	managed, on bool
	// tight says collectTighter's setting holds, until the live heap
	// reaches largeHeap or collectRun.
	tight bool
}

// startGC applies those settings: no collection until the heap reaches
// startAt (startHeap or smallHeap; or for startTime), then GOGC=percent
// (steadyGOGC or smallGOGC; or tightGOGC). It returns a channel closed when the steady setting is in
// force.
func startGC(startAt uint64, percent int) <-chan struct{} {
	gcSteady.Lock()
	gcSteady.percent, gcSteady.managed, gcSteady.on, gcSteady.tight = percent, true, false, false
	gcSteady.Unlock()
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(startLimit)
	steady := make(chan struct{})
	go func() {
		defer close(steady)
		heap := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for start := time.Now(); time.Since(start) < startTime; {
			time.Sleep(heapWatch)
			metrics.Read(heap)
			if heap[0].Value.Kind() != metrics.KindUint64 || heap[0].Value.Uint64() >= startAt {
				break
			}
		}
		gcSteady.Lock()
		defer gcSteady.Unlock()
		gcSteady.on = true
		debug.SetGCPercent(gcSteady.percent)
		debug.SetMemoryLimit(math.MaxInt64)
	}()
	return steady
}

// collectTighter makes the steady setting GOGC=tightGOGC, for a
// children table; at once if it is in force already. It
// does nothing when startGC does not manage the collector (GOGC or
// GOMEMLIMIT set).
func collectTighter() {
	gcSteady.Lock()
	defer gcSteady.Unlock()
	if !gcSteady.managed {
		return
	}
	gcSteady.percent, gcSteady.tight = tightGOGC, true
	if gcSteady.on {
		debug.SetGCPercent(tightGOGC)
	}
	go settleLarge()
}

// settleLarge makes the steady setting largeGOGC once the live
// heap reaches largeHeap while collectTighter's holds; it returns then,
// or once collectRun ended it.
func settleLarge() {
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	for {
		time.Sleep(largeWatch)
		metrics.Read(live)
		large := live[0].Value.Kind() == metrics.KindUint64 && live[0].Value.Uint64() >= largeHeap
		gcSteady.Lock()
		switch {
		case !gcSteady.tight:
			gcSteady.Unlock()
			return
		case large:
			gcSteady.percent, gcSteady.tight = largeGOGC, false
			if gcSteady.on {
				debug.SetGCPercent(largeGOGC)
			}
			gcSteady.Unlock()
			return
		}
		gcSteady.Unlock()
	}
}

// collectRun collects once a children table's run ended, before its rows
// are made: the run's entries, caches and queues are garbage by then, and
// the rows reuse their memory instead of growing the heap. The -a -g
// children table's peak memory: 108-118 -> 99-102 MB, at the same speed
// (0.95-1.10 -> 0.96-0.98 s, 4 runs each).
//
// From then on the collector waits until the heap would outgrow the
// memory the process holds: at tightGOGC, making the rows of the -a -g
// children table ran a collection whose assists made grouping them take
// 24-34 ms instead of 13-18; its peak memory is the run's either way.
// (Up to a quarter of the live heap more, as it was, took a gcc build's
// children table 9 MB higher, 174 against 165 MB, at the same speed.)
// It does nothing when startGC does not manage the collector.
func collectRun() {
	gcSteady.Lock()
	defer gcSteady.Unlock()
	if !gcSteady.managed {
		return
	}
	gcSteady.tight = false // its own setting from here on
	runtime.GC()
	if held, ok := heldMemory(); ok {
		debug.SetMemoryLimit(int64(held))
		debug.SetGCPercent(-1)
	}
}

// heldMemory returns the memory the Go runtime holds (mapped and not
// released: what a memory limit bounds); false if the runtime does not
// tell.
func heldMemory() (held uint64, ok bool) {
	m := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(m)
	for _, s := range m {
		if s.Value.Kind() != metrics.KindUint64 {
			return 0, false
		}
	}
	return m[0].Value.Uint64() - m[1].Value.Uint64(), true
}

// collectEarly collects once, in the background, while startGC holds the
// collector off: kbench report calls it when the kernel's symbols are in
// (attrib.Options.KernelLoaded), whose reading left garbage that the run's
// later allocations then reuse instead of growing the heap to startHeap.
// A 10.7 MB recording's table: peak RSS 41 -> 36 MB (perf 36.6), a
// 22 MB -g one's 43 -> 39 MB, at the same speed (4 runs each, kbench
// report -format table). It does nothing once the steady setting is in
// force, or when startGC does not manage the collector.
func collectEarly() {
	gcSteady.Lock()
	defer gcSteady.Unlock()
	if gcSteady.managed && !gcSteady.on {
		go runtime.GC()
	}
}
