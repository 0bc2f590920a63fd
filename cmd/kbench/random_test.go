package main

import (
	"cmp"
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
	"github.com/kmapindex/kmapindex/internal/testbuild"
)

var keepRandom = flag.Bool("keep-random", false, "TestRandomRecordingsAgainstPerf: write the recordings and perf's and kbench's outputs to $TMPDIR/random*.data, .kallsyms, .perf and .kbench; TestReportModuleFilesAgainstPerf: keep each seed's directory as $TMPDIR/kmoduleN")
var randomSeeds = flag.Int("random-seeds", 20, "TestRandomRecordingsAgainstPerf: the number of random recordings")

// randomComparisons are the outputs TestRandomRecordingsAgainstPerf
// compares: tables by the sort keys whose rows perf keeps in the order of
// its hist-entry trees (sym without dso, with and without comm), the
// default table, children tables by the default and those keys, filters,
// and perf script.
var randomComparisons = []randomComparison{
	{"comm,sym", reportArgs("--sort", "comm,sym"), []string{"-no-children", "-sort", "comm,sym"}, true, false},
	{"sym,comm", reportArgs("--sort", "sym,comm"), []string{"-no-children", "-sort", "sym,comm"}, true, false},
	{"sym", reportArgs("--sort", "sym"), []string{"-no-children", "-sort", "sym"}, true, false},
	{"pid,sym", reportArgs("--sort", "pid,sym"), []string{"-no-children", "-sort", "pid,sym"}, true, false},
	{"comm", reportArgs("--sort", "comm"), []string{"-no-children", "-sort", "comm"}, true, false},
	{"comm,dso,sym", reportArgs("--sort", "comm,dso,sym"), []string{"-no-children", "-sort", "comm,dso,sym"}, true, false},
	{"cpu,sym", reportArgs("--sort", "cpu,sym"), []string{"-no-children", "-sort", "cpu,sym"}, true, false},
	{"table", reportArgs("--sort", "dso,sym"), []string{"-no-children"}, true, false},
	{"children", append(reportArgs("--sort", "dso,sym"), "--children"), []string{"-children"}, true, false},
	{"comms", reportArgs("--sort", "dso,sym", "--comms", "alpha,X"), []string{"-no-children", "-comm", "alpha,X"}, true, false},
	{"pid", reportArgs("--sort", "comm,sym", "--pid", "100"), []string{"-no-children", "-sort", "comm,sym", "-pid", "100"}, true, false},
	{"script", []string{"script", "-F", "ip,sym,dso"}, []string{"-format", "script"}, false, false},
	{"scriptG", []string{"script", "-F", "ip,sym,dso", "-G"}, []string{"-format", "script", "-G"}, false, false},
	{"cpu", reportArgs("--sort", "dso,sym", "--cpu", "1"), []string{"-no-children", "-cpu", "1"}, true, true},
	{"tid", reportArgs("--sort", "comm,sym", "--tid", "104"), []string{"-no-children", "-sort", "comm,sym", "-tid", "104"}, true, true},
	{"dsos", reportArgs("--sort", "sym", "--dsos", "libsyms.so"), []string{"-no-children", "-sort", "sym", "-dso", "libsyms.so"}, true, true},
	{"time", reportArgs("--sort", "dso,sym", "--time", "0.000000100,0.000000300"), []string{"-no-children", "-time", "0.000000100,0.000000300"}, true, true},
	{"children sym", append(reportArgs("--sort", "sym"), "--children"), []string{"-children", "-sort", "sym"}, true, false},
	{"children dso,sym", append(reportArgs("--sort", "dso,sym"), "--children"), []string{"-children", "-sort", "dso,sym"}, true, false},
	{"children pid,dso,sym", append(reportArgs("--sort", "pid,dso,sym"), "--children"), []string{"-children", "-sort", "pid,dso,sym"}, true, false},
	{"children pid,sym", append(reportArgs("--sort", "pid,sym"), "--children"), []string{"-children", "-sort", "pid,sym"}, true, false},
	{"children comm,sym", append(reportArgs("--sort", "comm,sym"), "--children"), []string{"-children", "-sort", "comm,sym"}, true, false},
	{"children comm,dso,sym", append(reportArgs("--sort", "comm,dso,sym"), "--children"), []string{"-children", "-sort", "comm,dso,sym"}, true, false},
	{"dso", reportArgs("--sort", "dso"), []string{"-no-children", "-sort", "dso"}, true, false},
	{"cpu,dso", reportArgs("--sort", "cpu,dso"), []string{"-no-children", "-sort", "cpu,dso"}, true, false},
}

// randomComparison is one output compared with perf's.
type randomComparison struct {
	name       string
	perf, args []string // perf's arguments after -i FILE; kbench report's before FILE
	table      bool     // compare the rows of a report table
	sparse     bool     // a filter that may leave few rows
}

// run runs perf (perfOpts; c.perf, -i data, perfMore) and kbench report
// (kbMore, c.args, data), reports where kbench's table rows or script
// lines differ from perf's, in order, and returns both outputs.
func (c randomComparison) run(t *testing.T, data string, perfOpts perftest.Options, perfMore, kbMore []string) (got, want string) {
	t.Helper()
	want, stderr, err := perftest.Run(perfOpts, slices.Concat(c.perf, []string{"-i", data}, perfMore)...)
	if err != nil {
		t.Fatal(err)
	}
	args := slices.Concat([]string{"-progress", "never"}, kbMore, c.args, []string{data})
	if strings.Contains(stderr, "failed to set cpu bitmap") {
		// perf refuses the --cpu filter (and exits 0): so must kbench.
		if _, _, err := report(t, nil, args...); err == nil || !strings.Contains(err.Error(), "-cpu") {
			t.Errorf("%s: perf refused the CPU filter (%s), kbench: %v", c.name, strings.TrimSpace(stderr), err)
		}
		return "", ""
	}
	got = mustReport(t, nil, args...)
	if c.table {
		g, w := linediff.ReportRows(got), linediff.ReportRows(want)
		if d := linediff.First(strings.Join(g, "\n"), strings.Join(w, "\n")); d != "" {
			t.Errorf("%s: rows differ from perf report's (%d rows): %s", c.name, len(w), d)
		}
	} else if d := linediff.First(trimLines(got), trimLines(want)); d != "" {
		t.Errorf("%s: differs from perf script: %s", c.name, d)
	}
	return got, want
}

// lbrBranchType is the branch_sample_type of perf record --call-graph
// lbr (evsel__config_callchain: user branches, the call stack, no flags
// or cycles, the hardware index), or 0 without lbr.
func lbrBranchType(lbr bool) uint64 {
	if !lbr {
		return 0
	}
	return perfdata.BranchUser | perfdata.BranchCallStack | 1<<14 | 1<<15 | perfdata.BranchHWIndex
}

// reportArgs are perf report's arguments for a flat table, then more.
func reportArgs(more ...string) []string {
	return append([]string{"report", "--stdio", "--no-children", "-n", "-g", "none"}, more...)
}

// TestRandomRecordingsAgainstPerf compares kbench report with perf on
// random recordings (writeRandomRecording): table rows and script lines
// in order. Periods repeat, so that many rows tie and their order is
// perf's trees'. Needs perf.
func TestRandomRecordingsAgainstPerf(t *testing.T) {
	lib, segs, ksFile, ks := randomInputs(t)
	seeds := *randomSeeds
	if testing.Short() {
		seeds = min(seeds, 3)
	}
	for seed := range seeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			dir := t.TempDir()
			data := filepath.Join(dir, "perf.data")
			rng := rand.New(rand.NewPCG(uint64(seed), 17))
			opts := randomRecording{chains: seed%2 == 1, cpus: seed%3 != 0, rounds: seed%4 >= 2, modules: seed%5 >= 2, bpf: seed%7 >= 3, otherModes: seed%6 >= 3,
				lbr: seed%8 == 7, far: seed%4 == 3, read: seed%9 == 4}
			opts.overlap = opts.modules && seed%2 == 1
			ksFile, ks := ksFile, ks
			if opts.modules {
				ksFile, ks = withModules(t, dir, ksFile, ks, rng)
			}
			writeRandomRecording(t, data, rng, opts, lib, segs, ks)
			if *keepRandom {
				if b, err := os.ReadFile(data); err == nil {
					os.WriteFile(filepath.Join(os.TempDir(), fmt.Sprintf("random%d.data", seed)), b, 0o644)
				}
				if b, err := os.ReadFile(ksFile); err == nil {
					os.WriteFile(filepath.Join(os.TempDir(), fmt.Sprintf("random%d.kallsyms", seed)), b, 0o644)
				}
			}
			for _, c := range randomComparisons {
				var perfMore, kbMore []string
				if opts.lbr && c.table {
					// Not branch mode, which a branch stack makes the
					// default: the tables of the samples and their chains.
					perfMore, kbMore = []string{"--no-branch-stack"}, []string{"-no-branch-stack"}
				}
				got, want := c.run(t, data, perftest.Options{NoBuildIDCache: true}, append(perfMore, "--kallsyms", ksFile), append(kbMore, "-debugdir", "-", "-kallsyms", ksFile))
				if !c.sparse && strings.Count(want, "\n") < 10 {
					t.Fatalf("%s: perf printed no more than:\n%s", c.name, want)
				}
				if *keepRandom {
					os.WriteFile(filepath.Join(os.TempDir(), fmt.Sprintf("random%d.%s.perf", seed, c.name)), []byte(want), 0o644)
					os.WriteFile(filepath.Join(os.TempDir(), fmt.Sprintf("random%d.%s.kbench", seed, c.name)), []byte(got), 0o644)
				}
			}
		})
	}
}

// randomInputs skips the test without perf, and returns what random
// recordings are made of: the symbol library and its executable segments
// (symbolLibrary), and the committed kallsyms excerpt, its file and its
// symbols.
func randomInputs(t *testing.T) (lib string, segs []*elf.Prog, ksFile string, ks []kallsyms.Symbol) {
	t.Helper()
	if _, _, err := perftest.Run(perftest.Options{}, "version"); err != nil {
		t.Skipf("perf: %v", err)
	}
	lib, segs = symbolLibrary(t)
	ksFile = filepath.Join(foreignDir, "kallsyms")
	ks, err := kallsyms.ReadFile(ksFile)
	if err != nil {
		t.Fatal(err)
	}
	return lib, segs, ksFile, ks
}

// symbolLibrary builds a shared library of functions of assorted sizes,
// with a symbol table, and returns it and its executable segments.
func symbolLibrary(t *testing.T) (string, []*elf.Prog) {
	dir := t.TempDir()
	var src strings.Builder
	for i := range 40 {
		fmt.Fprintf(&src, "int f%02d(int x) { for (int i = 0; i < %d; i++) x = x * 31 + i; return x; }\n", i, i%7)
	}
	lib := filepath.Join(dir, "libsyms.so")
	if err := testbuild.Compile(t, "gcc", "-O1", "-fPIC", "-shared", "-o", lib, testbuild.Source(t, dir, "syms.c", src.String())); err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var segs []*elf.Prog
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && p.Filesz > 0 {
			segs = append(segs, p)
		}
	}
	if len(segs) == 0 {
		t.Fatal("libsyms.so has no executable segment")
	}
	return lib, segs
}

// withModules writes into dir a kallsyms file: file's symbols (ks) and
// those of three modules drawn from rng, as /proc/kallsyms lists them
// (after the kernel's, "ADDR t NAME\t[MODULE]"). It returns the file and
// all the symbols.
func withModules(t *testing.T, dir, file string, ks []kallsyms.Symbol, rng *rand.Rand) (string, []kallsyms.Symbol) {
	t.Helper()
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.Write(text)
	for i, mod := range []string{"kmoda", "kmodb", "kmodc"} {
		addr := uint64(0xffffffffc0a00000) + uint64(i)<<20
		for j := range 4 + rng.IntN(8) {
			addr += uint64(0x10 + rng.IntN(0x400))
			typ := "tT"[rng.IntN(2)]
			fmt.Fprintf(&b, "%016x %c %s_fn%d\t[%s]\n", addr, typ, mod, j, mod)
		}
	}
	out := filepath.Join(dir, "kallsyms")
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	all, err := kallsyms.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return out, all
}

// moduleFile is the file of module name's MMAP in a random recording,
// unless randomRecording.moduleFiles says otherwise.
func moduleFile(name string) string { return "/lib/modules/6.1.0/kernel/drivers/" + name + ".ko" }

// randomRecording is the kind of recording writeRandomRecording makes.
type randomRecording struct {
	chains bool // samples with callchains
	cpus   bool // samples with their CPU (0 or 1)
	// modules maps the kernel modules of ks's symbols (withModules), all
	// but one by an MMAP record, and samples them.
	modules bool
	// overlap, with modules, makes the module maps overlap as a kernel
	// from 6.4 on reports them (a module's size covers all of its
	// memory, beyond its text), adds maps of modules without symbols
	// laid over them, and writes the MMAPs in a random order: perf 6.1
	// then answers from the shape of its tree of the kernel maps.
	overlap bool
	// otherModes takes some samples in other cpumodes than kernel and
	// user (unknown, hypervisor, guest).
	otherModes bool
	// bpf registers BPF programs (KSYMBOL records), one of them midway,
	// unregisters one midway, and samples them.
	bpf bool
	// rounds writes the records after the first maps as perf record
	// does: each CPU's in time order, the CPUs one after the other, a
	// FINISHED_ROUND after each pass, a CPU now and then a pass late.
	rounds bool
	// lbr records the user call stack in a branch stack too, as perf
	// record --call-graph lbr does (chains only): perf resolves the user
	// frames from it. Tables are compared without branch mode then.
	lbr bool
	// read makes the samples read a counter (PERF_SAMPLE_READ): perf
	// delivers each with the counter's growth as its period.
	read bool
	// moduleFiles, with modules, names the file of a module's MMAP by
	// the module's name (default /lib/modules/6.1.0/kernel/drivers/NAME.ko).
	moduleFiles map[string]string
	// buildIDs are the recording's build-id table.
	buildIDs []perfdata.BuildID
	// far puts addresses from all over the address space in callchains
	// (what frame-pointer walks through code without frame pointers
	// read): outside every map, many 2^63 or more apart, which perf's
	// tree of hist entries compares inconsistently.
	far bool
}

// writeRandomRecording writes to path a random recording drawn from rng:
// four processes and a thread forked in one of them (which may exit and
// go on being sampled), named before, after (perf renames their earlier
// rows) and between their samples, and the idle task; maps laid over
// parts of others mid-way; callchains now and then with a marker perf
// 6.1 does not know (which empties them) or a second user context; user
// samples in the library lib (its executable segments segs, with
// symbols), in two maps of files that do not exist (rows by address only)
// and outside every map; kernel samples in the kallsyms ks. With
// opts.rounds the records come per CPU buffer between FINISHED_ROUNDs,
// out of time order, some after the flush of their round (the thread
// may then be sampled before its FORK, which makes it anew).
func writeRandomRecording(t *testing.T, path string, rng *rand.Rand, opts randomRecording, lib string, segs []*elf.Prog, ks []kallsyms.Symbol) {
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w, err := perfdata.NewWriter(out, perfdata.WriterOptions{Hostname: "test", OSRelease: "6.1.0", Arch: "x86_64", Version: "6.1", Cmdline: []string{"test"},
		Callchains: opts.chains, CPU: opts.cpus, NrCPUs: 2, BranchSampleType: lbrBranchType(opts.lbr), SampleRead: opts.read,
		BuildIDs: opts.buildIDs})
	if err != nil {
		t.Fatal(err)
	}
	counters := map[uint64]uint64{} // by sample id, with opts.read
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
	// BPF programs: registered at the start (the first two) or midway.
	type bpfProg struct {
		addr uint64
		len  uint32
		name string
	}
	var progs []bpfProg
	if opts.bpf {
		addr := uint64(0xffffffffc2000000)
		for i := range 3 {
			n := uint32(0x40 + rng.IntN(0x200))
			progs = append(progs, bpfProg{addr, n, fmt.Sprintf("bpf_prog_%016x_prog%d", rng.Uint64(), i)})
			addr += uint64(n) + uint64(rng.IntN(2))*0x1000
		}
	}
	ksymbol := func(p bpfProg, unregister bool, time uint64) *perfdata.Ksymbol {
		k := &perfdata.Ksymbol{Info: perfdata.Info{Misc: kernel}, Addr: p.addr, Len: p.len, KsymType: perfdata.KsymTypeBPF, Name: p.name,
			SampleID: perfdata.SampleID{Pid: ^uint32(0), Tid: ^uint32(0), Time: time}}
		if unregister {
			k.Flags = 1
		}
		return k
	}
	for _, p := range progs[:min(2, len(progs))] {
		must(w.WriteKsymbol(ksymbol(p, false, 1)))
	}
	var modIPs []uint64
	for _, p := range progs {
		modIPs = append(modIPs, p.addr+uint64(rng.IntN(int(p.len))), p.addr+uint64(p.len)+uint64(rng.IntN(0x10)))
	}
	if opts.modules {
		// Each module's map spans its symbols and a little more, as
		// perf record synthesizes it from /proc/modules; one module has
		// no map, its symbols kallsyms' alone.
		bounds := map[string][2]uint64{}
		var mods []string
		for _, s := range ks {
			if s.Module == "" {
				continue
			}
			r, ok := bounds[s.Module]
			if !ok {
				r[0] = s.Addr &^ 0xfff
				mods = append(mods, s.Module)
			}
			r[1] = s.Addr + 0x100
			bounds[s.Module] = r
			modIPs = append(modIPs, s.Addr+uint64(rng.IntN(8)))
		}
		type modMap struct {
			name      string
			addr, len uint64
		}
		var maps []modMap
		for _, m := range mods {
			r := bounds[m]
			modIPs = append(modIPs, r[1]+uint64(rng.IntN(0x80))) // past its last symbol
			if m == "kmodc" {
				continue
			}
			n := (r[1] - r[0] + 0xfff) &^ 0xfff
			if opts.overlap {
				n = 1<<20 + uint64(rng.IntN(8))*0x1000 // into the next module's (withModules puts them 1 MiB apart)
			}
			maps = append(maps, modMap{m, r[0], n})
		}
		if opts.overlap {
			for i := range 2 + rng.IntN(6) {
				a := uint64(0xffffffffc0a00000) + uint64(rng.IntN(0x280))*0x1000
				maps = append(maps, modMap{fmt.Sprintf("kmodx%d", i), a, uint64(1+rng.IntN(0x100)) * 0x1000})
				modIPs = append(modIPs, a+uint64(rng.IntN(0x1000)), a+uint64(rng.IntN(0x100000)))
			}
			rng.Shuffle(len(maps), func(i, j int) { maps[i], maps[j] = maps[j], maps[i] })
		}
		for _, mm := range maps {
			file := cmp.Or(opts.moduleFiles[mm.name], moduleFile(mm.name))
			must(w.WriteMmap(&perfdata.Mmap{Info: perfdata.Info{Misc: kernel}, Pid: ^uint32(0), Addr: mm.addr, Len: mm.len,
				Filename: file, Prot: 5, Flags: 2}))
		}
	}
	// A few addresses per map, so that entries repeat.
	pick := func(n int, f func() uint64) []uint64 {
		ips := make([]uint64, n)
		for i := range ips {
			ips[i] = f()
		}
		return ips
	}
	const none1, none2, unmapped, libBase = 0x7f00_0000_0000, 0x7f10_0000_0000, 0x6000_0000, 0x7f20_0000_0000
	pools := [][]uint64{
		pick(12, func() uint64 {
			if len(modIPs) > 0 && rng.IntN(2) == 0 {
				return modIPs[rng.IntN(len(modIPs))]
			}
			return kernelIPs[rng.IntN(len(kernelIPs))]
		}),
		pick(12, func() uint64 {
			p := segs[rng.IntN(len(segs))]
			return libBase + p.Vaddr + uint64(rng.Int64N(int64(p.Filesz)))
		}),
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
	// emit writes a record of CPU cpu, at once or, with opts.rounds, at
	// the next pass over that CPU's buffer; pass writes the buffers out.
	var buffers [2][]func() error
	emit := func(cpu int, write func() error) {
		if !opts.rounds {
			must(write())
			return
		}
		buffers[cpu] = append(buffers[cpu], write)
	}
	pass := func(all bool) {
		for cpu := range buffers {
			if cpu == 1 && !all && rng.IntN(4) == 0 {
				continue // late: some of its records come after a later round's flush
			}
			for _, write := range buffers[cpu] {
				must(write())
			}
			buffers[cpu] = buffers[cpu][:0]
		}
		must(w.WriteFinishedRound())
	}
	time := uint64(1)
	comm := func(pid uint32, exec bool) {
		misc := uint16(0)
		if exec {
			misc = perfdata.MiscCommExec
		}
		c := &perfdata.Comm{Info: perfdata.Info{Misc: misc}, Pid: pid, Tid: pid, Comm: names[rng.IntN(len(names))],
			SampleID: perfdata.SampleID{Pid: pid, Tid: pid, Time: time}}
		emit(rng.IntN(2), func() error { return w.WriteComm(c) })
		time++
	}
	pids := []uint32{100, 101, 102, 103}
	for _, pid := range pids {
		if rng.IntN(3) > 0 { // else named by a COMM after its first samples
			comm(pid, true)
			if opts.rounds {
				pass(true) // the maps below come first
			}
		}
		id := perfdata.SampleID{Pid: pid, Tid: pid, Time: time}
		for _, p := range segs {
			start, end := p.Vaddr&^0xfff, (p.Vaddr+p.Filesz+0xfff)&^0xfff
			must(w.WriteMmap(&perfdata.Mmap{Info: perfdata.Info{Misc: user}, Pid: pid, Tid: pid, Addr: libBase + start, Len: end - start,
				Pgoff: p.Off &^ 0xfff, Prot: 5, Flags: 2, Filename: lib, SampleID: id}))
		}
		for i, addr := range []uint64{none1, none2} {
			must(w.WriteMmap(&perfdata.Mmap{Info: perfdata.Info{Misc: user}, Pid: pid, Tid: pid, Addr: addr, Len: 0x10000, Pgoff: pgoffs[i],
				Prot: 5, Flags: 2, Filename: "/nonexistent/" + files[i], SampleID: id}))
		}
		time++
	}
	// A thread of the first process, forked after its first samples.
	const thread = 104
	forked := false
	const contextKernel, contextUser, contextGuestKernel = ^uint64(0) - 128 + 1, ^uint64(0) - 512 + 1, ^uint64(0) - 2176 + 1
	var far []uint64 // opts.far's addresses: anywhere below the context markers
	for range 40 {
		far = append(far, rng.Uint64N(^uint64(0)-4096))
	}
	for range 100 + rng.IntN(300) {
		pid := pids[rng.IntN(len(pids))]
		tid := pid
		if forked && pid == pids[0] && rng.IntN(2) == 0 {
			tid = thread
		}
		if opts.rounds && rng.IntN(15) == 0 {
			pass(false)
		}
		switch {
		case len(progs) > 0 && rng.IntN(80) == 0:
			// Program 2 comes, or program 0 goes (perf drops its map).
			i := 2 * rng.IntN(2)
			k := ksymbol(progs[i], i == 0, time)
			emit(rng.IntN(2), func() error { return w.WriteKsymbol(k) })
			time++
		case rng.IntN(60) == 0:
			comm(pid, rng.IntN(2) == 0)
		case !forked && rng.IntN(40) == 0:
			f := &perfdata.Fork{Pid: pids[0], Ppid: pids[0], Tid: thread, Ptid: pids[0], Time: time,
				SampleID: perfdata.SampleID{Pid: pids[0], Tid: thread, Time: time}}
			emit(rng.IntN(2), func() error { return w.WriteFork(f) })
			time++
			forked = true
		case forked && rng.IntN(150) == 0:
			e := &perfdata.Exit{Pid: pids[0], Ppid: pids[0], Tid: thread, Ptid: pids[0], Time: time,
				SampleID: perfdata.SampleID{Pid: pids[0], Tid: thread, Time: time}}
			emit(rng.IntN(2), func() error { return w.WriteExit(e) })
			time++
		case rng.IntN(50) == 0:
			// A map over part of others (perf splits or replaces them).
			i := rng.IntN(2)
			m := &perfdata.Mmap{Info: perfdata.Info{Misc: user}, Pid: pid, Tid: pid,
				Addr: none1 + uint64(rng.IntN(8))<<13, Len: uint64(1+rng.IntN(8)) << 13, Pgoff: uint64(rng.IntN(4)) << 12,
				Prot: 5, Flags: 2, Filename: "/nonexistent/" + files[i], SampleID: perfdata.SampleID{Pid: pid, Tid: pid, Time: time}}
			emit(rng.IntN(2), func() error { return w.WriteMmap(m) })
			time++
		}
		kind := rng.IntN(len(pools))
		if kind == 0 && rng.IntN(4) == 0 {
			pid, tid = 0, 0 // the idle task
		}
		misc := user
		if kind == 0 {
			misc = kernel
		}
		pool := pools[kind]
		ip := pool[rng.IntN(len(pool))]
		if opts.otherModes && rng.IntN(12) == 0 {
			// Unknown, hypervisor, guest kernel or guest user: no map,
			// level H; perf filters the guest ones.
			misc = []uint16{0, 3, 4, 5}[rng.IntN(4)]
		}
		var chain []uint64
		if opts.chains {
			if kind == 0 {
				chain = append(chain, contextKernel, ip)
				for range rng.IntN(3) {
					chain = append(chain, pools[0][rng.IntN(len(pools[0]))])
				}
			}
			chain = append(chain, contextUser)
			if kind != 0 {
				chain = append(chain, ip)
			}
			for range rng.IntN(4) {
				p := pools[1+rng.IntN(len(pools)-1)]
				chain = append(chain, p[rng.IntN(len(p))])
			}
			if opts.far {
				for range rng.IntN(3) {
					chain = append(chain, far[rng.IntN(len(far))])
				}
			}
			switch rng.IntN(30) {
			case 0: // a marker perf 6.1 does not know empties the chain
				at := rng.IntN(len(chain) + 1)
				chain = slices.Insert(chain, at, contextGuestKernel)
			case 1: // two user contexts, a kernel address in the user part
				chain = append(chain, contextUser, pools[0][rng.IntN(len(pools[0]))])
			}
		}
		cpu := rng.IntN(2)
		sample := &perfdata.Sample{Info: perfdata.Info{Misc: misc}, IP: ip, Pid: pid, Tid: tid, CPU: uint32(cpu),
			Time: time, Period: uint64(1 + rng.IntN(2)), Callchain: chain}
		if opts.lbr {
			// The call stack: at least one branch (perf 6.1 reads a
			// first one even when there is none), between user addresses.
			for range 1 + rng.IntN(4) {
				p, q := pools[1+rng.IntN(len(pools)-1)], pools[1+rng.IntN(len(pools)-1)]
				sample.Branches = append(sample.Branches, perfdata.BranchEntry{From: p[rng.IntN(len(p))], To: q[rng.IntN(len(q))]})
			}
			sample.BranchHWIndex = uint64(len(sample.Branches) - 1)
		}
		if opts.read {
			// A counter per CPU's id (1, 2), growing by 0 to 2: perf
			// delivers the growth as the period, nothing for 0; now and
			// then an id no event has, which perf counts and drops.
			id := uint64(1 + cpu)
			if rng.IntN(20) == 0 {
				id = 99
			}
			counters[id] += uint64(rng.IntN(3))
			sample.Read.Values = []perfdata.ReadValue{{Value: counters[id], ID: id}}
		}
		emit(cpu, func() error { return w.WriteSample(sample) })
		time++
	}
	if opts.rounds {
		pass(true)
	}
	must(w.Close())
}
