package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
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
