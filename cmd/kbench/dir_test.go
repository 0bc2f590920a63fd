package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/kmapindex/kmapindex/corpus/gen"
	"github.com/kmapindex/kmapindex/internal/linediff"
	"github.com/kmapindex/kmapindex/internal/perftest"
)

// A perf.data directory that perf record --kcore left (its header file
// "data" and kcore_dir/ with kallsyms, kcore and modules copies) takes its
// kernel symbols and maps from kcore_dir unless -kallsyms says otherwise,
// as perf 6.1 does (perf_data__kallsyms_name).
func TestReportKcoreDir(t *testing.T) {
	corpusDir := filepath.Join(t.TempDir(), "corpus")
	if _, err := gen.Generate(gen.Params{Arch: "x86_64", Seed: 11, Samples: 800, Modules: 20, BPF: 5, Procs: 5}, corpusDir); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "perf.data")
	kcoreDir := filepath.Join(dir, "kcore_dir")
	if err := os.MkdirAll(kcoreDir, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile := func(from, to string) {
		if err := os.WriteFile(to, mustRead(t, from), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(filepath.Join(corpusDir, "perf.data"), filepath.Join(dir, "data"))
	for _, name := range []string{"kallsyms", "kcore", "modules"} {
		copyFile(filepath.Join(corpusDir, name), filepath.Join(kcoreDir, name))
	}
	got := mustReport(t, nil, "-format", "script", "-debugdir", "-", dir)
	explicit := mustReport(t, nil, "-format", "script", "-debugdir", "-", "-kallsyms", filepath.Join(kcoreDir, "kallsyms"), filepath.Join(corpusDir, "perf.data"))
	if d := linediff.First(got, explicit); d != "" {
		t.Fatalf("the directory differs from its data file with -kallsyms kcore_dir/kallsyms: %s", d)
	}
	if want, err := perftest.Script(dir); err == nil {
		if d := linediff.First(got, want); d != "" {
			t.Errorf("differs from perf script: %s", d)
		}
	} else if !errors.Is(err, perftest.ErrNotInstalled) {
		t.Fatal(err)
	}
	// Without kcore beside kallsyms the kernel map keeps the MMAP's range,
	// and some samples attribute differently.
	if err := os.Remove(filepath.Join(kcoreDir, "kcore")); err != nil {
		t.Fatal(err)
	}
	if bare := mustReport(t, nil, "-format", "script", "-debugdir", "-", dir); bare == got {
		t.Error("same output without kcore_dir/kcore: kcore_dir was not used")
	}
}

// perf record --threads writes a directory whose data files hold each
// writer thread's records; kbench reads them as perf 6.1 does, in turns,
// and prints what perf prints.
func TestReportThreadsDirLive(t *testing.T) {
	if testing.Short() {
		t.Skip("records the system for a second")
	}
	dir := filepath.Join(t.TempDir(), "threads.data")
	args := []string{"--threads", "-a", "-g", "-F", "4999", "--no-buildid-cache"}
	perfRecordOrSkip(t, dir, args, "sh", "-c", "for i in $(seq 400); do ls / >/dev/null; done")
	files, err := filepath.Glob(filepath.Join(dir, "data.*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("perf record --threads wrote no data.N file: %v", err)
	}
	// The workload's processes and the idle thread only: a system-wide
	// recording also holds processes whose binaries may be gone before
	// the second tool reads them (a test binary of a parallel go test
	// went between kbench and perf: malloc@plt against [unknown]).
	comms := "sh,ls,swapper"
	if rows := linediff.ReportRows(mustReport(t, nil, "-debugdir", "-", "-kallsyms", "/proc/kallsyms", "-comm", comms, dir)); len(rows) == 0 {
		t.Fatalf("no rows of %s in the recording", comms)
	}
	compareWithPerf(t, dir, "/proc/kallsyms", []perfComparison{
		{[]string{"-format", "script", "-comm", comms}, []string{"script", "-F", "ip,sym,dso", "--comms", comms}},
		{[]string{"-format", "script", "-G", "-comm", comms}, []string{"script", "-F", "ip,sym,dso", "-G", "--comms", comms}},
		{[]string{"-no-children", "-comm", comms}, []string{"report", "--stdio", "--sort", "dso,sym", "--no-children", "-n", "-g", "none", "--comms", comms}},
		{[]string{"-children", "-comm", comms}, []string{"report", "--stdio", "--sort", "dso,sym", "--children", "-n", "-g", "none", "--comms", comms}},
	})
}
