package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/internal/linediff"
	"github.com/kmapindex/kmapindex/internal/perftest"
)

// A table is perf report's whole, not only its rows: the lost samples,
// the samples and event count of each event or group, the column
// headers and their dotted lines (the Symbol column as wide as perf's
// longest symbol name, an inlined function's " (inlined)" and a CPU's
// digits past their column's width), the blank lines between tables.
// Only the first line (perf's pointer to --header, kbench's count of
// samples without a map) and perf's closing tip differ.
func TestReportWholeTableLikePerf(t *testing.T) {
	if testing.Short() {
		t.Skip("runs perf report")
	}
	recordings := []string{
		"testdata/group/group.data",                     // an event group: one table, two columns each
		"testdata/dwarf/dwarf.data",                     // inlined functions in the children table
		"testdata/mixed/mixed.data",                     // an event without callchains beside one with
		"testdata/perthread/perthread.data",             // a ring buffer per thread: rounds of many runs
		"../../ingest/attrib/testdata/twoevents-g.data", // two tables
		"../../ingest/perfdata/testdata/callchain.data",
		"../../ingest/perfdata/testdata/samplecpu.data",
		"../../ingest/perfdata/testdata/multi.data",
	}
	views := []perfComparison{
		{[]string{"-no-children"}, []string{"--no-children", "--sort", "dso,sym"}},
		{[]string{"-children"}, []string{"--children", "--sort", "dso,sym"}},
		{[]string{"-no-children", "-sort", "comm,dso,sym"}, []string{"--no-children", "--sort", "comm,dso,sym"}},
		{[]string{"-children", "-sort", "sym,dso"}, []string{"--children", "--sort", "sym,dso"}},
		{[]string{"-no-children", "-sort", "cpu,dso,sym"}, []string{"--no-children", "--sort", "cpu,dso,sym"}},
		// Filters: an elided column's line, the time slices, no entry.
		{[]string{"-no-children", "-dso", "[kernel.kallsyms]"}, []string{"--no-children", "--sort", "dso,sym", "--dsos", "[kernel.kallsyms]"}},
		{[]string{"-children", "-comm", "sh,perf-exec"}, []string{"--children", "--sort", "dso,sym", "--comms", "sh,perf-exec"}},
		{[]string{"-children", "-time", "0,"}, []string{"--children", "--sort", "dso,sym", "--time", "0,"}},
		// Percents of the recording's time (SAMPLE_TIME), one slice or several.
		{[]string{"-children", "-time", "50%/2"}, []string{"--children", "--sort", "dso,sym", "--time", "50%/2"}},
		{[]string{"-no-children", "-time", "0%-30%,60%-100%"}, []string{"--no-children", "--sort", "dso,sym", "--time", "0%-30%,60%-100%"}},
		{[]string{"-no-children", "-time", "50%"}, []string{"--no-children", "--sort", "dso,sym", "--time", "50%"}},
		{[]string{"-no-children", "-time", "999999,"}, []string{"--no-children", "--sort", "dso,sym", "--time", "999999,"}},
	}
	for _, f := range recordings {
		for i, v := range views {
			got := mustReport(t, nil, append(append([]string{"-debugdir", "-", "-kallsyms", kallsymsSubset}, v.kbench...), f)...)
			args := append(append([]string{"report", "--stdio", "-n", "-g", "none"}, v.perf...), "-i", f, "--kallsyms", kallsymsSubset)
			want, _, err := perftest.Run(perftest.Options{NoBuildIDCache: true}, args...)
			if err != nil {
				t.Logf("perf: %v", err)
				return
			}
			if strings.Count(want, "\n") < 10 && i < len(views)-1 { // the last keeps no sample
				t.Fatalf("%s %q: perf's table is %d lines", f, v.kbench, strings.Count(want, "\n"))
			}
			if d := linediff.First(linediff.ReportText(got), linediff.ReportText(want)); d != "" {
				t.Errorf("%s %q: differs from perf's: %s", f, v.kbench, d)
			}
		}
	}
	// A recording without samples (perf stat record's): no table, as
	// perf prints none ("The FILE data has no samples!").
	for _, v := range views[:2] {
		f := "testdata/stat/system.data"
		got := mustReport(t, nil, append(append([]string{"-debugdir", "-", "-kallsyms", kallsymsSubset}, v.kbench...), f)...)
		want, _, err := perftest.Run(perftest.Options{NoBuildIDCache: true}, append(append([]string{"report", "--stdio", "-n", "-g", "none"}, v.perf...), "-i", f)...)
		if err != nil {
			t.Fatalf("perf: %v", err)
		}
		if d := linediff.First(linediff.ReportText(got), linediff.ReportText(want)); d != "" {
			t.Errorf("%s %q: differs from perf's: %s", f, v.kbench, d)
		}
	}
}

// So is the table of every committed recording from elsewhere that perf
// reads (an empty kallsyms file: kernel frames read the same on any
// boot), with and without children: perf versions 3.2 to 6.12, their
// event names (EVENT_DESC's, by position, as perf 6.1 gives them: one
// entry had no ids and was named from its attr), groups, branch stacks.
func TestReportForeignWholeTablesLikePerf(t *testing.T) {
	if testing.Short() {
		t.Skip("runs perf report")
	}
	empty := filepath.Join(t.TempDir(), "kallsyms")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(foreignDir, "perf.data.*"))
	compared := 0
	for _, f := range files {
		for _, view := range []string{"-no-children", "-children"} {
			args := []string{"report", "--stdio", "-n", "-g", "none", "--sort", "dso,sym", "-" + view, "-i", f, "--kallsyms", empty}
			want, _, err := perftest.Run(perftest.Options{NoBuildIDCache: true}, args...)
			if err != nil || !strings.Contains(want, "# Samples: ") {
				continue // a recording perf 6.1 refuses (or no perf)
			}
			got, _, err := report(t, nil, "-kallsyms", empty, view, f)
			if err != nil {
				t.Errorf("%s %s: %v", filepath.Base(f), view, err)
				continue
			}
			compared++
			if d := linediff.First(linediff.ReportText(got), linediff.ReportText(want)); d != "" {
				t.Errorf("%s %s: differs from perf's: %s", filepath.Base(f), view, d)
			}
		}
	}
	if compared == 0 {
		t.Skip("perf read none of the recordings")
	}
	t.Logf("%d tables equal perf's", compared)
}
