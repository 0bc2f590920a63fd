package attrib

import (
	"math/bits"

	"github.com/kmapindex/kmapindex/ingest/machine"
)

// Holding kernel samples. A system-wide recording's first kernel sample
// comes a few milliseconds into its stream, and perf attributes it only
// once the kernel's symbols are loaded (map__load at thread__find_map),
// which here are read and indexed in the background (prepareKernel):
// 45-60 ms of /proc/kallsyms formatted by the kernel, then the tables.
// Waiting there stopped the attributor, and the decoder behind it, for a
// quarter of a flat table's run.
//
// A flat table's kernel samples touch nothing its user samples do: the
// kernel's maps and tables, not a thread's (Machine.Resolve); their
// counts, sample sets and object names under keys of their own
// (Key.Kernel), which sum whatever comes between them. So such a table
// keeps each kernel sample that comes while the kernel is being
// prepared, in order, and goes on with the user samples; the held
// samples are attributed, in their order, as they would have been, once
// the kernel is ready (at the next kernel sample or delivery), and first
// whenever something else could see the
// difference: an event that changes the kernel's maps or names a
// kernel build id, a sample that finds no map (its key is only its
// address), the bound on held samples, the end of the stream.
//
// The script, children, sort-key, branch and stack views name threads,
// print lines in order or walk callchains per sample: they wait as
// before. (A script without callchains held its kernel samples too,
// each line keeping its place among the others': on this project's
// two-core machines the attributor then got little more done while the
// kernel was read, and the -a script was 0.413 -> 0.406 s, the -a -g
// script -G 0.340 -> 0.371 s, with 12 MB more; scripts/abbench.sh.)
//
// heldSample is what attributing a held kernel sample reads.
type heldSample struct {
	ip, period uint64
	ord        uint32 // its ordinal among the run's samples
	attr       uint16
}

// maxHeld bounds the held samples (24 MB): past it, the attributor
// waits for the kernel.
// The tables of the 2.5 M-sample recordings of make perf-bench held
// 85-140 k. Tests lower it.
var maxHeld = 1 << 20

// heldChunk is how many held samples are kept together (192 KiB): a
// slice grown by append copied them and faulted in twice the memory,
// 4 % of the -a table's CPU time (perf record -g of kbench). The first
// chunks are smaller, firstHeldChunk doubling up to it, for the few
// samples a small recording holds.
const (
	heldChunk      = 8192
	firstHeldChunk = 256
)

// heldChunkSize is the capacity of the chunk that follows made others.
// (firstHeldChunk<<made overflowed past 55 chunks, 440 k held samples,
// which a kernel read slowly, under strace, reached: a panic.)
func heldChunkSize(made int) int {
	if made >= bits.Len(heldChunk/firstHeldChunk) {
		return heldChunk
	}
	return firstHeldChunk << made
}

// heldSamples keeps held samples in chunks, in order.
type heldSamples struct {
	chunks [][]heldSample
	n      int
}

func (h *heldSamples) add(s heldSample) {
	if len(h.chunks) == 0 || len(h.chunks[len(h.chunks)-1]) == cap(h.chunks[len(h.chunks)-1]) {
		h.chunks = append(h.chunks, make([]heldSample, 0, heldChunkSize(len(h.chunks))))
	}
	last := &h.chunks[len(h.chunks)-1]
	*last = append(*last, s)
	h.n++
}

// holdKernelForTests, when set, replaces the kernel preparation's
// waiting for the views that hold kernel samples (tests).
var holdKernelForTests func() bool

// holdsKernel reports whether the run's views allow holding kernel
// samples: a flat table of every sample (no filter).
func (a *attributor) holdsKernel() bool {
	return a.flatTable() && a.opts.Filter == nil && !a.opts.FetchInsn
}

// holding reports whether kernel samples are held now: the view allows
// it and the kernel is being prepared.
func (a *attributor) holding() bool { return a.kernelWaiting != nil && a.kernelWaiting() }

// hold holds the kernel sample e, counted and numbered, when the kernel
// is still being prepared, and reports whether it did; once it is not,
// the held samples are released.
func (a *attributor) hold(e *event) (bool, error) {
	if e.cpumode != machine.CPUModeKernel {
		return false, nil
	}
	if !a.holding() || a.held.n >= maxHeld {
		return false, a.releaseHeld()
	}
	a.held.add(heldSample{ip: e.ip, period: e.period, ord: uint32(a.res.Samples), attr: e.attr})
	a.res.Samples++
	a.res.Period += e.period
	return true, nil
}

// releaseHeld attributes the held samples, in order (the first loads
// the kernel, waiting for it if need be), and ends holding for the run.
func (a *attributor) releaseHeld() error {
	held := a.held
	a.held, a.kernelWaiting = heldSamples{}, nil
	defer func() { a.heldOrd = nil }()
	// One event for all: sample's pointer to it moved each to the heap,
	// an allocation a held sample (3.5 MB of the -a table's).
	var e event
	for _, c := range held.chunks {
		for i := range c {
			h := &c[i]
			e = event{kf: uint8(evSample), cpumode: machine.CPUModeKernel, ip: h.ip, period: h.period, attr: h.attr}
			a.heldOrd = h
			if err := a.sample(&e); err != nil {
				return err
			}
		}
	}
	return nil
}

// releasesHeld reports whether event e must see the held samples
// attributed first: all but samples (sample releases them itself where
// it must), thread events and user maps, which held samples do not read.
func releasesHeld(e *event) bool {
	switch e.kind() {
	case evSample, evFork, evExit, evComm, evHalfFlush, evText:
		return false
	case evMmap:
		return e.side.mmap.CPUMode != machine.CPUModeUser
	}
	return true
}

// ordinal numbers sample e among the run's samples and counts it and its
// period; a held sample was numbered and counted when it came (hold).
func (a *attributor) ordinal(e *event) uint32 {
	if a.heldOrd != nil {
		return a.heldOrd.ord
	}
	ord := uint32(a.res.Samples)
	a.res.Samples++
	a.res.Period += e.period
	return ord
}
