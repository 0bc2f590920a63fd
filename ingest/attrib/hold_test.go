package attrib

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

// holdAlways makes the views that may hold kernel samples hold every
// one until something releases them (off: hold none). While holding, it
// counts in *held the times it was asked: each a sample held, or a check
// while some are. It returns the undo.
func holdAlways(off bool, held *int) func() {
	was := holdKernelForTests
	holdKernelForTests = func() bool {
		if !off {
			*held++
		}
		return !off
	}
	return func() { holdKernelForTests = was }
}

// Holding kernel samples changes no output, on every committed
// recording, in every view.
func TestHoldingKernelSamplesChangesNothing(t *testing.T) {
	held := 0
	viewsUnchanged(t, "holding kernel samples", func(off bool) func() { return holdAlways(off, &held) })
	if held == 0 {
		t.Fatal("no kernel sample was held")
	}
}

// Kernel samples held while the kernel's maps change under them (modules
// mapped, BPF programs loaded and unloaded), among user samples, samples
// without a map and samples of other cpumodes, count as
// they do when attributed in order, in the flat table and its result;
// the script and the children table hold none.
func TestHoldingFollowsKernelChanges(t *testing.T) {
	ks := []kallsyms.Symbol{
		{Addr: 0xffffffff81000000, Type: 'T', Name: "_text"},
		{Addr: 0xffffffff81000100, Type: 't', Name: "k_one"},
		{Addr: 0xffffffff81000200, Type: 'D', Name: "k_data"},
		{Addr: 0xffffffff81000300, Type: 'T', Name: "_etext"},
		{Addr: 0xffffffffc0000000, Type: 't', Name: "m_one", Module: "mod"},
		{Addr: 0xffffffffc0000100, Type: 't', Name: "m_two", Module: "mod"},
	}
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		path, w, done := tempRecording(t, perfdata.WriterOptions{Arch: "x86_64"})
		u := perfdata.Info{Misc: uint16(perfdata.CPUModeUser)}
		k := perfdata.Info{Misc: uint16(perfdata.CPUModeKernel)}
		w.WriteMmap(&perfdata.Mmap{Info: k, Pid: ^uint32(0), Addr: 0xffffffff81000000, Len: 0x1000000, Pgoff: 0xffffffff81000000, Filename: "[kernel.kallsyms]_text"})
		w.WriteMmap(&perfdata.Mmap{Info: u, Pid: 100, Tid: 100, Addr: 0x400000, Len: 0x1000, Filename: "/bin/a", Prot: 5})
		// Kernel samples in the kernel's text, a module, a BPF program,
		// no map, and at a user address.
		kernelIPs := []uint64{0xffffffff81000110, 0xffffffff81000210, 0xffffffffc0000010, 0xffffffffc0000110, 0xffffffffa0000010, 0xffffffff90000000, 0x400010}
		tm := uint64(10)
		for range 2000 {
			tm++
			sid := perfdata.SampleID{Time: tm}
			switch rng.IntN(60) {
			case 0:
				w.WriteMmap(&perfdata.Mmap{Info: k, Pid: ^uint32(0), Addr: 0xffffffffc0000000, Len: 0x1000, Filename: "/lib/modules/mod.ko", SampleID: sid})
			case 1:
				w.WriteKsymbol(&perfdata.Ksymbol{Addr: 0xffffffffa0000000, Len: 0x100, KsymType: 1, Flags: uint16(rng.IntN(2)), Name: "bpf_prog_x", SampleID: sid})
			case 2:
				w.WriteMmap(&perfdata.Mmap{Info: u, Pid: 100, Tid: 100, Addr: 0x400000, Len: 0x1000, Filename: []string{"/bin/a", "/bin/b"}[rng.IntN(2)], Prot: 5, SampleID: sid})
			case 3:
				w.WriteComm(&perfdata.Comm{Pid: 100, Tid: 100, Comm: "a", SampleID: sid})
			case 4:
				w.WriteFinishedRound()
			}
			s := &perfdata.Sample{Info: u, Pid: 100, Tid: 100, Time: tm, Period: uint64(1 + rng.IntN(3)), IP: 0x400010 + uint64(rng.IntN(2))*8}
			switch rng.IntN(10) {
			case 0, 1, 2, 3, 4:
				s.Info, s.IP = k, kernelIPs[rng.IntN(len(kernelIPs))]
			case 5:
				// No map, at an address kernel samples have too: perf
				// merges such entries across cpumodes, named after the
				// first (counter.addUnknown).
				s.IP = []uint64{0x7000, 0xffffffff90000000}[rng.IntN(2)]
			case 6:
				s.Info.Misc = uint16(perfdata.CPUModeHypervisor)
				s.IP = 0xffffffff90000000
			}
			w.WriteSample(s)
		}
		done()
		views := []struct {
			name  string
			opts  Options
			holds bool
		}{
			{"table", Options{}, true},
			{"script", Options{Script: &bytes.Buffer{}, FetchInsn: true}, false},
			{"children", Options{Children: true}, false},
		}
		// Half the recordings hold at most a few samples at a time:
		// the bound releases them too.
		bound := maxHeld
		if seed%2 == 1 {
			bound = 1 + rng.IntN(20)
		}
		for _, v := range views {
			opts := v.opts
			opts.Kallsyms, opts.NoFiles, opts.DebugDir = ks, true, "-"
			was := maxHeld
			maxHeld = bound
			held := 0
			undo := holdAlways(false, &held)
			got, gotCanon := runCached(t, path, opts, false)
			undo()
			undo = holdAlways(true, new(int))
			want, wantCanon := runCached(t, path, opts, false)
			undo()
			maxHeld = was
			if got != want || gotCanon != wantCanon {
				t.Fatalf("seed %d, %s: holding changed the output:\n%s\nin order:\n%s", seed, v.name, got, want)
			}
			if (held > 0) != v.holds {
				t.Fatalf("seed %d, %s: %d samples held", seed, v.name, held)
			}
		}
	}
}

// Held samples are kept in order, in chunks of at most heldChunk, up to
// the bound.
func TestHeldSamplesToTheBound(t *testing.T) {
	var h heldSamples
	for i := range maxHeld {
		h.add(heldSample{ip: uint64(i), ord: uint32(i)})
	}
	if h.n != maxHeld {
		t.Fatalf("%d held, want %d", h.n, maxHeld)
	}
	i := 0
	for k, c := range h.chunks {
		if cap(c) > heldChunk || cap(c) < firstHeldChunk || k < len(h.chunks)-1 && len(c) != cap(c) {
			t.Fatalf("chunk %d: %d of %d samples (first %d, most %d)", k, len(c), cap(c), firstHeldChunk, heldChunk)
		}
		for _, s := range c {
			if s.ip != uint64(i) || s.ord != uint32(i) {
				t.Fatalf("held sample %d is %+v", i, s)
			}
			i++
		}
	}
}

// FuzzHold: holding every kernel sample until something releases it
// changes neither the flat table nor its result, of any recording.
func FuzzHold(f *testing.F) {
	ks := fuzzSeeds(f, "sleep", "ksym", "pipe", "callchain", "system")
	f.Fuzz(func(t *testing.T, data []byte) {
		tableUnchanged(t, data, Options{Kallsyms: ks, DebugDir: "-", NoFiles: true}, "holding", func(off bool) func() {
			return holdAlways(off, new(int))
		})
	})
}

// tableUnchanged runs the recording data holds (if fuzzReader takes it)
// with opts twice, with what set(false) turns on and with what set(true)
// turns off, and fails where the tables and results (or errors) differ,
// or the scripts, with opts.Script set; set returns the undo, what names
// the change.
func tableUnchanged(t *testing.T, data []byte, opts Options, what string, set func(off bool) (undo func())) {
	t.Helper()
	var outs [2]string
	for i, off := range []bool{false, true} {
		r, ok := fuzzReader(data)
		if !ok {
			return
		}
		var script bytes.Buffer
		if opts.Script != nil {
			opts.Script = &script
		}
		undo := set(off)
		res, err := Run(r, opts)
		undo()
		if err != nil {
			outs[i] = "error: " + err.Error()
			continue
		}
		var table bytes.Buffer
		if err := res.WriteTable(&table); err != nil {
			t.Fatal(err)
		}
		outs[i] = script.String() + table.String() + res.Canonical()
	}
	if outs[0] != outs[1] {
		t.Fatalf("%s changed the table:\n%s\nwithout:\n%s", what, outs[0], outs[1])
	}
}

// Releasing held samples allocates nothing for each: a recording with
// twice the kernel samples, every one held until the end, allocates as
// much to attribute. (Each released sample's event once moved to the
// heap: 3.5 MB of the 2.49 M-sample -a table's allocations.)
func TestReleasingHeldSamplesAllocatesNothingEach(t *testing.T) {
	ks := []kallsyms.Symbol{
		{Addr: 0xffffffff81000000, Type: 'T', Name: "_text"},
		{Addr: 0xffffffff81000100, Type: 't', Name: "k_one"},
		{Addr: 0xffffffff81000300, Type: 'T', Name: "_etext"},
	}
	allocs := func(samples int) float64 {
		path, w, done := tempRecording(t, perfdata.WriterOptions{Arch: "x86_64"})
		k := perfdata.Info{Misc: uint16(perfdata.CPUModeKernel)}
		w.WriteMmap(&perfdata.Mmap{Info: k, Pid: ^uint32(0), Addr: 0xffffffff81000000, Len: 0x1000000, Pgoff: 0xffffffff81000000, Filename: "[kernel.kallsyms]_text"})
		for i := range samples {
			w.WriteSample(&perfdata.Sample{Info: k, Pid: 1, Tid: 1, Time: uint64(10 + i), Period: 1, IP: 0xffffffff81000110})
		}
		done()
		held := 0
		defer holdAlways(false, &held)()
		n := testing.AllocsPerRun(3, func() {
			r, err := perfdata.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if _, err := Run(r, Options{Kallsyms: ks, NoFiles: true, DebugDir: "-"}); err != nil {
				t.Fatal(err)
			}
		})
		if held < samples {
			t.Fatalf("%d of %d samples held", held, samples)
		}
		return n
	}
	const few = 4000
	one, two := allocs(few), allocs(2*few)
	if extra := two - one; extra > few/20 {
		t.Errorf("%d more held samples took %.0f more allocations (%.0f, then %.0f)", few, extra, one, two)
	}
}
