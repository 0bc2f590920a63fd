package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// benchdata is the compare package's testdata: go test -bench output of
// the suite's shape (see bench/compare/compare_test.go).
func benchdata(name string) string {
	return filepath.Join("..", "..", "bench", "compare", "testdata", name)
}

func TestBenchCompareOnly(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string   // "" for success
		want    []string // in stdout
		notWant []string
	}{
		{
			name: "pass",
			args: []string{"-in", benchdata("pass.txt")},
			want: []string{
				"sec/op", "list", "btree vs list", "snapshot vs list", "finder vs list",
				"KcoreOrder/n=10000-2", "-98.00% (p=0.002 n=6)", "B/op", "allocs/op", "sec/map",
				"benchmark       n  speedup list/btree      p\n",
				"KcoreOrder  10000               50.0×  0.002\n",
				"gate: btree is at least 10× faster than list",
			},
		},
		{
			name: "two files",
			args: []string{"-in", benchdata("split-btree.txt"), benchdata("split-others.txt")},
			want: []string{"KcoreOrder  10000               50.0×  0.002\n", "gate: btree is at least 10×"},
		},
		{
			name: "repeated -in",
			args: []string{"-in", benchdata("split-btree.txt"), "-in", benchdata("split-others.txt")},
			want: []string{"Lookup      10000               36.0×  0.002\n"},
		},
		{
			name:    "gate fails",
			args:    []string{"-in", benchdata("slow.txt")},
			wantErr: "MergeIn/n=10000-2: btree is 4.00× faster than list, want ≥ 10×",
			want:    []string{"MergeIn     10000               4.00×  0.002\n"},
			notWant: []string{"gate: btree"},
		},
		{
			name:    "no gate",
			args:    []string{"-min-speedup", "0", "-in", benchdata("slow.txt")},
			want:    []string{"MergeIn     10000               4.00×"},
			notWant: []string{"gate:"},
		},
		{
			name:    "custom gate",
			args:    []string{"-min-speedup", "40", "-in", benchdata("pass.txt")},
			wantErr: "want ≥ 40×",
		},
		{
			name:    "implementation missing",
			args:    []string{"-in", benchdata("missing.txt")},
			wantErr: "Lookup/n=10000-2: no results for impl=list",
		},
		{
			name:    "no such file",
			args:    []string{"-in", benchdata("nope.txt")},
			wantErr: "nope.txt",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := runBench(tc.args, &out, &errb)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("error: %v\n%s", err, errb.String())
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			for _, s := range tc.want {
				if !strings.Contains(out.String(), s) {
					t.Errorf("output lacks %q:\n%s", s, out.String())
				}
			}
			for _, s := range tc.notWant {
				if strings.Contains(out.String(), s) {
					t.Errorf("output has %q:\n%s", s, out.String())
				}
			}
		})
	}
}

func TestBenchUsage(t *testing.T) {
	for _, args := range [][]string{
		{"-count", "0"},
		{"-maxn", "0"},
		{"-min-speedup", "-1"},
		{"stray"},
		{"-in", benchdata("pass.txt"), "-o", "x.txt"},
		{"-nope"},
		{"-count", "x"},
	} {
		var out, errb bytes.Buffer
		if err := runBench(args, &out, &errb); !errors.Is(err, errUsage) {
			t.Errorf("%q: error %v, want errUsage", args, err)
		}
		if errb.Len() == 0 {
			t.Errorf("%q: nothing on stderr", args)
		}
	}
}

func TestBenchNoGo(t *testing.T) {
	t.Setenv("PATH", "")
	var out, errb bytes.Buffer
	err := runBench([]string{"-maxn", "100"}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "go command is not on PATH") {
		t.Errorf("error %v, want go not on PATH", err)
	}
}

func TestModuleRoot(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := moduleRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Dir(filepath.Dir(wd)); root != want {
		t.Errorf("module root %s, want %s", root, want)
	}

	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "go.mod"), []byte("// other\nmodule \"example.com/other\" // note\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(other, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := moduleRoot(sub); err == nil || !strings.Contains(err.Error(), "is module example.com/other, not github.com/kmapindex/kmapindex") {
		t.Errorf("other module: %v", err)
	}

	// Outside any module, "kbench bench" says so.
	t.Chdir(t.TempDir())
	if _, err := moduleRoot(must(os.Getwd())); err == nil || !strings.Contains(err.Error(), "no go.mod at or above") {
		t.Errorf("no module: %v", err)
	}
	var out, errb bytes.Buffer
	if err := runBench([]string{"-maxn", "100"}, &out, &errb); err == nil || !strings.Contains(err.Error(), "kmapindex repository") {
		t.Errorf("runBench outside the module: %v", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestGoBenchArgs(t *testing.T) {
	got := goBenchArgs("Lookup$", 6, "0.1s", 10000)
	want := []string{"test", "-run=^$", "-bench=Lookup$", "-benchmem", "-count=6", "-benchtime=0.1s", "./bench/", "-args", "-maxn=10000"}
	if !slices.Equal(got, want) {
		t.Errorf("go %q, want %q", got, want)
	}
}

// TestBenchRun runs the suite for real on a tiny setting.
func TestBenchRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test -bench")
	}
	raw := filepath.Join(t.TempDir(), "raw.txt")
	var out, errb bytes.Buffer
	err := runBench([]string{"-bench", "KcoreOrder", "-maxn", "100", "-count", "6", "-benchtime", "20x", "-min-speedup", "0", "-o", raw}, &out, &errb)
	if err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, errb.String())
	}
	for _, s := range []string{"KcoreOrder/n=100-", "btree vs list", "speedup list/btree"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, out.String())
		}
	}
	data, err := os.ReadFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "BenchmarkKcoreOrder/impl=btree/n=100-"); n != 6 {
		t.Errorf("raw output has %d btree lines, want 6:\n%s", n, data)
	}
	if !strings.Contains(errb.String(), "go test -run=^$ -bench=KcoreOrder") {
		t.Errorf("stderr does not show the command:\n%s", errb.String())
	}
}

// kbench bench's default gate is make bench-ci's: the index operations.
func TestBenchDefaultGate(t *testing.T) {
	for _, fam := range []string{"KcoreOrder", "MergeIn", "FixupInsert", "LoadKcore", "Lookup", "LookupClustered"} {
		if !regexp.MustCompile(defaultGate).MatchString(fam) {
			t.Errorf("%s not gated", fam)
		}
	}
	if regexp.MustCompile(defaultGate).MatchString("Ingest") {
		t.Error("Ingest gated by default")
	}
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mk), "GATE        ?= "+strings.ReplaceAll(defaultGate, "$", "$$")) {
		t.Error("the Makefile's GATE differs from kbench bench's default")
	}
}
