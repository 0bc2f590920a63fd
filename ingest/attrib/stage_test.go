package attrib

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/machine"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

// The stage benchmarks time each stage of attribution per sample on a
// real recording: the committed system-wide perf 6.1 recording, or the
// file named by $KBENCH_RECORDING (with /proc/kallsyms) for a large one.
// Run them with go test -bench Stage -benchmem ./ingest/attrib.

func stageRecording(b *testing.B) (data []byte, ks []kallsyms.Symbol) {
	file, ksFile := "../perfdata/testdata/system.data", kallsymsSubset
	if f := os.Getenv("KBENCH_RECORDING"); f != "" {
		file, ksFile = f, "/proc/kallsyms"
	}
	data, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	if ks, err = kallsyms.ReadFile(ksFile); err != nil {
		b.Fatal(err)
	}
	return data, ks
}

func openBytes(b testing.TB, data []byte) *perfdata.Reader {
	r, err := perfdata.NewFileReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// stageSample is a sample reduced to what resolving needs.
type stageSample struct {
	cpumode  uint8
	pid, tid uint32
	ip       uint64
}

// replay applies the recording's side band to a machine in perf's order
// (the decoder and orderer of a flat table) and returns its samples in
// that order, for the benchmarks to look up against the machine as the
// whole side band left it. In file order, a forked process's MMAPs, read
// from another CPU's buffer before its FORK, were wiped by it: 42 % of
// the samples of a 2.6 M-sample -a recording found no map, where Run
// finds all.
func replay(b *testing.B, data []byte, m *machine.Machine) []stageSample {
	r := openBytes(b, data)
	out := make(chan delivery, 4)
	errc := make(chan error, 1)
	pools := newOrderPools()
	var lost lostCounts
	flow := newFlowLimit(flowBytes)
	go decode(r, nil, out, pools, flow, errc, decodeConfig{lost: &lost})
	var ss []stageSample
	for d := range out {
		for _, k := range d.keys {
			e := k.e
			switch e.kind() {
			case evSample:
				ss = append(ss, stageSample{e.cpumode, e.pid, e.tid, e.ip})
			case evMmap:
				m.Mmap(e.side.mmap) // a record perf skips is skipped here too
			case evFork:
				m.Fork(e.pid, e.ppid, e.tid, uint32(e.ip), e.miscOf())
			case evExit:
				m.Exit(e.pid, e.tid)
			case evComm:
				m.Comm(e.pid, e.tid, e.side.comm)
			case evKsymbol:
				if err := m.Ksymbol(e.side.rare.ksym); err != nil {
					b.Fatal(err)
				}
			}
		}
		flow.release(d.bytes)
		pools.recycle(d)
	}
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	return ss
}

func perSample(b *testing.B, n int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/sample")
}

// BenchmarkStageWalk walks the record headers of the data section, the
// floor of any reading of the recording (issue 9 asks for Run within 3x
// of it): each record's type and size, nothing decoded. The recording is
// in memory, so page faults, which a process reading the file pays, are
// not in it.
func BenchmarkStageWalk(b *testing.B) {
	data, _ := stageRecording(b)
	r := openBytes(b, data)
	bo, start := r.ByteOrder(), int(r.Header().Data.Offset)
	end := start + int(r.Header().Data.Size)
	if r.PipeMode() || end <= start || end > len(data) {
		b.Skip("not a file-mode recording with a data size")
	}
	walk := func() (n int) {
		for off := start; off+8 <= end; {
			size := int(bo.Uint16(data[off+6:]))
			if size < 8 {
				b.Fatalf("record at %#x: size %d", off, size)
			}
			if perfdata.RecordType(bo.Uint32(data[off:])) == perfdata.RecordSample {
				n++
			}
			off += size
		}
		return n
	}
	// One walk before the timing, as the other stages have the data
	// read before theirs: the first walk of the 107 MB -a recording took
	// 23.5 ns a sample, the next ones 5.8-6.0 (-benchtime 5x), so that a
	// few iterations' mean was mostly the first's.
	n := walk()
	b.ReportAllocs()
	for b.Loop() {
		n = walk()
	}
	perSample(b, n)
}

// BenchmarkStageDecode reads every record, decoding samples.
func BenchmarkStageDecode(b *testing.B) {
	benchDecode(b, false)
}

// BenchmarkStageDecodeFixed is BenchmarkStageDecode as the decoder of a
// flat table reads: samples of fixed-size fields with NextFixedSample
// (their callchains stepped over), every other record with Next.
func BenchmarkStageDecodeFixed(b *testing.B) {
	benchDecode(b, true)
}

// benchDecode reads the stage recording, with fixed each sample of
// fixed-size fields with NextFixedSample, every other record with Next,
// and reports the time a sample.
func benchDecode(b *testing.B, fixed bool) {
	data, _ := stageRecording(b)
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		r := openBytes(b, data)
		n = 0
		var fs perfdata.FixedSample
		for {
			if fixed && r.NextFixedSample(&fs, true) {
				n++
				continue
			}
			if !r.Next() {
				break
			}
			if _, ok := r.Record().(*perfdata.Sample); ok {
				n++
			}
		}
	}
	perSample(b, n)
}

// stageSetup replays the side band on impl and resolves every sample once
// (loading the kernel), returning the machine, its symbolizer and the
// samples with their maps.
func stageSetup(b *testing.B, impl mapset.Impl) (*machine.Machine, *symbolizer, []stageSample, []index.Map) {
	m, sym, ss, _ := stageReplay(b, impl)
	maps := make([]index.Map, len(ss))
	for i, s := range ss {
		maps[i], _ = m.Resolve(s.cpumode, s.pid, s.tid, s.ip)
		if maps[i] != (index.Map{}) {
			sym.table(maps[i]) // loaded once, before the timing
		}
	}
	return m, sym, ss, maps
}

// stageReplay replays the stage recording's side band on impl (replay)
// and returns the machine, a symbolizer as Run gives it, the samples and
// the recording's size.
func stageReplay(b *testing.B, impl mapset.Impl) (*machine.Machine, *symbolizer, []stageSample, int) {
	data, ks := stageRecording(b)
	m := machine.New(impl)
	ss := replay(b, data, m)
	sym := newSymbolizer(kallsyms.NewList(ks), nil, nil, "-", m.ModuleMaps)
	sym.m = m
	m.OnKernelLoad = sym.loadKernel
	return m, sym, ss, len(data)
}

// BenchmarkStageResolve looks every sample's map up (thread, then map).
func BenchmarkStageResolve(b *testing.B) {
	for _, impl := range mapset.All {
		b.Run("impl="+impl.Name, func(b *testing.B) {
			m, _, ss, _ := stageSetup(b, impl)
			b.ReportAllocs()
			for b.Loop() {
				for _, s := range ss {
					m.Resolve(s.cpumode, s.pid, s.tid, s.ip)
				}
			}
			perSample(b, len(ss))
		})
	}
}

// BenchmarkStageSymbolize finds every resolved sample's symbol.
func BenchmarkStageSymbolize(b *testing.B) {
	_, sym, ss, maps := stageSetup(b, mapset.BTree)
	b.ReportAllocs()
	for b.Loop() {
		for i, s := range ss {
			if mp := maps[i]; mp != (index.Map{}) {
				t, _ := sym.table(mp)
				t.FindIndex(mp.MapIP(s.ip))
			}
		}
	}
	perSample(b, len(ss))
}

// BenchmarkStageResolveCached is the attributor's hot path for a
// sample's map and symbol, issue 9's "map + symbol resolution": the
// sample cache (resolveSample), then on a miss the thread, the map, its
// state and the symbol search, over the recording's samples in perf's
// order (replay). The cache starts empty each pass, as in a run; the
// symbol tables are loaded before the timing.
func BenchmarkStageResolveCached(b *testing.B) {
	for _, impl := range mapset.All {
		b.Run("impl="+impl.Name, func(b *testing.B) {
			m, sym, ss, size := stageReplay(b, impl)
			a := &attributor{m: m, sym: sym, cnt: newCounter(), dataSize: uint64(size)}
			events := make([]event, len(ss))
			for i, s := range ss {
				events[i] = event{kf: uint8(evSample), cpumode: s.cpumode, pid: s.pid, tid: s.tid, ip: s.ip}
				a.resolveSample(&events[i]) // loads every table the samples need
			}
			b.ReportAllocs()
			for b.Loop() {
				clear(a.samples)
				for i := range events {
					a.resolveSample(&events[i])
				}
			}
			perSample(b, len(events))
			// The share of samples the cache answered, in a pass not timed.
			clear(a.samples)
			hits := 0
			for i := range events {
				if slot, _ := a.cachedAnswer(&events[i]); slot != nil {
					hits++
				}
				a.resolveSample(&events[i])
			}
			b.ReportMetric(float64(hits)/float64(len(events)), "hits/sample")
		})
	}
}

// BenchmarkStageCount counts every resolved sample (map state, sample
// set, per-symbol count).
func BenchmarkStageCount(b *testing.B) {
	_, sym, ss, maps := stageSetup(b, mapset.BTree)
	idx := make([]int, len(ss))
	for i, s := range ss {
		t, _ := sym.table(maps[i])
		idx[i] = t.FindIndex(maps[i].MapIP(s.ip))
	}
	b.ReportAllocs()
	for b.Loop() {
		c := newCounter()
		for i, s := range ss {
			st := c.state(maps[i], s.cpumode == machine.CPUModeKernel)
			st.bm.Add(uint32(i))
			if !st.final {
				st.table, st.final = sym.table(maps[i])
			}
			st.add(st.table, idx[i], maps[i].MapIP(s.ip), 0, Counts{1, 1})
		}
	}
	perSample(b, len(ss))
}

// BenchmarkStageRun is the whole of Run (decode, order, resolve,
// symbolize, count) with kallsyms already in memory.
func BenchmarkStageRun(b *testing.B) {
	data, ks := stageRecording(b)
	for _, impl := range mapset.All {
		b.Run("impl="+impl.Name, func(b *testing.B) {
			var n uint64
			b.ReportAllocs()
			for b.Loop() {
				res, err := Run(openBytes(b, data), Options{Impl: impl, Kallsyms: ks, DebugDir: "-"})
				if err != nil {
					b.Fatal(err)
				}
				n = res.Samples
			}
			perSample(b, int(n))
		})
	}
}

// BenchmarkStageRunTable is BenchmarkStageRun as kbench report's flat
// table runs it: without the maps' sample sets, which only the JSON
// view shows. Its allocations are the run's fixed ones (symbol tables,
// names, a count cell for each map and symbol, the pools' warm-up):
// none per sample (TestAttributionAllocatesNothingPerSample).
func BenchmarkStageRunTable(b *testing.B) {
	data, ks := stageRecording(b)
	var n uint64
	b.ReportAllocs()
	for b.Loop() {
		res, err := Run(openBytes(b, data), Options{Kallsyms: ks, DebugDir: "-", NoSampleSets: true})
		if err != nil {
			b.Fatal(err)
		}
		n = res.Samples
	}
	perSample(b, int(n))
}

// BenchmarkStageRunChildren is BenchmarkStageRun for the children table
// (perf report --children): each sample's period cumulated into its
// callchain's entries, and perf's tree of the entries of addresses
// outside every map kept beside it.
func BenchmarkStageRunChildren(b *testing.B) {
	data, ks := stageRecording(b)
	var n uint64
	b.ReportAllocs()
	for b.Loop() {
		res, err := Run(openBytes(b, data), Options{Kallsyms: ks, DebugDir: "-", Children: true, NoSampleSets: true})
		if err != nil {
			b.Fatal(err)
		}
		n = res.Samples
	}
	perSample(b, int(n))
}

// BenchmarkStageWrite writes the table of a run, flat and children, to a
// writer that only counts the bytes: the step after the last sample
// (grouping entries into rows, ordering and formatting them).
func BenchmarkStageWrite(b *testing.B) {
	data, ks := stageRecording(b)
	for _, children := range []bool{false, true} {
		b.Run(fmt.Sprintf("children=%v", children), func(b *testing.B) {
			res, err := Run(openBytes(b, data), Options{Kallsyms: ks, DebugDir: "-", Children: children, NoSampleSets: true})
			if err != nil {
				b.Fatal(err)
			}
			var out countingWriter
			b.ReportAllocs()
			for b.Loop() {
				out = 0
				if err := res.WriteTable(&out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(out), "bytes")
		})
	}
}

// countingWriter counts what is written to it.
type countingWriter int

func (w *countingWriter) Write(p []byte) (int, error) {
	*w += countingWriter(len(p))
	return len(p), nil
}

// BenchmarkStageOrder puts the stage recording's samples in perf's order
// as the decoder of a flat table does (queuePlain, a round at each
// FINISHED_ROUND), deliveries handed straight back: the orderer's share
// of the decoder's goroutine.
func BenchmarkStageOrder(b *testing.B) {
	data, _ := stageRecording(b)
	var times []uint64
	r := openBytes(b, data)
	for r.Next() {
		switch rec := r.Record().(type) {
		case *perfdata.Sample:
			if queuedAt(rec.Time) {
				times = append(times, rec.Time)
			}
		case *perfdata.FinishedRound:
			times = append(times, roundMark)
		}
	}
	benchOrder(b, times)
}

// roundMark is a FINISHED_ROUND among benchOrder's times.
const roundMark = ^uint64(0)

// benchOrder puts samples at times in perf's order as the decoder of a
// flat table does (queuePlain, a round at each roundMark), deliveries
// handed straight back, and reports the time a sample.
func benchOrder(b *testing.B, times []uint64) {
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		pools := newOrderPools()
		n = 0
		o := &orderer{
			send:    func(d delivery) { n += len(d.keys); pools.recycle(d) },
			segment: pools.segment, keyBuf: pools.keys, block: pools.block,
		}
		for _, t := range times {
			if t == roundMark {
				o.round()
				continue
			}
			queuePlain(o, t, 1, 1, 1, 0, 0, 0, t)
		}
		o.finish()
	}
	perSample(b, n)
}

// BenchmarkStageSum sums a counter's counts by (dso, symbol) key, the
// flat table's rows (Result.BySym), as Run does after the last sample.
func BenchmarkStageSum(b *testing.B) {
	_, sym, ss, maps := stageSetup(b, mapset.BTree)
	c := newCounter()
	for i, s := range ss {
		st := c.state(maps[i], s.cpumode == machine.CPUModeKernel)
		if !st.final {
			st.table, st.final = sym.table(maps[i])
		}
		st.add(st.table, st.table.FindIndex(maps[i].MapIP(s.ip)), maps[i].MapIP(s.ip), 0, Counts{1, 1})
	}
	rows := 0
	b.ReportAllocs()
	for b.Loop() {
		bySym, _ := c.sumBySym(&Result{}, c.size())
		rows = len(bySym)
	}
	b.ReportMetric(float64(rows), "rows")
}
