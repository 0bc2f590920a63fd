package attrib

import "github.com/kmapindex/kmapindex/ingest/machine"

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
// samples are attributed, in their order, as they would have been, when
// the kernel is ready, and first whenever something else could see the
// difference: an event that changes the kernel's maps or names a
// kernel build id, a sample that finds no map (its key is only its
// address), the bound on held samples, the end of the stream.
//
// A script without callchains prints one line a sample: a held sample's
// line keeps its place among the others' (scriptOut.reserve), which wait
// to be written until it is filled. perf script's instruction fetch
// (fetchInsn) loads the kernel at the first sample, of any cpumode: on
// x86_64, where the kernel's start does not depend on that load, the
// load takes its place among the held samples; a kernel sample at a user
// address, whose fetch looks in its thread's maps, and a user sample at
// a kernel address, whose fetch looks in the kernel's, are not held but
// release the held ones first. The children, sort-key, branch and stack
// views, and a script with callchains, name threads or walk callchains
// per sample, in order: they wait as before.
//
// heldSample is what attributing a held kernel sample reads, or the
// kernel load of an instruction fetch (loadKernel).
type heldSample struct {
	ip, period uint64
	ord        uint32  // its ordinal among the run's samples
	line       lineRef // its script line's place
	attr       uint16
	loadKernel bool
}

// maxHeld bounds the held samples (32 MB) and a script's lines kept
// behind them (16 MB): past it, the attributor waits for the kernel.
// The tables of the 2.5 M-sample recordings of make perf-bench held
// 85-140 k.
const maxHeld = 1 << 20

// heldChunk is how many held samples are kept together (256 KiB): a
// slice grown by append copied them and faulted in twice the memory,
// 4 % of the -a table's CPU time (perf record -g of kbench). The first
// chunks are smaller, firstHeldChunk doubling up to it, for the few
// samples a small recording holds.
const (
	heldChunk      = 8192
	firstHeldChunk = 256
)

// heldSamples keeps held samples in chunks, in order.
type heldSamples struct {
	chunks [][]heldSample
	n      int
}

func (h *heldSamples) add(s heldSample) {
	if len(h.chunks) == 0 || len(h.chunks[len(h.chunks)-1]) == cap(h.chunks[len(h.chunks)-1]) {
		h.chunks = append(h.chunks, make([]heldSample, 0, min(heldChunk, firstHeldChunk<<len(h.chunks))))
	}
	last := &h.chunks[len(h.chunks)-1]
	*last = append(*last, s)
	h.n++
}

// holdKernelForTests, when set, replaces the kernel preparation's
// waiting for the views that hold kernel samples (tests).
var holdKernelForTests func() bool

// holdsKernel reports whether the run's views allow holding kernel
// samples: a flat table or a script without callchains (chains: the
// samples carry them), of every sample (no filter); with an instruction
// fetch, of an x86_64 recording.
func (a *attributor) holdsKernel(chains, x86_64 bool) bool {
	switch {
	case a.opts.Filter != nil || a.acc != nil || a.rows != nil || a.stacks != nil || a.res.Branches != nil:
		return false
	case a.opts.Script == nil:
		return !a.opts.NoCounts && !a.opts.FetchInsn
	}
	return !chains && (x86_64 || !a.opts.FetchInsn)
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
	if !a.holding() || a.held.n == maxHeld || a.opts.FetchInsn && e.ip < a.fetchKernelStart() ||
		a.out != nil && e.addrs != nil && !a.opts.HideCallchain { // lines of a callchain (a pipe's attrs come late)
		return false, a.releaseHeld()
	}
	h := heldSample{ip: e.ip, period: e.period, ord: uint32(a.res.Samples), attr: e.attr}
	if a.out != nil {
		h.line = a.out.reserve()
	}
	a.held.add(h)
	a.res.Samples++
	a.res.Period += e.period
	if a.opts.FetchInsn && !a.kstartSet && e.ip != 0 {
		// Its fetch is the first: the kernel load comes right after it.
		return true, a.startFetch()
	}
	return true, nil
}

// releaseHeld attributes the held samples, in order (the first loads
// the kernel, waiting for it if need be), writes the script lines kept
// behind them, and ends holding for the run.
func (a *attributor) releaseHeld() error {
	held := a.held
	a.held, a.kernelWaiting = heldSamples{}, nil
	defer func() { a.heldOrd = nil }()
	for _, c := range held.chunks {
		for i := range c {
			h := &c[i]
			if h.loadKernel {
				a.m.LoadKernel()
				continue
			}
			e := event{kf: uint8(evSample), cpumode: machine.CPUModeKernel, ip: h.ip, period: h.period, attr: h.attr}
			a.heldOrd = h
			if a.out != nil {
				a.out.fill(h.line)
			}
			if err := a.sample(&e); err != nil {
				return err
			}
		}
	}
	if a.out != nil && a.out.keep {
		a.out.sendKept()
	}
	return nil
}

// heldTooMuch reports whether the held samples, or a script's lines kept
// behind them, reached their bound.
func (a *attributor) heldTooMuch() bool {
	return a.held.n >= maxHeld || a.out != nil && len(a.out.kept)*batchLines >= maxHeld
}

// releasesHeld reports whether event e, other than a sample, must see
// the held samples attributed first: all but thread events and user
// maps, which held samples do not read.
func releasesHeld(e *event) bool {
	switch e.kind() {
	case evFork, evExit, evComm, evHalfFlush, evText:
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
