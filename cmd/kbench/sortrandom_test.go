package main

import (
	"debug/elf"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/internal/linediff"
	"github.com/kmapindex/kmapindex/internal/perftest"
)

var randomSeeds = flag.Int("random-seeds", 20, "TestSortViewsRandomAgainstPerf: the number of random recordings")

// randomSortViews are the --sort views TestSortViewsRandomAgainstPerf
// compares: those whose rows perf keeps in the order of its hist-entry
// trees (sym without dso, with and without comm), and the default.
var randomSortViews = []string{"comm,sym", "sym,comm", "sym", "pid,sym", "comm", "comm,dso,sym", "dso,sym"}

// TestSortViewsRandomAgainstPerf compares kbench report's tables by sort
// keys with perf report's on random recordings: threads named before,
// after (perf renames their earlier rows) and between their samples,
// user samples in a binary with symbols, in two maps of files that do not
// exist (rows by address only) and outside every map, and kernel samples
// (the foreign kallsyms). Periods repeat, so that many rows tie and their
// order is perf's trees'. Rows are compared in order. Needs perf.
func TestSortViewsRandomAgainstPerf(t *testing.T) {
	if _, _, err := perftest.Run(perftest.Options{}, "version"); err != nil {
		t.Skipf("perf: %v", err)
	}
	exe, segs := executableSegments(t)
	ksFile := filepath.Join(foreignDir, "kallsyms")
	ks, err := kallsyms.ReadFile(ksFile)
	if err != nil {
		t.Fatal(err)
	}
	seeds := *randomSeeds
	if testing.Short() {
		seeds = min(seeds, 3)
	}
	for seed := range seeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "perf.data")
			writeRandomRecording(t, data, rand.New(rand.NewPCG(uint64(seed), 17)), exe, segs, ks)
			for _, view := range randomSortViews {
				want, _, err := perftest.Run(perftest.Options{NoBuildIDCache: true}, "report", "-i", data, "--kallsyms", ksFile,
					"--stdio", "--sort", view, "--no-children", "-n", "-g", "none")
				if err != nil {
					t.Fatal(err)
				}
				got := mustReport(t, nil, "-debugdir", "-", "-progress", "never", "-kallsyms", ksFile, "-no-children", "-sort", view, data)
				g, w := linediff.ReportRows(got), linediff.ReportRows(want)
				if d := linediff.First(strings.Join(g, "\n"), strings.Join(w, "\n")); d != "" {
					t.Errorf("--sort %s: rows differ from perf report's (%d rows): %s", view, len(w), d)
				}
			}
		})
	}
}

// executableSegments returns the test binary, which has a symbol table,
// and its executable PT_LOAD segments.
func executableSegments(t *testing.T) (string, []*elf.Prog) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(exe)
	if err != nil {
		t.Skipf("test binary: %v", err)
	}
	defer f.Close()
	var segs []*elf.Prog
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && p.Filesz > 0 {
			segs = append(segs, p)
		}
	}
	if f.Type != elf.ET_EXEC || len(segs) == 0 {
		t.Skip("test binary is not a plain executable")
	}
	return exe, segs
}

// writeRandomRecording writes to path a recording of four threads (see
// TestSortViewsRandomAgainstPerf) drawn from rng.
func writeRandomRecording(t *testing.T, path string, rng *rand.Rand, exe string, segs []*elf.Prog, ks []kallsyms.Symbol) {
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w, err := perfdata.NewWriter(out, perfdata.WriterOptions{Hostname: "test", OSRelease: "6.1.0", Arch: "x86_64", Version: "6.1", Cmdline: []string{"test"}})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	kernel := uint16(perfdata.CPUModeKernel)
	user := uint16(perfdata.CPUModeUser)
	var kernelIPs []uint64
	for _, s := range ks {
		if s.Module == "" && s.IsFunction() {
			kernelIPs = append(kernelIPs, s.Addr+uint64(rng.IntN(4)))
		}
	}
	text := kallsyms.Landmarks(ks).Text.Addr
	must(w.WriteMmap(&perfdata.Mmap{Info: perfdata.Info{Misc: kernel}, Pid: ^uint32(0), Addr: text, Len: slices.Max(kernelIPs) + 0x1000 - text,
		Pgoff: text, Filename: "[kernel.kallsyms]_text", Prot: 5, Flags: 2}))
	// A few addresses per map, so that entries repeat.
	pick := func(n int, f func() uint64) []uint64 {
		ips := make([]uint64, n)
		for i := range ips {
			ips[i] = f()
		}
		return ips
	}
	const none1, none2, unmapped = 0x7f00_0000_0000, 0x7f10_0000_0000, 0x6000_0000
	pools := [][]uint64{
		pick(12, func() uint64 { return kernelIPs[rng.IntN(len(kernelIPs))] }),
		pick(12, func() uint64 { p := segs[rng.IntN(len(segs))]; return p.Vaddr + uint64(rng.Int64N(int64(p.Filesz))) }),
		pick(10, func() uint64 { return none1 + uint64(rng.IntN(0x10000)) }),
		pick(6, func() uint64 { return none2 + uint64(rng.IntN(0x10000)) }),
		pick(4, func() uint64 { return unmapped + uint64(rng.IntN(0x1000)) }),
	}
	names := []string{"alpha", "beta", "X", "gamma"}
	// Files without symbols whose short names sort before, between and
	// after the DSOs with symbols, at offsets that make their entries'
	// addresses (map-relative) overlap or not: perf's sym comparison then
	// orders entries inconsistently.
	var files [2]string
	var pgoffs [2]uint64
	for i := range files {
		files[i] = []string{"Aa.so", "kz", "zz.so", "[k.so", "libnone.so"}[rng.IntN(5)]
		pgoffs[i] = uint64(rng.IntN(3)) << 14
	}
	time := uint64(1)
	comm := func(pid uint32, exec bool) {
		misc := uint16(0)
		if exec {
			misc = perfdata.MiscCommExec
		}
		must(w.WriteComm(&perfdata.Comm{Info: perfdata.Info{Misc: misc}, Pid: pid, Tid: pid, Comm: names[rng.IntN(len(names))],
			SampleID: perfdata.SampleID{Pid: pid, Tid: pid, Time: time}}))
		time++
	}
	pids := []uint32{100, 101, 102, 103}
	for _, pid := range pids {
		if rng.IntN(3) > 0 { // else named by a COMM after its first samples
			comm(pid, true)
		}
		id := perfdata.SampleID{Pid: pid, Tid: pid, Time: time}
		for _, p := range segs {
			start, end := p.Vaddr&^0xfff, (p.Vaddr+p.Filesz+0xfff)&^0xfff
			must(w.WriteMmap(&perfdata.Mmap{Info: perfdata.Info{Misc: user}, Pid: pid, Tid: pid, Addr: start, Len: end - start,
				Pgoff: p.Off &^ 0xfff, Prot: 5, Flags: 2, Filename: exe, SampleID: id}))
		}
		for i, addr := range []uint64{none1, none2} {
			must(w.WriteMmap(&perfdata.Mmap{Info: perfdata.Info{Misc: user}, Pid: pid, Tid: pid, Addr: addr, Len: 0x10000, Pgoff: pgoffs[i],
				Prot: 5, Flags: 2, Filename: "/nonexistent/" + files[i], SampleID: id}))
		}
		time++
	}
	for range 100 + rng.IntN(300) {
		pid := pids[rng.IntN(len(pids))]
		if rng.IntN(60) == 0 {
			comm(pid, rng.IntN(2) == 0)
		}
		kind := rng.IntN(len(pools))
		misc := user
		if kind == 0 {
			misc = kernel
		}
		pool := pools[kind]
		must(w.WriteSample(&perfdata.Sample{Info: perfdata.Info{Misc: misc}, IP: pool[rng.IntN(len(pool))], Pid: pid, Tid: pid,
			Time: time, Period: uint64(1 + rng.IntN(2))}))
		time++
	}
	must(w.Close())
}
