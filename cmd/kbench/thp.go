package main

import (
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
)

// Transparent huge pages for the heap. The Go runtime leaves its heap to
// the kernel's default, and where that default is madvise (Debian's and
// this project's machines) the heap is faulted in 4 KiB at a time. On
// the shared VMs kbench is measured on, a 4 KiB fault costs about 14 µs
// (a program touching 50 MB of fresh memory takes 180 ms, and 3.6 ms
// with MADV_HUGEPAGE): the -a table faulted 10,100 times, perf report
// 5,900 times. adviseHugeHeap maps heapAdvised bytes of heap up front
// and advises huge pages for them, and frees them for the run's
// allocations, which reuse the lowest addresses first: the same table
// then faults 1,700 times. Its cost is virtual: the pages are faulted
// in, 2 MiB at a time, only when the run uses them. 256 MiB covers the
// heaps of children tables and DWARF unwinds too (the -a -g children
// table faulted 10,169 times with 64 MiB advised, 2,184 with 256).
const heapAdvised = 256 << 20

// hugeHeapMinSize is the least size (16 MiB) of a recording file, most
// of it data, for which kbench report advises huge pages and starts
// collecting at startHeap (below it: smallHeap). Below it the heap is
// mostly the kernel's symbol tables, and its huge pages, filled in
// part, took the peak RSS above perf report's, for 10-20 ms of a run's
// 60-90 (kbench report -format table, 5 runs each, with and without
// KBENCH_THP=0, medians):
// 416 samples 20.0 -> 23.9 MB (perf 24.8 MB), a 656 KB recording
// 23.0 -> 26.9 MB (perf 25.4), a 1.2 MB -g one 26.0 -> 29.0 MB (perf
// 26.3). It was 4 MiB until system-wide recordings of 4.3 to 10.7 MB
// (perf record -a [-g], 3 runs each) showed the same: their table,
// script and children peaked 1-6 MB above perf's with huge pages (-g
// 4.3 MB: 31.1, 34.2, 35.7 MB against perf's 29.5), and 1-8 MB below it
// with this bound (25.2, 29.2, 27.4), still 1.5-3.2x faster than perf
// (0.08-0.16 s against 0.14-0.35 s). From 22 MB (a -a -g recording,
// 40.4 MB against perf's 48.7) huge pages keep it below.
//
// A smaller recording gets them all the same when its report unwinds
// user stacks (--call-graph dwarf; reportRunning): the binaries' unwind
// tables and DWARF sections, 8.8 MB of libc's debug file read into the
// heap, are most of its memory, and faulting them in 4 KiB at a time was
// most of its time. The committed 68 KB DWARF recording
// (scripts/abbench.sh 9, interleaved): children table 0.1184 -> 0.0693 s,
// 26.1 -> 30.3 MB; script 0.1112 -> 0.0678 s, 26.6 -> 29.8 MB (perf
// report and perf script: 0.20 s, 14.4 MB). Collections still start at
// smallHeap: with startHeap too, the table took 0.089 s and 35.3 MB.
const hugeHeapMinSize = 16 << 20

// wantsHugeHeap reports whether kbench report advises huge pages for the
// recording name: a file of hugeHeapMinSize bytes or more (its data is
// most of it), standard input ("-") of that size or of a size not known
// (stdinSize), or a directory. It is asked before the recording is
// opened; a name that cannot be looked at gets them, and its error comes
// from the open.
func wantsHugeHeap(name string) bool {
	if name == "-" {
		n := stdinSize()
		return n < 0 || n >= hugeHeapMinSize
	}
	fi, err := os.Stat(name)
	return err != nil || fi.IsDir() || fi.Size() >= hugeHeapMinSize
}

// thpSetting is the kernel's THP mode file: "always [madvise] never".
const thpSetting = "/sys/kernel/mm/transparent_hugepage/enabled"

// adviseHugeHeap advises huge pages for the heap's first heapAdvised
// bytes, when the kernel backs only advised memory with them and
// KBENCH_THP is not 0. It runs while the heap is small: at the start, or
// for kbench report just before the recording is opened (wantsHugeHeap).
func adviseHugeHeap() {
	if os.Getenv("KBENCH_THP") == "0" {
		return
	}
	mode, err := os.ReadFile(thpSetting)
	if err != nil || !bytes.Contains(mode, []byte("[madvise]")) {
		return
	}
	// No collection while b is live: one, forced, frees it (2 ms here;
	// with the one its allocation triggers, 3-5 ms).
	percent := debug.SetGCPercent(-1)
	b := make([]byte, heapAdvised)
	adviseHugePages(b) // best effort: the run is the same without
	runtime.KeepAlive(b)
	b = nil
	// Free b before anything else is allocated, and give its pages back
	// (never touched, they cost nothing to give): kept, they counted
	// towards startGC's memory limit, four times over, and a collection
	// started 11 ms into every run to bring the heap under it (gctrace:
	// 7 ms of marking, 4 ms stopped), then the scavenger gave them back
	// itself.
	debug.FreeOSMemory()
	debug.SetGCPercent(percent)
}
