package main

import (
	"bytes"
	"encoding/json"
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
	// The default run also generates and attributes a host-sized corpus.
	if code := run([]string{"run", "-json", "-samples", "1000"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var res []struct {
		Maps, Samples int
		Source        string
		Identical     bool
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res) != 2 || !res[0].Identical || res[0].Maps != 7 || res[0].Samples != 1000 ||
		!res[1].Identical || res[1].Source != "perf.data" || res[1].Samples != 300000 {
		t.Errorf("json %v %+v:\n%s", err, res, out.String())
	}
}

func TestMapsDefaultCorpusDir(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"maps", "../../corpus/default"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want := "ffff800080000000-ffff8000822f0000 800080002000 dso kernel [kernel.kallsyms]\n"
	if !strings.Contains(out.String(), want) {
		t.Errorf("kernel map line missing:\n%s", out.String())
	}
	if strings.Count(out.String(), "sha256=") != 2 {
		t.Errorf("want two digests:\n%s", out.String())
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
