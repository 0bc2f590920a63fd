package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/kmodsec"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/internal/linediff"
	"github.com/kmapindex/kmapindex/internal/perftest"
	"github.com/kmapindex/kmapindex/internal/testbuild"
	"github.com/kmapindex/kmapindex/internal/testtree"
	"github.com/kmapindex/kmapindex/perfevent"
)

// recordOrSkip runs kbench record with args and returns its standard
// error; it skips t where perf_event_open is not allowed.
func recordOrSkip(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	err := runRecord(args, &out, &errb)
	if errors.Is(err, perfevent.ErrNotPermitted) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatalf("kbench record %q: %v\n%s", args, err, errb.String())
	}
	return errb.String()
}

var recordSummary = regexp.MustCompile(`(?m)^\[ perf record: Captured and wrote [0-9]+\.[0-9]{3} MB (.*) \(([0-9]+) samples\) \]$`)

// checkRecording compares kbench report -format script with perf script
// -F ip,sym,dso on file line by line, and checks that perf report reads
// it without a word on stderr.
func checkRecording(t *testing.T, file, stderr string) {
	t.Helper()
	m := recordSummary.FindStringSubmatch(stderr)
	if m == nil || m[1] != file {
		t.Errorf("stderr has no summary line for %s:\n%s", file, stderr)
	} else if m[2] == "0" {
		t.Errorf("no samples:\n%s", stderr)
	}
	want, err := perftest.Script(file)
	if errors.Is(err, perftest.ErrNotInstalled) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	got := mustReport(t, nil, "-format", "script", file)
	if d := linediff.First(got, want); d != "" {
		t.Errorf("kbench report differs from perf script: %s", d)
	}
	gl := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	wl := strings.Split(strings.TrimSuffix(want, "\n"), "\n")
	matched := 0
	for i := range min(len(gl), len(wl)) {
		if gl[i] == wl[i] {
			matched++
		}
	}
	total := max(len(gl), len(wl))
	if want == "" {
		t.Error("perf script printed nothing")
	}
	t.Logf("%s: %d of %d perf script lines matched", filepath.Base(file), matched, total)
	_, perr, err := perftest.Run(perftest.Options{}, "report", "-i", file, "--stdio")
	if err != nil {
		t.Fatal(err)
	}
	if perr != "" {
		t.Errorf("perf report warned:\n%s", perr)
	}
}

const busyShell = `i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done`

const busyC = `
volatile unsigned long sink;
__attribute__((noinline)) unsigned long leaf(unsigned long x) {
	for (int i = 0; i < 1000; i++)
		x = x * 2862933555777941757UL + 3037000493UL;
	return x;
}
__attribute__((noinline)) unsigned long mid(unsigned long x) { return leaf(x) ^ leaf(x + 1); }
int main(void) {
	unsigned long x = 1;
	for (long i = 0; i < 100000; i++)
		x = mid(x);
	sink = x;
	return 0;
}
`

func TestRecordCommandAgainstPerf(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		c    bool
	}{
		{name: "sh", args: []string{"-F", "999"}},
		{name: "sh-g", args: []string{"-F", "999", "-g"}},
		{name: "c", args: []string{"-F", "999"}, c: true},
		{name: "c-g", args: []string{"-F", "999", "-g"}, c: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := []string{"sh", "-c", busyShell}
			if tc.c {
				bin := filepath.Join(dir, "busy")
				if _, err := os.Stat(bin); err != nil {
					src := testbuild.Source(t, dir, "busy.c", busyC)
					if err := testbuild.Compile(t, "gcc", "-O1", "-fno-omit-frame-pointer", "-o", bin, src); err != nil {
						t.Fatal(err)
					}
				}
				cmd = []string{bin}
			}
			file := filepath.Join(dir, tc.name+".data")
			stderr := recordOrSkip(t, slices.Concat(tc.args, []string{"-o", file, "--"}, cmd)...)
			checkRecording(t, file, stderr)
			r, err := perfdata.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			a := r.Attrs()[0]
			if want := tc.args[len(tc.args)-1] == "-g"; (a.SampleType&perfdata.SampleFormatCallchain != 0) != want {
				t.Errorf("sample type %#x, callchain %v", a.SampleType, want)
			}
			if a.Flags&(1<<12) == 0 { // enable_on_exec
				t.Errorf("attr flags %#x: no enable_on_exec", a.Flags)
			}
		})
	}
}

func TestRecordSystemWideAgainstPerf(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"a", []string{"-F", "999", "-a", "-d", "1"}},
		{"a-g", []string{"-F", "999", "-g", "-d", "0.5"}}, // -a is the default
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, tc.name+".data")
			stderr := recordOrSkip(t, append(tc.args, "-o", file)...)
			checkRecording(t, file, stderr)
			r, err := perfdata.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if a := r.Attrs()[0]; a.SampleType&perfdata.SampleFormatCPU == 0 {
				t.Errorf("sample type %#x has no CPU", a.SampleType)
			}
		})
	}
}

func TestRecordPidAgainstPerf(t *testing.T) {
	cmd := exec.Command("sh", "-c", `i=0; while [ $i -lt 2000000 ]; do i=$((i+1)); done`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	file := filepath.Join(t.TempDir(), "p.data")
	stderr := recordOrSkip(t, "-F", "999", "-p", strconv.Itoa(cmd.Process.Pid), "-d", "0.5", "-o", file)
	checkRecording(t, file, stderr)
}

// TestRecordKmodSec records system-wide with the side band read from a
// fake proc/sys/lib tree holding one module, and -kmodsec: its section
// records follow the module MMAPs.
func TestRecordKmodSec(t *testing.T) {
	root := t.TempDir()
	ko, err := os.ReadFile("../../ingest/modsec/testdata/my-mod.ko")
	if err != nil {
		t.Fatal(err)
	}
	const koPath = "/lib/modules/6.1.0-fake/kernel/my-mod.ko"
	files := map[string]string{
		"proc/version":                          "Linux version 6.1.0-fake (b@h) #1\n",
		"proc/kallsyms":                         "ffffffff81000000 T _text\nffffffff82000000 T _etext\n",
		"proc/modules":                          "my_mod 16384 0 - Live 0xffffffffc0100000\n",
		koPath[1:]:                              string(ko),
		"proc/1/task/1/status":                  "Name:\tinit\nTgid:\t1\nPPid:\t0\nVmPeak:\t1 kB\n",
		"proc/1/task/1/maps":                    "",
		"sys/module/my_mod/sections/.text":      "0xffffffffc0100000\n",
		"sys/module/my_mod/sections/.data":      "0xffffffffc0103000\n",
		"sys/module/my_mod/sections/.exit.text": "0xffffffffc0102000\n",
	}
	testtree.Write(t, root, files)
	file := filepath.Join(t.TempDir(), "k.data")
	stderr := recordOrSkip(t, "-F", "99", "-d", "0.2", "-root", root, "-kmodsec", "-o", file)
	if !recordSummary.MatchString(stderr) {
		t.Errorf("stderr:\n%s", stderr)
	}
	r, err := perfdata.Open(file, perfdata.WithoutCompressed2())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var order []string
	for r.Next() && len(order) < 6 {
		switch x := r.Record().(type) {
		case *perfdata.Mmap:
			order = append(order, x.Type.String()+" "+x.Filename)
		case *perfdata.Unknown:
			order = append(order, "type "+strconv.Itoa(int(x.Type)))
		default:
			order = append(order, x.RecordInfo().Type.String())
		}
	}
	want := []string{"MMAP [kernel.kallsyms]_text", "MMAP " + koPath, "type 83", "type 83", "FORK", "COMM"}
	if !slices.Equal(order, want) {
		t.Errorf("first records %q, want %q", order, want)
	}
	r2, err := perfdata.Open(file, perfdata.WithoutCompressed2())
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	recs, err := kmodsec.FromPerfData(r2, kmodsec.DefaultType)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range recs {
		got = append(got, x.Section+" "+x.Path)
	}
	if want := []string{".data " + koPath, ".exit.text " + koPath}; !slices.Equal(got, want) {
		t.Errorf("KMOD_SEC_MAP records %q, want %q", got, want)
	}
}

func TestRecordUsage(t *testing.T) {
	for _, args := range [][]string{
		{"-p", "1", "--", "true"},
		{"-p", "1", "-a"},
		{"-F", "0", "--", "true"},
		{"-kmodsec-type", "0"},
		{"-nosuchflag"},
	} {
		var out, errb bytes.Buffer
		if err := runRecord(args, &out, &errb); !errors.Is(err, errUsage) {
			t.Errorf("kbench record %q: %v, want a usage error", args, err)
		}
	}
	var out, errb bytes.Buffer
	if err := runRecord([]string{"-h"}, &out, &errb); !errors.Is(err, errHelp) || !strings.Contains(errb.String(), "usage: kbench record") {
		t.Errorf("-h: %v\n%s", err, errb.String())
	}
}

// kbench record writes the BUILD_ID feature as perf record does: the DSOs
// sample ips hit and the vdso, each with the build id perf reads for it
// (perf buildid-list -k for the kernel, perf buildid-list -i for a file).
func TestRecordBuildIDs(t *testing.T) {
	file := filepath.Join(t.TempDir(), "k.data")
	recordOrSkip(t, "-F", "999", "-o", file, "--", "sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done")
	list, _, err := perftest.Run(perftest.Options{NoBuildIDCache: true}, "buildid-list", "-i", file)
	if errors.Is(err, perftest.ErrNotInstalled) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	sh, _ = filepath.Abs(sh)
	names := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		id, name, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("buildid-list line %q", line)
		}
		names[name] = true
		var want string
		switch {
		case name == "[kernel.kallsyms]":
			want, _, err = perftest.Run(perftest.Options{NoBuildIDCache: true}, "buildid-list", "-k")
		case name == "[vdso]":
			continue // this process's vdso: the same image as perf's own
		case strings.HasPrefix(name, "/"):
			want, _, err = perftest.Run(perftest.Options{NoBuildIDCache: true}, "buildid-list", "-i", name)
		default:
			t.Errorf("unexpected entry %q", line)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if want = strings.TrimSpace(want); id != want {
			t.Errorf("%s: build id %s, perf reads %s", name, id, want)
		}
	}
	for _, n := range []string{"[vdso]", sh} { // the kernel only if a sample hit it
		if !names[n] {
			t.Errorf("no build id for %s in:\n%s", n, list)
		}
	}
}
