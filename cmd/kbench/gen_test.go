package main

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/corpus"
)

func TestGen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	var out, errb bytes.Buffer
	err := runGen([]string{"-arch", "riscv64", "-modules", "10", "-bpf", "3", "-procs", "2", "-samples", "200", "-seed", "5", "-callchains", "-ksyms", "300", "-o", dir}, &out, &errb)
	if err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	for _, want := range []string{"(riscv64)", "samples 200", "perf.data", "kcore", "modules 10"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	c, err := corpus.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.Meta.Arch != "riscv64" || len(c.Modules) != 10 {
		t.Errorf("corpus: arch %q, %d modules", c.Meta.Arch, len(c.Modules))
	}
}

func TestGenErrors(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		usage bool
		want  string
	}{
		{"no output", []string{"-arch", "x86_64"}, true, "usage"},
		{"bad flag", []string{"-bogus"}, true, ""},
		{"extra argument", []string{"-o", "x", "y"}, true, "usage"},
		{"unknown arch", []string{"-arch", "pdp11", "-o", "DIR"}, false, "unknown architecture"},
		{"negative samples", []string{"-samples", "-1", "-o", "DIR"}, false, "samples"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i, a := range tc.args {
				if a == "DIR" {
					tc.args[i] = filepath.Join(t.TempDir(), "c")
				}
			}
			var out, errb bytes.Buffer
			err := runGen(tc.args, &out, &errb)
			if got := errors.Is(err, errUsage); got != tc.usage {
				t.Errorf("error %v: usage %v, want %v", err, got, tc.usage)
			}
			msg := errb.String()
			if err != nil {
				msg += err.Error()
			}
			if !strings.Contains(msg, tc.want) {
				t.Errorf("error %q lacks %q", msg, tc.want)
			}
		})
	}
}
