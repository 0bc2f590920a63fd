package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunDefaultCorpus(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"run", "-gen=false", "-samples", "20000"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "verdict: identical") {
		t.Errorf("no identical verdict:\n%s", out.String())
	}
	out.Reset()
	if testing.Short() {
		return
	}
	// The default run first generates and attributes a large corpus;
	// here a smaller one of the same shape, to keep the test quick.
	saved := defaultGenerated
	defer func() { defaultGenerated = saved }()
	defaultGenerated.Modules, defaultGenerated.BPF, defaultGenerated.Samples = 300, 1000, 30_000
	if code := run([]string{"run", "-json", "-samples", "1000"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var doc jsonDocument
	err := json.Unmarshal(out.Bytes(), &doc)
	res := doc.Run
	if err != nil || len(res) != 2 || !res[1].Identical || res[1].Maps != 7 || res[1].Samples != 1000 ||
		!res[0].Identical || res[0].Source != "perf.data" || res[0].Samples != 30_000 || res[0].Maps < 1000 {
		t.Errorf("json %v %+v:\n%s", err, res, out.String())
	}
}

func TestMapsDefaultCorpusDir(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"maps", "../../corpus/default"}, &out, &errb); code != 0 || strings.Count(out.String(), "sha256=") != 1 {
		t.Fatalf("default (btree): exit %d, want one digest: %s%s", code, out.String(), errb.String())
	}
	out.Reset()
	if code := run([]string{"maps", "-impl", "both", "../../corpus/default"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want := "ffff800080000000-ffff8000822f0000 800080002000 dso kernel [kernel.kallsyms]\n"
	if !strings.Contains(out.String(), want) {
		t.Errorf("kernel map line missing:\n%s", out.String())
	}
	if strings.Count(out.String(), "sha256=") != 2 || !strings.Contains(out.String(), "# expected/kernel-maps: identical") {
		t.Errorf("want two digests and the expected result's verdict:\n%s", out.String())
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{nil, {"nope"}, {"maps"}, {"maps", "-impl"}, {"run", "-samples", "-1"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"maps", "/does/not/exist"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "/does/not/exist") {
		t.Errorf("missing dir: exit %d, %q", code, errb.String())
	}
}

// A corpus whose expected/kernel-maps disagrees makes kbench maps fail.
func TestMapsExpectedMismatch(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("../../corpus/default")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "expected", "kernel-maps"), []byte("0-1 0 dso kcore x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"maps", dir}, &out, &errb); code != 1 || !strings.Contains(out.String(), "expected/kernel-maps: DIFFERENT") {
		t.Errorf("exit %d\n%s%s", code, out.String(), errb.String())
	}
}

func TestVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"-version"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "kbench ") {
		t.Errorf("exit %d, %q %q", code, out.String(), errb.String())
	}
}

// Every command's -h, and kbench help CMD, print that command's usage and
// exit 0; usage errors exit 2.
func TestHelpExitsZero(t *testing.T) {
	for _, cmd := range []string{"run", "maps", "report", "gen", "capture", "bench", "plot"} {
		for _, args := range [][]string{{cmd, "-h"}, {"help", cmd}} {
			var out, errb bytes.Buffer
			if code := run(args, &out, &errb); code != 0 || !strings.Contains(out.String()+errb.String(), cmd) {
				t.Errorf("%q: exit %d, output %q", args, code, out.String()+errb.String())
			}
		}
	}
	for _, args := range [][]string{{"kmodsec"}, {"report", "-nosuchflag"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}
