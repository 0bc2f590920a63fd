package main

import (
	"debug/elf"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/internal/testbuild"
)

// Samples in a kallsyms D or B symbol (data, STT_OBJECT to perf) are
// named in perf report's tables with the first sample's offset in the
// symbol ("data_obj+0x10", _hist_entry__sym_snprintf); perf script names
// them plainly. A foreign kernel's addresses resolved against this
// machine's kallsyms land there.
func TestReportObjectSymbols(t *testing.T) {
	ks := filepath.Join(t.TempDir(), "kallsyms")
	if err := os.WriteFile(ks, []byte(strings.Join([]string{
		"ffffffff81000000 T _text",
		"ffffffff81000100 T func_a",
		"ffffffff81000200 t func_b",
		"ffffffff81000800 T _etext",
		"ffffffff81001000 D data_obj",
		"ffffffff81001100 d data_local",
		"ffffffff81002000 B bss_obj",
		"ffffffff81003000 B _end",
	}, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := perfdata.WriterOptions{Arch: "x86_64"}
	path := writeRecordingWith(t, opts, func(w *perfdata.Writer) {
		kernel := perfdata.Info{Misc: uint16(perfdata.CPUModeKernel)}
		w.WriteMmap(&perfdata.Mmap{Info: kernel, Pid: ^uint32(0), Addr: 0xffffffff81000000, Len: 0x1000000,
			Pgoff: 0xffffffff81000000, Filename: "[kernel.kallsyms]_text", Prot: 5})
		for i, ip := range []uint64{
			0xffffffff81001010, 0xffffffff81001020, 0xffffffff81001010, // data_obj: the first sample's offset, 0x10
			0xffffffff81001108,                     // data_local
			0xffffffff81002008, 0xffffffff81002000, // bss_obj+0x8
			0xffffffff81000104, 0xffffffff81000204, // functions, plain
		} {
			w.WriteSample(&perfdata.Sample{Info: kernel, Pid: 7, Tid: 7, Time: uint64(10 + i), Period: 1, IP: ip})
		}
	})
	table := mustReport(t, nil, "-debugdir", "-", "-kallsyms", ks, "-format", "table", path)
	for _, want := range []string{"[k] data_obj+0x10\n", "[k] data_local+0x8\n", "[k] bss_obj+0x8\n", "[k] func_a\n", "[k] func_b\n"} {
		if !strings.Contains(table, want) {
			t.Errorf("the table has no %q:\n%s", strings.TrimSpace(want), table)
		}
	}
	compareWithPerf(t, path, ks, []perfComparison{
		{[]string{"-format", "script"}, []string{"script", "-F", "ip,sym,dso"}},
		{[]string{"-no-children"}, []string{"report", "--stdio", "--no-children", "-n", "-g", "none", "--sort", "dso,sym"}},
		{[]string{"-no-children", "-sort", "sym"}, []string{"report", "--stdio", "--no-children", "-n", "-g", "none", "--sort", "sym"}},
		{[]string{"-no-children", "-sort", "pid,sym"}, []string{"report", "--stdio", "--no-children", "-n", "-g", "none", "--sort", "pid,sym"}},
	})

	// With callchains, a children table's entry is named by the address
	// it was made for: a frame's (its raw address) when a callchain
	// reached the symbol first.
	const contextKernel = ^uint64(0) - 128 + 1
	opts.Callchains = true
	path = writeRecordingWith(t, opts, func(w *perfdata.Writer) {
		kernel := perfdata.Info{Misc: uint16(perfdata.CPUModeKernel)}
		w.WriteMmap(&perfdata.Mmap{Info: kernel, Pid: ^uint32(0), Addr: 0xffffffff81000000, Len: 0x1000000,
			Pgoff: 0xffffffff81000000, Filename: "[kernel.kallsyms]_text", Prot: 5})
		for i, chain := range [][]uint64{
			{contextKernel, 0xffffffff81000104, 0xffffffff81001030, 0xffffffff81002010},
			{contextKernel, 0xffffffff81001010, 0xffffffff81000204},
			{contextKernel, 0xffffffff81002004},
		} {
			w.WriteSample(&perfdata.Sample{Info: kernel, Pid: 7, Tid: 7, Time: uint64(10 + i), Period: 1, IP: chain[1], Callchain: chain})
		}
	})
	children := mustReport(t, nil, "-debugdir", "-", "-kallsyms", ks, "-format", "table", "-children", path)
	for _, want := range []string{"[k] data_obj+0x30\n", "[k] bss_obj+0x10\n"} {
		if !strings.Contains(children, want) {
			t.Errorf("the children table has no %q:\n%s", strings.TrimSpace(want), children)
		}
	}
	compareWithPerf(t, path, ks, []perfComparison{
		{[]string{"-format", "script"}, []string{"script", "-F", "ip,sym,dso"}},
		{[]string{"-children"}, []string{"report", "--stdio", "--children", "-n", "-g", "none", "--sort", "dso,sym"}},
		{[]string{"-no-children"}, []string{"report", "--stdio", "--no-children", "-n", "-g", "none", "--sort", "dso,sym"}},
		{[]string{"-children", "-sort", "sym"}, []string{"report", "--stdio", "--children", "-n", "-g", "none", "--sort", "sym"}},
	})
}

// perf's hist entry keeps the address of the entry that made it and
// takes the map of each entry merged into it (hists__findnew_entry), so
// the row of an object symbol that processes map at different addresses
// is named with the first entry's address less the symbol's start mapped
// back through the last one's map: a large offset. Two processes map a
// library's data at different addresses; samples and callchain frames
// land in its data object.
func TestReportObjectSymbolAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	src := testbuild.Source(t, dir, "obj.c", "int table[256] = {1};\nint get(int i) { return table[i]; }\n")
	lib := filepath.Join(dir, "libobj.so")
	if err := testbuild.Compile(t, "gcc", "-shared", "-fPIC", "-O2", "-o", lib, src); err != nil {
		t.Skip(err)
	}
	f, err := elf.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.Symbols()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var table elf.Symbol
	for _, s := range syms {
		if s.Name == "table" {
			table = s
		}
	}
	var data *elf.Prog
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_W != 0 && table.Value >= p.Vaddr && table.Value < p.Vaddr+p.Memsz {
			data = p
		}
	}
	if table.Name == "" || data == nil {
		t.Fatalf("no table symbol in a writable segment of %s", lib)
	}
	page := uint64(0x1000)
	segStart, segOff := data.Vaddr&^(page-1), data.Off&^(page-1)
	segLen := (data.Vaddr + data.Memsz - segStart + page - 1) &^ (page - 1)
	bases := map[uint32]uint64{7: 0x7f1200000000, 8: 0x7f3400000000}
	at := func(pid uint32, off uint64) uint64 { return bases[pid] + table.Value - segStart + off }
	const contextUser = ^uint64(0) - 512 + 1
	type sample struct {
		pid      uint32
		ip, from uint64
	}
	record := func(samples []sample) string {
		opts := perfdata.WriterOptions{Arch: "x86_64", Callchains: true}
		return writeRecordingWith(t, opts, func(w *perfdata.Writer) {
			u := perfdata.Info{Misc: uint16(perfdata.CPUModeUser)}
			for pid, base := range bases {
				w.WriteComm(&perfdata.Comm{Pid: pid, Tid: pid, Comm: "p"})
				w.WriteMmap(&perfdata.Mmap{Info: u, Pid: pid, Tid: pid, Addr: base, Len: segLen, Pgoff: segOff, Filename: lib, Prot: 3})
			}
			for i, s := range samples {
				w.WriteSample(&perfdata.Sample{Info: u, Pid: s.pid, Tid: s.pid, Time: uint64(100 + i), Period: 1, IP: s.ip,
					Callchain: []uint64{contextUser, s.ip, s.from}})
			}
		})
	}
	samples := []sample{
		{7, at(7, 0x10), at(7, 0x40)},
		{8, at(8, 0x20), at(8, 0x48)},
		{7, at(7, 0x18), at(7, 0x44)},
		{8, at(8, 0x28), at(8, 0x4c)},
	}
	path := record(samples)
	ks := filepath.Join(dir, "kallsyms")
	if err := os.WriteFile(ks, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Without perf: the row's offset with process 8's samples last is
	// that of process 7's alone less the difference of their bases.
	offset := func(path string, flag string) uint64 {
		out := mustReport(t, nil, "-debugdir", "-", "-kallsyms", ks, "-format", "table", flag, path)
		_, after, ok := strings.Cut(out, "table+0x")
		if !ok {
			t.Fatalf("no object row in:\n%s", out)
		}
		off, err := strconv.ParseUint(strings.Fields(after)[0], 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		return off
	}
	alone := record([]sample{samples[0], samples[2]})
	for _, flag := range []string{"-children", "-no-children"} {
		if both, one := offset(path, flag), offset(alone, flag); both != one+bases[7]-bases[8] {
			t.Errorf("%s: offset %#x, want %#x (process 7's alone, %#x, through process 8's map)", flag, both, one+bases[7]-bases[8], one)
		}
	}
	// Process 7's first sample again, last: the row is named through
	// process 7's map again. A flat table counts a repeated sample from
	// its sample-cache slot (countCached), which must not skip an object
	// symbol's sample, whose map names the row.
	again := record([]sample{samples[0], samples[1], samples[0]})
	for _, flag := range []string{"-children", "-no-children"} {
		if got, one := offset(again, flag), offset(alone, flag); got != one {
			t.Errorf("%s, process 7's sample again last: offset %#x, want %#x (process 7's alone)", flag, got, one)
		}
	}
	compareWithPerf(t, again, ks, []perfComparison{
		{[]string{"-children"}, []string{"report", "--stdio", "--children", "-n", "-g", "none", "--sort", "dso,sym"}},
		{[]string{"-no-children"}, []string{"report", "--stdio", "--no-children", "-n", "-g", "none", "--sort", "dso,sym"}},
	})
	compareWithPerf(t, path, ks, []perfComparison{
		{[]string{"-children"}, []string{"report", "--stdio", "--children", "-n", "-g", "none", "--sort", "dso,sym"}},
		{[]string{"-no-children"}, []string{"report", "--stdio", "--no-children", "-n", "-g", "none", "--sort", "dso,sym"}},
		{[]string{"-no-children", "-sort", "sym"}, []string{"report", "--stdio", "--no-children", "-n", "-g", "none", "--sort", "sym"}},
		{[]string{"-no-children", "-sort", "pid,sym"}, []string{"report", "--stdio", "--no-children", "-n", "-g", "none", "--sort", "pid,sym"}},
		{[]string{"-children", "-sort", "sym"}, []string{"report", "--stdio", "--children", "-n", "-g", "none", "--sort", "sym"}},
	})
}
