package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/internal/linediff"
	"github.com/kmapindex/kmapindex/internal/perftest"
)

// A callchain that an unknown context marker empties after the walk in
// caller order reported some of its frames adds nothing to the Children
// column: perf resolves the whole chain first and resets it, so those
// frames make no rows (kbench printed them at 0.00 %). Compared with
// perf report when it is installed.
func TestReportChildrenChainEmptiedLate(t *testing.T) {
	const contextUser, unknownMarker = ^uint64(0) - 512 + 1, ^uint64(0) - 0x12f
	path := writeRecordingWith(t, perfdata.WriterOptions{Arch: "x86_64", Callchains: true}, func(w *perfdata.Writer) {
		u := perfdata.Info{Misc: uint16(perfdata.CPUModeUser)}
		w.WriteMmap(&perfdata.Mmap{Info: u, Pid: 7, Tid: 7, Addr: 0x400000, Len: 0x10000, Filename: "/nonexistent/x", Prot: 5})
		for i := range 5 { // caller order walks 0x400030, 0x400020, then meets the marker
			w.WriteSample(&perfdata.Sample{Info: u, Pid: 7, Tid: 7, Time: uint64(10 + i), Period: 1, IP: 0x400010,
				Callchain: []uint64{unknownMarker, 0x400010, contextUser, 0x400020, 0x400030}})
		}
		w.WriteSample(&perfdata.Sample{Info: u, Pid: 7, Tid: 7, Time: 20, Period: 1, IP: 0x400040,
			Callchain: []uint64{contextUser, 0x400040, 0x400050}})
	})
	got := mustReport(t, nil, "-debugdir", "-", "-kallsyms", "none", "-children", path)
	rows := linediff.ReportRows(got)
	if len(rows) != 4 || strings.Contains(got, "400020") || strings.Contains(got, "400030") {
		t.Errorf("want 4 rows, none of the emptied chain's frames:\n%s", got)
	}
	want, _, err := perftest.Run(perftest.Options{NoBuildIDCache: true}, "report", "-i", path, "--stdio", "--children", "--sort", "dso,sym", "-n", "-g", "none")
	if err != nil {
		t.Logf("perf: %v", err)
		return
	}
	if d := linediff.First(strings.Join(rows, "\n"), strings.Join(linediff.ReportRows(want), "\n")); d != "" {
		t.Errorf("rows differ from perf report's: %s", d)
	}
}

// A callchain an unknown context marker empties makes no entry, not even
// for the frames the caller-order walk meets before the marker: perf
// resolves the whole chain before it makes entries. Here the emptied
// chain's frame outside every map comes after a kernel frame, so that an
// entry made for it would show the kernel level; the later user sample's
// chain makes it at the user level, as perf shows it.
func TestReportChildrenVoidChainMakesNoEntry(t *testing.T) {
	const contextKernel, contextUser, unknownMarker = ^uint64(0) - 128 + 1, ^uint64(0) - 512 + 1, ^uint64(0) - 0x12f
	const kernelIP, noMap = 0xffffffff81000100, 0x500000
	path := writeRecordingWith(t, perfdata.WriterOptions{Arch: "x86_64", Callchains: true}, func(w *perfdata.Writer) {
		u := perfdata.Info{Misc: uint16(perfdata.CPUModeUser)}
		k := perfdata.Info{Misc: uint16(perfdata.CPUModeKernel)}
		w.WriteMmap(&perfdata.Mmap{Info: k, Pid: ^uint32(0), Addr: 0xffffffff81000000, Len: 0x1000000, Pgoff: 0xffffffff81000000,
			Filename: "[kernel.kallsyms]_text", Prot: 5})
		w.WriteMmap(&perfdata.Mmap{Info: u, Pid: 7, Tid: 7, Addr: 0x400000, Len: 0x10000, Filename: "/nonexistent/x", Prot: 5})
		// Caller order: kernelIP (kernel map), noMap (kernel mode, no map),
		// then the unknown marker empties the chain.
		w.WriteSample(&perfdata.Sample{Info: k, Pid: 7, Tid: 7, Time: 10, Period: 1, IP: kernelIP,
			Callchain: []uint64{unknownMarker, 0x400010, contextKernel, noMap, kernelIP}})
		w.WriteSample(&perfdata.Sample{Info: u, Pid: 7, Tid: 7, Time: 20, Period: 1, IP: 0x400040,
			Callchain: []uint64{contextUser, 0x400040, noMap}})
	})
	got := mustReport(t, nil, "-debugdir", "-", "-kallsyms", "none", "-children", path)
	var row string
	for _, r := range linediff.ReportRows(got) {
		if strings.Contains(r, "0x0000000000500000") {
			row = r
		}
	}
	if !strings.Contains(row, "[.]") {
		t.Errorf("the row of %#x is %q, want it at the user level [.]:\n%s", noMap, row, got)
	}
	ks := filepath.Join(foreignDir, "kallsyms")
	for _, args := range [][]string{{"-children"}, {"-children", "-sort", "sym"}, {"-children", "-sort", "pid,sym"}} {
		got := mustReport(t, nil, append(append([]string{"-debugdir", "-", "-kallsyms", ks}, args...), path)...)
		perfArgs := []string{"report", "-i", path, "--kallsyms", ks, "--stdio", "--children", "-n", "-g", "none", "--sort", "dso,sym"}
		if len(args) > 1 {
			perfArgs[len(perfArgs)-1] = args[2]
		}
		want, _, err := perftest.Run(perftest.Options{NoBuildIDCache: true}, perfArgs...)
		if err != nil {
			t.Logf("perf: %v", err)
			return
		}
		if d := linediff.First(strings.Join(linediff.ReportRows(got), "\n"), strings.Join(linediff.ReportRows(want), "\n")); d != "" {
			t.Errorf("%q: rows differ from perf report's: %s", args, d)
		}
	}
}

// Samples of other cpumodes than kernel and user find no map at perf's
// level "H" (thread__find_map), and a guest one is filtered (perf report
// without --guest): perf script skips it, perf report counts it in the
// totals and hides the entries it makes, its callchain's too. Samples
// outside every map are one entry per address whatever their levels,
// showing the first one's. Compared with perf report (flat and children
// tables, by default keys and sort keys) and perf script.
func TestReportGuestAndHypervisorSamples(t *testing.T) {
	const contextUser = ^uint64(0) - 512 + 1
	path := writeRecordingWith(t, perfdata.WriterOptions{Arch: "x86_64", Callchains: true}, func(w *perfdata.Writer) {
		u := perfdata.Info{Misc: uint16(perfdata.CPUModeUser)}
		w.WriteMmap(&perfdata.Mmap{Info: u, Pid: 7, Tid: 7, Addr: 0x400000, Len: 0x10000, Filename: "/nonexistent/x", Prot: 5})
		tm := uint64(10)
		// cpumode, address: user, kernel, hypervisor, guest kernel, guest
		// user, and the modes perf has no name for, in and out of the map.
		for _, s := range []struct {
			mode uint16
			ip   uint64
		}{
			{1, 0x400010}, {2, 0x400020}, {3, 0x400030}, {4, 0x400040}, {5, 0x400050}, {6, 0x400060}, {7, 0x400070}, {0, 0x400080},
			{4, 0x900000}, {1, 0x900000}, {2, 0x900000}, {3, 0x900000}, {1, 0x800000}, {2, 0x800000},
			{5, 0x700000}, {2, 0x700000}, {3, 0x600000}, {1, 0x600000}, {2, 0x600000}, {0, 0x500000},
		} {
			for range 1 + int(s.ip>>4&3) {
				tm++
				w.WriteSample(&perfdata.Sample{Info: perfdata.Info{Misc: s.mode}, Pid: 7, Tid: 7, Time: tm, Period: 1, IP: s.ip,
					Callchain: []uint64{contextUser, s.ip, 0x400100 + s.ip&0xf0, 0xa00000}})
			}
		}
	})
	ks := filepath.Join(foreignDir, "kallsyms")
	got := mustReport(t, nil, "-debugdir", "-", "-kallsyms", ks, "-no-children", path)
	if !strings.Contains(got, "[H] 0x0000000000600000") || strings.Contains(got, "0x0000000000700000") {
		t.Errorf("want 0x600000 at level [H] and no row of 0x700000 (a guest sample made it):\n%s", got)
	}
	compareWithPerf(t, path, ks, []perfComparison{
		{[]string{"-no-children"}, []string{"report", "--stdio", "--no-children", "-n", "-g", "none", "--sort", "dso,sym"}},
		{[]string{"-children"}, []string{"report", "--stdio", "--children", "-n", "-g", "none", "--sort", "dso,sym"}},
		{[]string{"-format", "script"}, []string{"script", "-F", "ip,sym,dso"}},
		{[]string{"-format", "script", "-G"}, []string{"script", "-F", "ip,sym,dso", "-G"}},
		{[]string{"-no-children", "-sort", "sym"}, []string{"report", "--stdio", "--no-children", "-n", "-g", "none", "--sort", "sym"}},
		{[]string{"-no-children", "-sort", "dso,sym"}, []string{"report", "--stdio", "--no-children", "-n", "-g", "none", "--sort", "dso,sym"}},
		{[]string{"-children", "-sort", "comm,dso,sym"}, []string{"report", "--stdio", "--children", "-n", "-g", "none", "--sort", "comm,dso,sym"}},
		{[]string{"-children", "-sort", "pid,sym"}, []string{"report", "--stdio", "--children", "-n", "-g", "none", "--sort", "pid,sym"}},
	})
}

// perfComparison is one output kbench report and perf must agree on:
// kbench's arguments and perf's (a perf script command or a perf report
// table).
type perfComparison struct{ kbench, perf []string }

// compareWithPerf runs each comparison on the recording at path with the
// kallsyms file ks and reports where kbench's output differs from perf's
// (script lines, or table rows, in order). Without perf it logs why and
// stops.
func compareWithPerf(t *testing.T, path, ks string, cs []perfComparison) {
	t.Helper()
	for _, tc := range cs {
		got := mustReport(t, nil, append(append([]string{"-debugdir", "-", "-kallsyms", ks}, tc.kbench...), path)...)
		want, _, err := perftest.Run(perftest.Options{NoBuildIDCache: true}, append(tc.perf, "-i", path, "--kallsyms", ks)...)
		if err != nil {
			t.Logf("perf: %v", err)
			return
		}
		g, wl := linediff.ReportRows(got), linediff.ReportRows(want)
		if tc.perf[0] == "script" {
			g, wl = strings.Split(trimLines(got), "\n"), strings.Split(trimLines(want), "\n")
		}
		if d := linediff.First(strings.Join(g, "\n"), strings.Join(wl, "\n")); d != "" {
			t.Errorf("%q: differs from perf's: %s", tc.kbench, d)
		}
	}
}
