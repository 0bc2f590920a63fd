package main

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// The garbage collector's settings for a run (unless GOGC or GOMEMLIMIT
// is set). A run's heap mostly grows: symbol tables, counts, the
// orderer's queue. Collecting while it grows finds little garbage; at Go's
// default pace a report ran six collections in its first 0.2 s, the first
// taking 38 ms of a 0.3 s run. So collections wait until the heap reaches
// startHeap (a memory limit of startLimit backs that up should the watch
// be late); from then on the collector runs at GOGC=25, a quarter of the
// default growth: the collector's work runs beside the attributor, on
// the core the decoder leaves idle. GOGC=50 kept the peak memory of a
// children table of 1.15 M samples a tenth lower than the default (117
// to 105 MB) at the same speed; 25 rather than 50 lowered it again (67
// to 59 MB) and the -a table's (63 to 59 MB). That costs the -a table
// about 20 ms more of the collector's CPU (8 collections instead of 4):
// its wall time was the same in two interleaved comparisons and 0.26 ->
// 0.28 s in a third (scripts/abbench.sh). Waiting until 32 MiB rather than
// 48 MiB lowered the peak memory of the -a table (72 to 65 MB) and of the
// children table (76 to 72 MB), at the same speed; 16 or 24 MiB did no
// better.
const (
	startHeap  = 32 << 20
	startLimit = 64 << 20
	steadyGOGC = 25
	heapWatch  = 2 * time.Millisecond // how often the heap is looked at until then
	startTime  = 5 * time.Second      // and for how long at most (kbench top runs for long)
)

// startGC applies those settings: no collection until the heap reaches
// startHeap (or for startTime), then GOGC=steadyGOGC. It returns a
// channel closed when the steady setting is in force.
func startGC() <-chan struct{} {
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(startLimit)
	steady := make(chan struct{})
	go func() {
		defer close(steady)
		heap := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for start := time.Now(); time.Since(start) < startTime; {
			time.Sleep(heapWatch)
			metrics.Read(heap)
			if heap[0].Value.Kind() != metrics.KindUint64 || heap[0].Value.Uint64() >= startHeap {
				break
			}
		}
		debug.SetGCPercent(steadyGOGC)
		debug.SetMemoryLimit(math.MaxInt64)
	}()
	return steady
}
