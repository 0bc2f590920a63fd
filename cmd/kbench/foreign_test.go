package main

import (
	"bytes"
	"compress/gzip"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/attrib"
	"github.com/kmapindex/kmapindex/internal/linediff"
	"github.com/kmapindex/kmapindex/internal/perftest"
)

var updateForeign = flag.Bool("update-foreign", false, "rewrite testdata/foreign/golden with the installed perf")

const foreignDir = "testdata/foreign"

// foreignSettings are the kallsyms settings the foreign recordings are
// compared in: an empty file (no kernel symbols; also what both tools
// fall back to for a recording from another kernel) and a kallsyms from
// another boot, which relocates every kernel symbol (kallsyms__delta).
var foreignSettings = []string{"empty", "kallsyms"}

// foreignModes are the outputs compared: the table, without and with
// the Children column, the tables by sym and by pid,sym (whose keys
// perf compares inconsistently: see attrib's histTree), and perf script
// with and without callchains.
var foreignModes = map[string][]string{
	"table":    {"-format", "table"},
	"children": {"-format", "table", "-children"},
	"sym":      {"-format", "table", "-no-children", "-sort", "sym"},
	"pidsym":   {"-format", "table", "-no-children", "-sort", "pid,sym"},
	"script":   {"-format", "script"},
	"scriptG":  {"-format", "script", "-G"},
}

// foreignSorts are the perf report --sort keys of the table modes.
var foreignSorts = map[string]string{"table": "dso,sym", "children": "dso,sym", "sym": "sym", "pidsym": "pid,sym"}

// TestForeignRecordings compares kbench report with perf 6.1 on the
// recordings of testdata/foreign, made on other machines by perf 3.2 to
// 6.12 and by Android's simpleperf (see its README): table rows in
// order, script lines in order, against gzipped goldens perf wrote (go
// test -run Foreign -update-foreign). perf symbolizes a [vdso] map with
// its own process's vdso: golden/vdso.so is the one the goldens were
// written with, and kbench reads it (-vdso), so that the comparison
// holds on any machine.
func TestForeignRecordings(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(foreignDir, "perf.data.*"))
	if err != nil || len(files) < 24 {
		t.Fatalf("foreign recordings: %d files, %v", len(files), err)
	}
	empty := filepath.Join(t.TempDir(), "kallsyms-empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ksFile := map[string]string{"empty": empty, "kallsyms": filepath.Join(foreignDir, "kallsyms")}
	vdsoFile := filepath.Join(foreignDir, "golden", "vdso.so")
	if *updateForeign {
		if err := os.MkdirAll(filepath.Join(foreignDir, "golden"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(vdsoFile, attrib.OwnVDSO(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, file := range files {
		for _, setting := range foreignSettings {
			for mode, args := range foreignModes {
				name := filepath.Base(file) + "." + setting + "." + mode
				t.Run(name, func(t *testing.T) {
					golden := filepath.Join(foreignDir, "golden", name+".gz")
					if *updateForeign {
						writeForeignGolden(t, golden, file, ksFile[setting], mode)
					}
					want := readGzip(t, golden)
					got, _, err := report(t, nil, append(append([]string{"-debugdir", "-", "-progress", "never", "-vdso", vdsoFile, "-kallsyms", ksFile[setting]}, args...), file)...)
					if err != nil {
						t.Fatal(err)
					}
					if foreignSorts[mode] != "" {
						g, w := linediff.ReportRows(got), linediff.ReportRows(string(want))
						if d := linediff.First(strings.Join(g, "\n"), strings.Join(w, "\n")); d != "" {
							t.Errorf("table rows differ from perf report's: %s", d)
						}
						return
					}
					if d := linediff.First(trimLines(got), want); d != "" {
						t.Errorf("differs from perf script: %s", d)
					}
				})
			}
		}
	}
}

// writeForeignGolden runs perf as the mode's kbench command mirrors it,
// with no build-id cache, and writes its output, each line's trailing
// blanks trimmed.
func writeForeignGolden(t *testing.T, golden, file, ks, mode string) {
	args := []string{"script", "-F", "ip,sym,dso", "-i", file, "--kallsyms", ks}
	if sort := foreignSorts[mode]; sort != "" {
		args = []string{"report", "-i", file, "--kallsyms", ks, "--stdio", "--sort", sort, "--" + map[bool]string{true: "children", false: "no-children"}[mode == "children"], "-n", "-g", "none"}
	} else if mode == "scriptG" {
		args = append(args, "-G")
	}
	out, _, err := perftest.Run(perftest.Options{NoBuildIDCache: true}, args...)
	if err != nil {
		t.Fatal(err)
	}
	if foreignSorts[mode] != "" {
		out = strings.Join(linediff.ReportRows(out), "\n") + "\n" // perf's header has a random tip
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(trimLines(out)))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readGzip returns the text of a gzipped golden.
func readGzip(t *testing.T, file string) string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(mustRead(t, file)))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return string(b)
}

var trailingBlanks = regexp.MustCompile(`(?m)[ \t]+$`)

// trimLines drops every line's trailing blanks (perf pads symbols).
func trimLines(s string) string { return trailingBlanks.ReplaceAllString(s, "") }
