package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/bench/compare"
	"github.com/kmapindex/kmapindex/internal/svgtest"
)

// readSVG parses an SVG file (checking its shape) and counts its
// name/class elements; it returns the texts too.
func readSVG(t *testing.T, path, name, class string) (int, []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	root := svgtest.Parse(t, data)
	n := 0
	for _, e := range root.All(name) {
		if class == "" || e.Attr("class") == class {
			n++
		}
	}
	return n, root.Texts()
}

func TestPlotBench(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "svg")
	var out, errb bytes.Buffer
	if err := runPlot([]string{"-in", benchdata("pass.txt"), "-o", dir}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	files := strings.Fields(out.String())
	want := []string{filepath.Join(dir, "KcoreOrder.svg"), filepath.Join(dir, "MergeIn.svg"), filepath.Join(dir, "Lookup.svg")}
	if !slices.Equal(files, want) {
		t.Fatalf("wrote %q, want %q", files, want)
	}
	for i, series := range []int{2, 2, 4} {
		n, texts := readSVG(t, files[i], "polyline", "")
		if n != series {
			t.Errorf("%s: %d lines, want %d (one per implementation)", files[i], n, series)
		}
		all := strings.Join(texts, "|")
		for _, s := range []string{": time per operation", "n (maps)", "time per op (s)", "list", "btree", "|100|", "|1k|", "|10k|"} {
			if !strings.Contains("|"+all+"|", s) {
				t.Errorf("%s: no text %q in %q", files[i], s, all)
			}
		}
	}
}

func TestPlotRealRun(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	if err := runPlot([]string{"-o", dir, "-in", benchdata("kbench-maxn1000.txt")}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	if n := len(strings.Fields(out.String())); n != 6 {
		t.Errorf("%d files, want 6:\n%s", n, out.String())
	}
	n, _ := readSVG(t, filepath.Join(dir, "LookupClustered.svg"), "polyline", "")
	if n != 4 {
		t.Errorf("LookupClustered: %d lines, want 4", n)
	}
}

func TestPlotThroughput(t *testing.T) {
	dir := t.TempDir()
	runJSON := filepath.Join(dir, "run.json")
	// The shape of "kbench run -json" output.
	js := `{"schema":"kbench/v1","run":[{"corpus":"default","maps":7,"impls":[{"impl":"btree","samples_per_sec":9.1e7},{"impl":"list","samples_per_sec":1.2e7}]},
	        {"corpus":"x86-big","maps":5000,"impls":[{"impl":"btree","samples_per_sec":8e7},{"impl":"list","samples_per_sec":9e5}]}]}`
	if err := os.WriteFile(runJSON, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if err := runPlot([]string{"-run", runJSON, "-o", dir}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	path := filepath.Join(dir, "throughput.svg")
	if strings.TrimSpace(out.String()) != path {
		t.Errorf("printed %q, want %q", out.String(), path)
	}
	n, texts := readSVG(t, path, "rect", "bar")
	if n != 4 {
		t.Errorf("%d bars, want 4", n)
	}
	all := strings.Join(texts, "|")
	for _, s := range []string{"default", "x86-big", "btree", "list", "samples/s", "91M"} {
		if !strings.Contains(all, s) {
			t.Errorf("no text %q in %q", s, all)
		}
	}

	if err := os.WriteFile(runJSON, []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runPlot([]string{"-run", runJSON, "-o", dir}, &out, &errb); err == nil || !strings.Contains(err.Error(), "not kbench run -json output") {
		t.Errorf("bad JSON: %v", err)
	}
}

func TestPlotErrors(t *testing.T) {
	for _, args := range [][]string{{}, {"-o", t.TempDir()}, {"stray.txt"}, {"-nope"}} {
		var out, errb bytes.Buffer
		if err := runPlot(args, &out, &errb); !errors.Is(err, errUsage) {
			t.Errorf("%q: error %v, want errUsage", args, err)
		}
	}
	var out, errb bytes.Buffer
	if err := runPlot([]string{"-in", benchdata("nope.txt"), "-o", t.TempDir()}, &out, &errb); err == nil || !strings.Contains(err.Error(), "nope.txt") {
		t.Errorf("missing input: %v", err)
	}
}

func TestFileName(t *testing.T) {
	for in, want := range map[string]string{"Lookup": "Lookup", "Kcore/Order x": "Kcore_Order_x", "a.b-c_d": "a.b-c_d"} {
		if got := fileName(in); got != want {
			t.Errorf("fileName(%q) = %q, want %q", in, got, want)
		}
	}
}

// A plot holds one family and every sub-name key but n= and impl=.
func TestPlotFamily(t *testing.T) {
	for _, tc := range []struct {
		name, bench, want string
	}{
		{"Lookup/n=1000-2", "Lookup", "Lookup"},
		{"Lookup/n=1000", "Lookup", "Lookup"},
		{"ConcurrentFind/n=1000/updates=0/readers=1-2", "ConcurrentFind", "ConcurrentFind/updates=0/readers=1"},
		{"ConcurrentFind/updates=5/n=10-16", "ConcurrentFind", "ConcurrentFind/updates=5"},
	} {
		if got := plotFamily(&compare.Row{Name: tc.name, Bench: tc.bench}); got != tc.want {
			t.Errorf("plotFamily(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}
