package main

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// gcPercent returns the collector's GOGC setting without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestStartGC checks the collector's settings for a run: off while the
// heap is small, the percent asked for without a memory limit once it
// reaches startAt: a large recording's and a small one's.
func TestStartGC(t *testing.T) {
	for _, tc := range []struct {
		startAt uint64
		percent int
	}{
		{startHeap, steadyGOGC},
		{smallHeap, smallGOGC},
	} {
		func() {
			defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
			defer debug.SetGCPercent(debug.SetGCPercent(100))
			runtime.GC() // the heap starts small again
			steady := startGC(tc.startAt, tc.percent)
			if p, limit := gcPercent(), debug.SetMemoryLimit(-1); p != -1 || limit != startLimit {
				t.Fatalf("from %d: at the start: GOGC %d, memory limit %d; want off and %d", tc.startAt, p, limit, startLimit)
			}
			held := make([][]byte, 0, 64)
			for range 2 * tc.startAt >> 20 {
				held = append(held, make([]byte, 1<<20))
			}
			select {
			case <-steady:
			case <-time.After(startTime - time.Second):
				t.Fatalf("from %d: the heap passed it and the steady setting did not come", tc.startAt)
			}
			if p, limit := gcPercent(), debug.SetMemoryLimit(-1); p != tc.percent || limit != math.MaxInt64 {
				t.Errorf("from %d: then GOGC %d, memory limit %d; want %d and none", tc.startAt, p, limit, tc.percent)
			}
			_ = held
		}()
	}
}

// collectTighter sets GOGC=tightGOGC: at the switch when called before
// it, at once when called after, and never when startGC does not manage
// the collector.
func TestCollectTighter(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	fill := func() [][]byte {
		held := make([][]byte, 0, 64)
		for range 2 * startHeap >> 20 {
			held = append(held, make([]byte, 1<<20))
		}
		return held
	}
	wait := func(steady <-chan struct{}) {
		select {
		case <-steady:
		case <-time.After(startTime - time.Second):
			t.Fatal("the heap passed startHeap and the steady setting did not come")
		}
	}

	// Before the switch.
	steady := startGC(startHeap, steadyGOGC)
	collectTighter()
	if p := gcPercent(); p != -1 {
		t.Fatalf("GOGC %d before the switch, want off", p)
	}
	held := fill()
	wait(steady)
	if p := gcPercent(); p != tightGOGC {
		t.Errorf("GOGC %d after the switch, want %d", p, tightGOGC)
	}
	held = nil
	runtime.GC()

	// After it.
	steady = startGC(startHeap, steadyGOGC)
	held = fill()
	wait(steady)
	if p := gcPercent(); p != steadyGOGC {
		t.Fatalf("GOGC %d, want %d", p, steadyGOGC)
	}
	collectTighter()
	if p := gcPercent(); p != tightGOGC {
		t.Errorf("GOGC %d after collectTighter, want %d", p, tightGOGC)
	}
	_ = held

	// Unmanaged (GOGC set): left alone.
	gcSteady.Lock()
	gcSteady.managed = false
	gcSteady.Unlock()
	debug.SetGCPercent(100)
	collectTighter()
	if p := gcPercent(); p != 100 {
		t.Errorf("GOGC %d, want the user's 100", p)
	}
}

// TestCollectEarly checks that collectEarly collects while startGC holds
// the collector off, and not once the steady setting is in force or when
// startGC does not manage the collector.
func TestCollectEarly(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // no collections but these
	gcSteady.Lock()
	saved := struct {
		percent     int
		managed, on bool
	}{gcSteady.percent, gcSteady.managed, gcSteady.on}
	gcSteady.Unlock()
	defer func() {
		gcSteady.Lock()
		gcSteady.percent, gcSteady.managed, gcSteady.on = saved.percent, saved.managed, saved.on
		gcSteady.Unlock()
	}()
	numGC := func() uint32 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.NumGC
	}
	for _, tc := range []struct {
		name        string
		managed, on bool
		collects    bool
	}{
		{"held off", true, false, true},
		{"steady", true, true, false},
		{"not managed", false, false, false},
	} {
		gcSteady.Lock()
		gcSteady.managed, gcSteady.on = tc.managed, tc.on
		gcSteady.Unlock()
		before := numGC()
		collectEarly()
		deadline := time.Now().Add(5 * time.Second)
		if !tc.collects {
			deadline = time.Now().Add(100 * time.Millisecond)
		}
		for numGC() == before && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if collected := numGC() != before; collected != tc.collects {
			t.Errorf("%s: collected %v, want %v", tc.name, collected, tc.collects)
		}
	}
}

// TestSettleLarge checks that a children table's tight setting gives way
// to largeGOGC once the live heap reaches largeHeap, and holds while it
// is smaller or after collectRun.
func TestSettleLarge(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	alloc := func(n int) [][]byte {
		held := make([][]byte, 0, n>>20)
		for range n >> 20 {
			held = append(held, make([]byte, 1<<20))
		}
		return held
	}
	// waitPercent waits for GOGC p for up to d, and returns the last seen.
	waitPercent := func(p int, d time.Duration) int {
		got := gcPercent()
		for deadline := time.Now().Add(d); got != p && time.Now().Before(deadline); got = gcPercent() {
			time.Sleep(largeWatch)
		}
		return got
	}

	steady := startGC(startHeap, steadyGOGC)
	collectTighter()
	small := alloc(2 * startHeap)
	<-steady
	runtime.GC()
	if p := waitPercent(largeGOGC, 10*largeWatch); p != tightGOGC {
		t.Fatalf("GOGC %d with %d MiB live, want %d", p, 2*startHeap>>20, tightGOGC)
	}
	large := alloc(largeHeap)
	runtime.GC()
	if p := waitPercent(largeGOGC, 5*time.Second); p != largeGOGC {
		t.Errorf("GOGC %d with more than largeHeap live, want %d", p, largeGOGC)
	}
	runtime.KeepAlive(small)
	runtime.KeepAlive(large)
	small, large = nil, nil
	runtime.GC()

	// collectRun ends the watch: its setting holds.
	steady = startGC(startHeap, steadyGOGC)
	collectTighter()
	small = alloc(2 * startHeap)
	<-steady
	collectRun()
	after := gcPercent()
	large = alloc(largeHeap)
	runtime.GC()
	if p := waitPercent(largeGOGC, 10*largeWatch); p != after {
		t.Errorf("GOGC %d after collectRun and more than largeHeap live, want its %d", p, after)
	}
	runtime.KeepAlive(small)
	runtime.KeepAlive(large)
}
