package main

import (
	"os"
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
	path := filepath.Join(t.TempDir(), "perf.data")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := perfdata.NewWriter(f, perfdata.WriterOptions{Arch: "x86_64", Callchains: true})
	if err != nil {
		t.Fatal(err)
	}
	u := perfdata.Info{Misc: uint16(perfdata.CPUModeUser)}
	const contextUser, unknownMarker = ^uint64(0) - 512 + 1, ^uint64(0) - 0x12f
	w.WriteMmap(&perfdata.Mmap{Info: u, Pid: 7, Tid: 7, Addr: 0x400000, Len: 0x10000, Filename: "/nonexistent/x", Prot: 5})
	for i := range 5 { // caller order walks 0x400030, 0x400020, then meets the marker
		w.WriteSample(&perfdata.Sample{Info: u, Pid: 7, Tid: 7, Time: uint64(10 + i), Period: 1, IP: 0x400010,
			Callchain: []uint64{unknownMarker, 0x400010, contextUser, 0x400020, 0x400030}})
	}
	w.WriteSample(&perfdata.Sample{Info: u, Pid: 7, Tid: 7, Time: 20, Period: 1, IP: 0x400040,
		Callchain: []uint64{contextUser, 0x400040, 0x400050}})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
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
