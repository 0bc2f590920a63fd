package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/kmapindex/kmapindex/corpus/gen"
	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/attrib"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/ingest/symbols"
	"github.com/kmapindex/kmapindex/internal/linediff"
	"github.com/kmapindex/kmapindex/internal/perftest"
)

const (
	testdataDir = "../../ingest/perfdata/testdata/"
	// kallsymsSubset is the kallsyms excerpt attrib's goldens use, so
	// that kernel symbols do not depend on the machine.
	kallsymsSubset = "../../ingest/attrib/testdata/kallsyms"
)

// reportRecordings are the recordings the report tests run on; their
// subtests are named by the files' base names.
var reportRecordings = []string{
	testdataDir + "callchain.data",
	testdataDir + "system.data",
	testdataDir + "pipe.data",
	"testdata/perthread/perthread.data",
}

// report runs kbench report with args and returns its stdout; a non-nil
// stdin file becomes standard input.
func report(t *testing.T, stdin *os.File, args ...string) (string, string, error) {
	t.Helper()
	if stdin != nil {
		saved := stdinFile
		stdinFile = stdin
		defer func() { stdinFile = saved }()
	}
	var out, errb bytes.Buffer
	err := runReport(args, &out, &errb)
	return out.String(), errb.String(), err
}

func mustReport(t *testing.T, stdin *os.File, args ...string) string {
	t.Helper()
	out, stderr, err := report(t, stdin, args...)
	if err != nil {
		t.Fatalf("kbench report %q: %v\n%s", args, err, stderr)
	}
	return out
}

// attribute runs attrib directly, as the report should.
func attribute(t *testing.T, file string, impl mapset.Impl) *attrib.Result {
	t.Helper()
	ks, err := kallsyms.ReadFile(kallsymsSubset)
	if err != nil {
		t.Fatal(err)
	}
	r, err := perfdata.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	res, err := attrib.Run(r, attrib.Options{Impl: impl, Kallsyms: ks})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// pipeFile returns a pipe whose read end delivers the file, as a shell
// pipe (cat file | kbench report -) does.
func pipeFile(t *testing.T, file string) *os.File {
	t.Helper()
	return pipeBytes(t, mustRead(t, file))
}

// pipeBytes returns a pipe whose read end delivers data, then ends.
func pipeBytes(t *testing.T, data []byte) *os.File {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		pw.Write(data)
		pw.Close()
	}()
	t.Cleanup(func() { pr.Close() })
	return pr
}

// inputs are the ways a recording can be named: its path, and for a
// pipe-mode recording also "-" fed through a pipe.
func inputs(t *testing.T, name string) map[string]func() (*os.File, string) {
	in := map[string]func() (*os.File, string){
		"path": func() (*os.File, string) { return nil, name },
	}
	if filepath.Base(name) == "pipe.data" {
		in["stdin-pipe"] = func() (*os.File, string) { return pipeFile(t, name), "-" }
	}
	return in
}

func TestReportTable(t *testing.T) {
	for _, name := range reportRecordings {
		want := attribute(t, name, mapset.BTree)
		for how, input := range inputs(t, name) {
			t.Run(filepath.Base(name)+"/"+how, func(t *testing.T) {
				stdin, arg := input()
				out := mustReport(t, stdin, "-kallsyms", kallsymsSubset, arg)
				var samples, count uint64
				var pct float64
				rows := 0
				for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
					var unknown uint64
					fmt.Sscanf(line, "# Unknown: %d of %d samples had no map", &unknown, &samples)
					if strings.HasPrefix(line, "#") || line == "" {
						continue
					}
					f := strings.Fields(line)
					p, err1 := strconv.ParseFloat(strings.TrimSuffix(f[0], "%"), 64)
					n, err2 := strconv.ParseUint(f[1], 10, 64)
					if len(f) < 5 || err1 != nil || err2 != nil || (f[3] != "[k]" && f[3] != "[.]") {
						t.Fatalf("table line %q", line)
					}
					pct += p
					count += n
					rows++
				}
				if samples != want.Samples || count != want.Samples || rows != len(want.BySym) {
					t.Errorf("header %d samples, rows %d samples in %d rows; want %d in %d", samples, count, rows, want.Samples, len(want.BySym))
				}
				if math.Abs(pct-100) > 0.005*float64(rows)+1e-9 {
					t.Errorf("percentages sum to %.2f", pct)
				}
			})
		}
	}
}

func TestReportJSON(t *testing.T) {
	for _, name := range reportRecordings {
		want := attribute(t, name, mapset.BTree)
		for how, input := range inputs(t, name) {
			for _, impl := range []string{"btree", "list"} {
				t.Run(filepath.Base(name)+"/"+how+"/"+impl, func(t *testing.T) {
					stdin, arg := input()
					out := mustReport(t, stdin, "-format", "json", "-impl", impl, "-kallsyms", kallsymsSubset, arg)
					var doc jsonDocument
					if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Report == nil {
						t.Fatalf("%v: %.200s", err, out)
					}
					rep := doc.Report
					if rep.Digest != want.Digest() || rep.Samples != want.Samples || rep.Unknown != want.Unknown {
						t.Errorf("digest %s, %d samples, %d unknown; want %s, %d, %d", rep.Digest, rep.Samples, rep.Unknown, want.Digest(), want.Samples, want.Unknown)
					}
					if len(rep.Maps) != len(want.ByMap) || len(rep.Symbols) != len(want.BySym) {
						t.Errorf("%d maps, %d symbols; want %d, %d", len(rep.Maps), len(rep.Symbols), len(want.ByMap), len(want.BySym))
					}
				})
			}
		}
	}
}

func TestReportPprof(t *testing.T) {
	goTool, goErr := exec.LookPath("go")
	for _, name := range reportRecordings {
		want := attribute(t, name, mapset.BTree)
		for how, input := range inputs(t, name) {
			t.Run(filepath.Base(name)+"/"+how, func(t *testing.T) {
				stdin, arg := input()
				file := filepath.Join(t.TempDir(), "prof.pb.gz")
				if out := mustReport(t, stdin, "-format", "pprof", "-o", file, "-kallsyms", kallsymsSubset, arg); out != "" {
					t.Errorf("pprof wrote to stdout: %q", out)
				}
				f, err := os.Open(file)
				if err != nil {
					t.Fatal(err)
				}
				p, err := profile.Parse(f)
				f.Close()
				if err != nil {
					t.Fatal(err)
				}
				if err := p.CheckValid(); err != nil {
					t.Fatal(err)
				}
				var total int64
				for _, s := range p.Sample {
					total += s.Value[0]
				}
				if uint64(total) != want.Samples || len(p.Mapping) != len(want.ByMap) {
					t.Errorf("%d samples in %d mappings; want %d in %d", total, len(p.Mapping), want.Samples, len(want.ByMap))
				}
				if goErr != nil {
					t.Logf("go tool pprof not run: %v", goErr)
					return
				}
				cmd := exec.Command(goTool, "tool", "pprof", "-top", file)
				cmd.Env = append(os.Environ(), "PPROF_TMPDIR="+t.TempDir())
				top, err := cmd.CombinedOutput()
				if err != nil || !strings.Contains(string(top), "Showing nodes accounting for") {
					t.Errorf("go tool pprof -top: %v\n%s", err, top)
				}
			})
		}
	}
}

// The pprof profile's stacks are perf script's: per (comm, tid, frame
// symbols leaf first), the same number of samples.
func TestReportPprofStacksAgainstPerf(t *testing.T) {
	for _, file := range reportRecordings {
		t.Run(filepath.Base(file), func(t *testing.T) {
			// Without the build-id cache, as kbench runs below (-debugdir
			// -): a binary gone from its path is found in neither.
			out, _, err := perftest.Run(perftest.Options{NoBuildIDCache: true},
				"script", "-i", file, "--kallsyms", kallsymsSubset, "-F", "comm,tid,ip,sym,dso")
			if errors.Is(err, perftest.ErrNotInstalled) {
				t.Skip(err)
			}
			if err != nil {
				t.Fatal(err)
			}
			// A sample is a header line "comm tid", then its frames, one
			// per tab-indented line; without a callchain, "comm tid ip sym
			// (dso)" on one line.
			want := make(map[string]int64)
			var head []string
			var syms []string
			flush := func() {
				if head != nil {
					want[head[0]+"|"+head[1]+"|"+strings.Join(syms, ";")]++
				}
				head, syms = nil, nil
			}
			for _, line := range strings.Split(out, "\n") {
				switch {
				case strings.HasPrefix(line, "\t"):
					syms = append(syms, strings.Fields(line)[1])
				case strings.TrimSpace(line) == "":
					flush()
				default:
					flush()
					head = strings.Fields(line)
					if len(head) > 3 {
						syms = append(syms, head[3])
					}
				}
			}
			flush()
			prof := filepath.Join(t.TempDir(), "prof.pb.gz")
			mustReport(t, nil, "-format", "pprof", "-o", prof, "-kallsyms", kallsymsSubset, "-debugdir", "-", file)
			f, err := os.Open(prof)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			p, err := profile.Parse(f)
			if err != nil {
				t.Fatal(err)
			}
			got := make(map[string]int64)
			for _, s := range p.Sample {
				var syms []string
				for _, loc := range s.Location {
					name := "[unknown]"
					if len(loc.Line) > 0 {
						name = loc.Line[0].Function.Name
					}
					syms = append(syms, name)
				}
				got[s.Label["comm"][0]+"|"+s.Label["tid"][0]+"|"+strings.Join(syms, ";")] += s.Value[0]
			}
			if !maps.Equal(got, want) {
				n := 0
				for k, v := range want {
					if got[k] != v && n < 5 {
						t.Errorf("%s: pprof %d samples, perf script %d", k, got[k], v)
						n++
					}
				}
				t.Errorf("%d stacks in pprof, %d in perf script", len(got), len(want))
			}
		})
	}
}

// TestReportScriptAgainstPerf compares -format script with perf script
// -F ip,sym,dso on the same file, both with the running kernel's symbols.
func TestReportScriptAgainstPerf(t *testing.T) {
	perf, err := exec.LookPath("perf")
	if err != nil {
		t.Skip("perf not installed: script output not compared with perf script")
	}
	if ks, err := kallsyms.ReadFile("/proc/kallsyms"); err != nil || kallsyms.Restricted(ks) {
		t.Skip("/proc/kallsyms unreadable or restricted: script output not compared with perf script")
	}
	for _, file := range reportRecordings {
		for _, hide := range []bool{false, true} {
			// Both get the same kallsyms: perf would otherwise look for the
			// recording's kernel by build id, and this machine may have
			// booted another kernel since.
			perfArgs := []string{"script", "-F", "ip,sym,dso", "-i", file, "--kallsyms", "/proc/kallsyms"}
			args := []string{"-format", "script", "-kallsyms", "/proc/kallsyms"}
			if hide {
				perfArgs = append(perfArgs, "-G")
				args = append(args, "-G")
			}
			for how, input := range inputs(t, file) {
				t.Run(filepath.Base(file)+"/"+how+"/G="+strconv.FormatBool(hide), func(t *testing.T) {
					cmd := exec.Command(perf, perfArgs...)
					var stderr bytes.Buffer
					cmd.Stderr = &stderr
					want, err := cmd.Output()
					if err != nil {
						t.Skipf("perf script: %v: %s", err, stderr.String())
					}
					stdin, arg := input()
					got := mustReport(t, stdin, append(args, arg)...)
					if d := linediff.First(got, string(want)); d != "" {
						t.Fatalf("differs from perf script: %s", d)
					}
				})
			}
		}
	}
}

func TestReportProgressAndOutputFile(t *testing.T) {
	file := testdataDir + "callchain.data"
	plain := mustReport(t, nil, "-kallsyms", kallsymsSubset, "-progress", "never", file)
	out, stderr, err := report(t, nil, "-kallsyms", kallsymsSubset, "-progress", "always", file)
	if err != nil || out != plain {
		t.Fatalf("-progress always: %v; output differs: %v\n%s", err, out != plain, stderr)
	}
	if stderr == "" {
		t.Error("-progress always drew nothing on stderr")
	}
	out, stderr, err = report(t, nil, "-kallsyms", kallsymsSubset, file)
	if err != nil || out != plain || stderr != "" {
		t.Errorf("-progress auto with a buffer for stderr: %v, stderr %q", err, stderr)
	}
	dst := filepath.Join(t.TempDir(), "table.txt")
	if out := mustReport(t, nil, "-kallsyms", kallsymsSubset, "-o", dst, file); out != "" {
		t.Errorf("-o: stdout %q", out)
	}
	if b, err := os.ReadFile(dst); err != nil || string(b) != plain {
		t.Errorf("-o file: %v, equal %v", err, string(b) == plain)
	}
}

func TestReportErrors(t *testing.T) {
	file := testdataDir + "system.data"
	for _, tc := range []struct {
		name  string
		args  []string
		usage bool   // a usage error (exit 2), else a plain error (exit 1)
		in    string // text the error or stderr must contain
	}{
		{"no file", nil, true, "want one perf.data file"},
		{"two files", []string{file, file}, true, "want one perf.data file"},
		{"bad flag", []string{"-nope", file}, true, "-nope"},
		{"bad format", []string{"-format", "csv", file}, true, `unknown -format "csv"`},
		{"pprof without -o", []string{"-format", "pprof", file}, true, "-o FILE"},
		{"bad impl", []string{"-impl", "array", file}, true, "array"},
		{"bad progress", []string{"-progress", "sometimes", file}, true, "sometimes"},
		{"missing file", []string{"/does/not/exist.data"}, false, "/does/not/exist.data"},
		{"not perf.data", []string{"report_test.go"}, false, "report_test.go"},
		{"missing kallsyms", []string{"-kallsyms", "/does/not/kallsyms", file}, false, "/does/not/kallsyms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, err := report(t, nil, tc.args...)
			if err == nil {
				t.Fatal("no error")
			}
			if errors.Is(err, errUsage) != tc.usage {
				t.Errorf("error %v: usage %v, want %v", err, errors.Is(err, errUsage), tc.usage)
			}
			if !strings.Contains(err.Error()+stderr, tc.in) {
				t.Errorf("error %q, stderr %q: no %q", err, stderr, tc.in)
			}
		})
	}
}

// TestReportExitStatus checks the exit status through main's dispatch:
// 2 for usage errors.
func TestReportExitStatus(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"report"}, &out, &errb)
	if strings.Contains(errb.String(), `unknown command "report"`) {
		t.Skip(`main.go does not dispatch "report" yet`)
	}
	if code != 2 {
		t.Errorf("kbench report: exit %d, want 2", code)
	}
	for _, args := range [][]string{{"report", "-format", "xml", "x.data"}, {"report", "-format", "pprof", "x.data"}} {
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
	if code := run([]string{"report", "/does/not/exist.data"}, &out, &errb); code != 1 {
		t.Errorf("missing file: exit %d, want 1", code)
	}
}

// note encodes one ELF note.
func note(name string, typ uint32, desc []byte) []byte {
	pad := func(b []byte) []byte { return append(bytes.Clone(b), make([]byte, (4-len(b)%4)%4)...) }
	var b []byte
	b = binary.NativeEndian.AppendUint32(b, uint32(len(name)+1))
	b = binary.NativeEndian.AppendUint32(b, uint32(len(desc)))
	b = binary.NativeEndian.AppendUint32(b, typ)
	b = append(b, pad(append([]byte(name), 0))...)
	return append(b, pad(desc)...)
}

func TestNoteBuildID(t *testing.T) {
	id := []byte{0x48, 0xdc, 0x54, 0x0c, 0x8b, 0x76, 0x39, 0x38, 0x04, 0xca, 0x80, 0x88, 0xdb, 0xfa, 0x7d, 0x42, 0x91, 0x1a, 0x94, 0x44}
	linux := note("Linux", 0x101, []byte{1, 0, 0, 0})
	for _, tc := range []struct {
		name  string
		notes []byte
		want  []byte
	}{
		{"first", append(note("GNU", 3, id), linux...), id},
		{"after others", append(append(linux, note("Xen", 3, []byte{1, 2, 3})...), note("GNU", 3, id)...), id},
		{"odd size", note("GNU", 3, id[:17]), id[:17]},
		{"none", linux, nil},
		{"wrong type", note("GNU", 4, id), nil},
		{"truncated", note("GNU", 3, id)[:20], nil},
		{"empty", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := symbols.NoteBuildID(tc.notes, binary.NativeEndian); !bytes.Equal(got, tc.want) {
				t.Errorf("got %x, want %x", got, tc.want)
			}
		})
	}
}

// TestChooseKallsyms checks the default kernel symbol source against fake
// /proc/kallsyms, /sys/kernel/notes and build-id cache.
// kernelEntry is a kernel entry of a build-id table (TestChooseKallsyms).
type kernelEntry struct {
	name string
	id   []byte
}

// fakeHost writes dir/kallsyms (text) and dir/notes (a GNU build-id note
// of running) and makes them this test's /proc/kallsyms and
// /sys/kernel/notes; it returns the kallsyms file.
func fakeHost(t *testing.T, dir, text string, running []byte) string {
	t.Helper()
	proc, notes := filepath.Join(dir, "kallsyms"), filepath.Join(dir, "notes")
	for name, b := range map[string]string{proc: text, notes: string(note("GNU", 3, running))} {
		if err := os.WriteFile(name, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	savedProc, savedNotes := procKallsyms, kernelNotes
	procKallsyms, kernelNotes = proc, notes
	t.Cleanup(func() { procKallsyms, kernelNotes = savedProc, savedNotes })
	return proc
}

func TestChooseKallsyms(t *testing.T) {
	dir := t.TempDir()
	running := bytes.Repeat([]byte{0xab}, 20)
	other := bytes.Repeat([]byte{0xcd}, 20)
	cache := filepath.Join(dir, "debug")
	cached := filepath.Join(cache, "[kernel.kallsyms]", strings.Repeat("cd", 20), "kallsyms")
	write := func(path, text string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	proc := fakeHost(t, dir, "ffffffff81000000 T _text\nffffffff81000010 T running_kernel\n", running)
	write(cached, "ffffffff81000000 T _text\nffffffff81000010 T cached_kernel\n")
	write(filepath.Join(dir, "zero"), "0000000000000000 T _text\n")

	oldStyle := bytes.Repeat([]byte{0xef}, 20)
	oldCached := filepath.Join(cache, "[kernel.kallsyms]", strings.Repeat("ef", 20))
	write(oldCached, "ffffffff81000000 T _text\nffffffff81000010 T old_cached_kernel\n")
	// features makes a build-id table: a user DSO's entry, then kernel
	// entries, each "name=" followed by its build id (kernelEntry).
	features := func(entries ...kernelEntry) *perfdata.Features {
		f := &perfdata.Features{}
		f.BuildIDs = append(f.BuildIDs, perfdata.BuildID{Filename: "/usr/bin/ls", BuildID: other})
		for _, e := range entries {
			b := perfdata.BuildID{Pid: -1, Filename: e.name, BuildID: e.id}
			b.Misc = uint16(perfdata.CPUModeKernel)
			f.BuildIDs = append(f.BuildIDs, b)
		}
		return f
	}
	kernel := func(id []byte) []kernelEntry {
		if id == nil {
			return nil
		}
		return []kernelEntry{{"[kernel.kallsyms]", id}}
	}
	for _, tc := range []struct {
		name     string
		flag     string
		recorded []kernelEntry
		mmap     []byte // the build id of the kernel's MMAP2
		cache    string
		want     string // the file chosen; "" for none
		warn     bool
	}{
		{"same kernel", "", kernel(running), nil, cache, proc, false},
		{"other kernel, zero padded", "", kernel(append(bytes.Clone(running[:16]), 0, 0, 0, 0)), nil, "", "", true},
		{"no kernel build id", "", nil, nil, cache, proc, false},
		{"other kernel, cached", "", kernel(other), nil, cache, cached, false},
		{"other kernel, cached in the old layout", "", kernel(oldStyle), nil, cache, oldCached, false},
		{"other kernel, no cache", "", kernel(other), nil, "", "", true},
		{"other kernel, cache lacks it", "", kernel(other), nil, dir, "", true},
		// perf names the kernel DSO by its first kernel entry that is
		// not a module's, a vmlinux path too, and chooses by its id.
		{"other kernel named by its vmlinux", "", []kernelEntry{{"/lib/modules/4.10.13-1-ARCH/build/vmlinux", other}}, nil, "", "", true},
		{"same kernel named by its vmlinux", "", []kernelEntry{{"/tmp/vmlinux", running}}, nil, "", proc, false},
		{"module entry first", "", []kernelEntry{{"/lib/modules/6.1.0/kernel/fs/ext4/ext4.ko", other}, {"[kernel.kallsyms]", running}}, nil, "", proc, false},
		{"explicit", proc, kernel(other), nil, cache, proc, false},
		{"none", "none", kernel(running), nil, cache, "", false},
		// perf record --buildid-mmap writes no build-id table; perf
		// gives the kernel DSO its MMAP2's build id, which also wins
		// over the header's.
		{"MMAP2 of another kernel, no cache", "", nil, other, "", "", true},
		{"MMAP2 of another kernel, cached", "", nil, other, cache, cached, false},
		{"MMAP2 of the running kernel", "", nil, running, "", proc, false},
		{"MMAP2 of the running kernel, header of another", "", kernel(other), running, "", proc, false},
		{"MMAP2 of another kernel, header of the running one", "", kernel(running), other, "", "", true},
		{"explicit, MMAP2 of another kernel", proc, nil, other, "", proc, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var warnings []string
			warn := func(f string, a ...any) { warnings = append(warnings, f) }
			var load func() (*kallsyms.List, error)
			var from string
			if choose := chooseKallsyms(tc.flag, features(tc.recorded...), tc.cache, warn); choose != nil {
				load, from = choose(tc.mmap)
			}
			var ks *kallsyms.List
			if load != nil {
				var err error
				if ks, err = load(); err != nil {
					t.Fatal(err)
				}
			}
			if from != tc.want || (ks.Len() > 0) != (tc.want != "") || (len(warnings) > 0) != tc.warn {
				t.Errorf("chose %q (%d symbols), warnings %q; want %q, warning %v", from, ks.Len(), warnings, tc.want, tc.warn)
			}
		})
	}
	if load, _ := chooseKallsyms(filepath.Join(dir, "zero"), nil, "", func(string, ...any) {})(nil); load == nil {
		t.Error("no loader for an explicit file")
	} else if _, err := load(); err == nil {
		t.Error("an explicit restricted kallsyms was accepted")
	}
	kernelNotes = filepath.Join(dir, "missing")
	var warned bool
	if load, _ := chooseKallsyms("", features(kernel(running)...), "", func(string, ...any) { warned = true })(nil); load != nil || !warned {
		t.Error("unreadable notes: want no symbols and a warning")
	}
}

// TestReportHostKcore runs report with no -kallsyms on a recording
// without build ids, /proc replaced by a fake tree holding kallsyms,
// kcore and modules: as perf does on a host where it runs as root, the
// kernel maps must come from the kcore beside /proc/kallsyms, and the
// output must equal -kallsyms FAKE/kallsyms (perf script's --kallsyms
// with the same tree, when perf is installed).
func TestReportHostKcore(t *testing.T) {
	corpusDir := filepath.Join(t.TempDir(), "corpus")
	if _, err := gen.Generate(gen.Params{Arch: "x86_64", Seed: 9, Samples: 800, Modules: 20, BPF: 5, Procs: 5}, corpusDir); err != nil {
		t.Fatal(err)
	}
	proc := t.TempDir()
	for _, name := range []string{"kallsyms", "kcore", "modules"} {
		b, err := os.ReadFile(filepath.Join(corpusDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proc, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	saved := procKallsyms
	procKallsyms = filepath.Join(proc, "kallsyms")
	defer func() { procKallsyms = saved }()
	data := filepath.Join(corpusDir, "perf.data")
	got := mustReport(t, nil, "-format", "script", "-debugdir", "-", data)
	explicit := mustReport(t, nil, "-format", "script", "-debugdir", "-", "-kallsyms", procKallsyms, data)
	if got != explicit {
		t.Fatalf("default differs from -kallsyms %s: %s", procKallsyms, linediff.First(got, explicit))
	}
	// Without the kcore the kernel map keeps the MMAP's range: some
	// samples in module or vmalloc space must attribute differently.
	if err := os.Remove(filepath.Join(proc, "kcore")); err != nil {
		t.Fatal(err)
	}
	if bare := mustReport(t, nil, "-format", "script", "-debugdir", "-", data); bare == got {
		t.Error("same output without the kcore: kcore was not used")
	}
	if perf, err := exec.LookPath("perf"); err == nil {
		if err := os.WriteFile(filepath.Join(proc, "kcore"), mustRead(t, filepath.Join(corpusDir, "kcore")), 0o644); err != nil {
			t.Fatal(err)
		}
		want, err := exec.Command(perf, "script", "-F", "ip,sym,dso", "-i", data, "--kallsyms", procKallsyms).Output()
		if err == nil && string(want) != got {
			t.Errorf("differs from perf script: %s", linediff.First(got, string(want)))
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// An explicit kallsyms file without symbols is used (as perf would) but
// not silently.
func TestReportEmptyKallsyms(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "kallsyms.txt")
	if err := os.WriteFile(empty, []byte("junk\r\nmore junk\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := report(t, nil, "-format", "table", "-kallsyms", empty, testdataDir+"sleep.data")
	if err != nil || !strings.Contains(stderr, "no kernel symbols in it") {
		t.Errorf("err %v, stderr %q", err, stderr)
	}
}

// -i FILE names the input as perf's -i does.
func TestReportDashI(t *testing.T) {
	want := mustReport(t, nil, "-format", "script", "-kallsyms", kallsymsSubset, testdataDir+"sleep.data")
	if got := mustReport(t, nil, "-format", "script", "-kallsyms", kallsymsSubset, "-i", testdataDir+"sleep.data"); got != want {
		t.Errorf("-i FILE:\n%s\nwant\n%s", got, want)
	}
	if _, _, err := report(t, nil, "-i", testdataDir+"sleep.data", testdataDir+"busy.data"); err == nil {
		t.Error("-i FILE and a FILE argument accepted")
	}
}

// A pipe-mode recording with junk after its last record is reported up
// to the junk, with a warning, and exits 0: perf script prints the same
// lines ("unexpected end of event stream").
func TestReportPipeJunk(t *testing.T) {
	data := append(mustRead(t, testdataDir+"pipe.data"), 1, 2, 3, 4, 5, 6, 7, 8, 'j', 'u', 'n', 'k')
	file := filepath.Join(t.TempDir(), "junk.data")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := report(t, nil, "-format", "script", "-kallsyms", kallsymsSubset, file)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "unexpected end of event stream") || !strings.Contains(stderr, fmt.Sprintf("%#x", len(data)-12)) {
		t.Errorf("stderr %q", stderr)
	}
	want, err := perftest.Script(file, "--kallsyms", kallsymsSubset)
	if errors.Is(err, perftest.ErrNotInstalled) {
		want, _, _ = report(t, nil, "-format", "script", "-kallsyms", kallsymsSubset, testdataDir+"pipe.data")
	} else if err != nil {
		t.Fatal(err)
	}
	if d := linediff.First(out, want); d != "" {
		t.Errorf("differs from perf script: %s", d)
	}
	// Read from standard input, the warning names it so.
	stdin, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if _, stderr, err := report(t, stdin, "-format", "script", "-kallsyms", kallsymsSubset, "-"); err != nil ||
		!strings.Contains(stderr, "standard input: unexpected end of event stream") {
		t.Errorf("from standard input: %v, stderr %q", err, stderr)
	}
}

// Each -sort key and filter against perf report and perf script with the
// same options, on a system-wide recording and one with callchains.
func TestReportSortAndFilters(t *testing.T) {
	for _, tc := range []struct {
		file       string
		kbench     []string
		perfReport []string // nil: the table is not compared
		perfScript []string // nil: the script is not compared
	}{
		{"system.data", []string{"-sort", "comm"}, []string{"--sort", "comm"}, nil},
		{"system.data", []string{"-sort", "pid"}, []string{"--sort", "pid"}, nil},
		{"system.data", []string{"-sort", "cpu"}, []string{"--sort", "cpu"}, nil},
		{"system.data", []string{"-sort", "cpu,pid,comm"}, []string{"--sort", "cpu,pid,comm"}, nil},
		{"system.data", []string{"-sort", "comm,dso,sym"}, []string{"--sort", "comm,dso,sym"}, nil},
		{"busy.data", []string{"-sort", "pid,sym"}, []string{"--sort", "pid,sym"}, nil},
		{"callchain.data", []string{"-sort", "sym,dso,cpu"}, []string{"--sort", "sym,dso,cpu"}, nil},
		{"callchain.data", []string{"-sort", "sym"}, []string{"--sort", "sym"}, nil},
		{"system.data", []string{"-comm", "bench.test"}, []string{"--comms", "bench.test"}, []string{"--comms", "bench.test"}},
		{"system.data", []string{"-comm", "sleep,swapper"}, []string{"--comms", "sleep,swapper"}, []string{"--comms", "sleep,swapper"}},
		{"system.data", []string{"-cpu", "1"}, []string{"--cpu", "1"}, []string{"--cpu", "1"}},
		{"system.data", []string{"-cpu", "0-1"}, []string{"--cpu", "0-1"}, []string{"--cpu", "0-1"}},
		{"system.data", []string{"-pid", "12030"}, []string{"--pid", "12030"}, []string{"--pid", "12030"}},
		{"system.data", []string{"-tid", "12034,12038"}, []string{"--tid", "12034,12038"}, []string{"--tid", "12034,12038"}},
		{"system.data", []string{"-tid", "12033"}, []string{"--tid", "12033"}, []string{"--tid", "12033"}},
		{"system.data", []string{"-dso", "[kernel.kallsyms]"}, []string{"--dsos", "[kernel.kallsyms]"}, []string{"--dsos", "[kernel.kallsyms]"}},
		{"system.data", []string{"-sort", "comm,dso,sym", "-sym", "pv_native_safe_halt,exc_page_fault"}, []string{"--sort", "comm,dso,sym", "--symbols", "pv_native_safe_halt,exc_page_fault"}, []string{"--symbols", "pv_native_safe_halt,exc_page_fault"}},
		{"system.data", []string{"-time", "523.7,524.0"}, []string{"--time", "523.7,524.0"}, []string{"--time", "523.7,524.0"}},
		{"callchain.data", []string{"-sym", "__strcmp_evex"}, []string{"--symbols", "__strcmp_evex"}, []string{"--symbols", "__strcmp_evex"}},
		// Several time slices; percents of the recording's time.
		{"callchain.data", []string{"-time", "524.92,524.93  524.95,"}, []string{"--time", "524.92,524.93  524.95,"}, []string{"--time", "524.92,524.93  524.95,"}},
		{"callchain.data", []string{"-time", "25%/2,25%/4"}, []string{"--time", "25%/2,25%/4"}, []string{"--time", "25%/2,25%/4"}},
		{"system.data", []string{"-time", "10%-35%,50%-70%"}, []string{"--time", "10%-35%,50%-70%"}, []string{"--time", "10%-35%,50%-70%"}},
		// Sort keys with the Children column (the last --children wins).
		{"callchain.data", []string{"-children", "-sort", "dso,sym"}, []string{"--children", "--sort", "dso,sym"}, nil},
		{"callchain.data", []string{"-children", "-sort", "comm,dso"}, []string{"--children", "--sort", "comm,dso"}, nil},
		{"callchain.data", []string{"-children", "-sort", "pid,dso,sym"}, []string{"--children", "--sort", "pid,dso,sym"}, nil},
		{"callchain.data", []string{"-children", "-sort", "cpu,comm,dso"}, []string{"--children", "--sort", "cpu,comm,dso"}, nil},
		// Filters with the Children column: an entry a filtered sample
		// makes (its callchain's too) is hidden.
		{"callchain.data", []string{"-children", "-dso", "libc.so.6"}, []string{"--children", "--dsos", "libc.so.6"}, nil},
		{"callchain.data", []string{"-children", "-sym", "__strcmp_evex"}, []string{"--children", "--symbols", "__strcmp_evex"}, nil},
		{"callchain.data", []string{"-children", "-time", "524.92,525.0"}, []string{"--children", "--time", "524.92,525.0"}, nil},
	} {
		file := testdataDir + tc.file
		t.Run(tc.file+"/"+strings.Join(tc.kbench, " "), func(t *testing.T) {
			if tc.perfReport != nil {
				args := append([]string{"--sort", "dso,sym"}, tc.perfReport...) // the last --sort wins
				want, err := perftest.ReportTable(file, append([]string{"--kallsyms", kallsymsSubset}, args...)...)
				if errors.Is(err, perftest.ErrNotInstalled) {
					t.Skip(err)
				}
				if err != nil {
					t.Fatal(err)
				}
				got := mustReport(t, nil, append(append([]string{"-kallsyms", kallsymsSubset, "-debugdir", "-"}, tc.kbench...), file)...)
				g, w := linediff.ReportRows(got), linediff.ReportRows(want)
				if len(w) == 0 {
					t.Fatal("perf report shows no rows: the case tests nothing")
				}
				if d := linediff.First(strings.Join(g, "\n"), strings.Join(w, "\n")); d != "" {
					t.Errorf("table differs from perf report %q: %s", args, d)
				}
			}
			if tc.perfScript != nil {
				want, err := perftest.Script(file, append([]string{"--kallsyms", kallsymsSubset}, tc.perfScript...)...)
				if err != nil {
					t.Fatal(err)
				}
				got := mustReport(t, nil, append(append([]string{"-format", "script", "-kallsyms", kallsymsSubset, "-debugdir", "-"}, tc.kbench...), file)...)
				if want == "" {
					t.Fatal("perf script prints nothing: the case tests nothing")
				}
				if d := linediff.First(got, want); d != "" {
					t.Errorf("script differs from perf script %q: %s", tc.perfScript, d)
				}
			}
		})
	}
}

// A DWARF-mode recording prints as perf prints it without the binaries:
// the kernel part of each chain, and an empty chain (two newlines) for a
// user-mode sample, whose kernel callchain has no entries.
func TestReportDwarfWithoutBinaries(t *testing.T) {
	const dir = "testdata/dwarf/"
	got := mustReport(t, nil, "-format", "script", "-kallsyms", kallsymsSubset, "-debugdir", "-", "-symfs", t.TempDir(), dir+"dwarf.data")
	want := string(mustRead(t, dir+"dwarf.script"))
	if !strings.Contains(want, "\n\n\n") {
		t.Fatal("the golden has no empty chain: the test tests nothing")
	}
	if d := linediff.First(got, want); d != "" {
		t.Errorf("differs from perf script without the binaries: %s", d)
	}
}

// -children and -no-children are perf's --children and --no-children:
// the last one wins, and the flat table is the default.
func TestReportChildrenFlags(t *testing.T) {
	file := testdataDir + "callchain.data"
	for _, tc := range []struct {
		args     []string
		children bool
	}{
		{nil, false},
		{[]string{"-children"}, true},
		{[]string{"-no-children"}, false},
		{[]string{"-children", "-no-children"}, false},
		{[]string{"-no-children", "-children"}, true},
	} {
		out := mustReport(t, nil, append(append([]string{"-kallsyms", kallsymsSubset, "-debugdir", "-"}, tc.args...), file)...)
		if got := strings.Contains(out, "# Children"); got != tc.children {
			t.Errorf("%q: Children column %v, want %v", tc.args, got, tc.children)
		}
	}
}

// In perf's branch mode, sort keys and filters apply to the branch
// entries: a row per (keys of the sample's thread and CPU, target's DSO
// and symbol), its level the first entry's, hidden when the sample that
// made it was filtered. Checked against perf report on a committed
// recording with branch stacks.
func TestReportBranchSortKeys(t *testing.T) {
	testForeignSortKeys(t, "perf.data.branch-4.14",
		[]string{"-sort", "comm,dso,sym"},
		[]string{"-sort", "pid,sym"},
		[]string{"-sort", "cpu,comm"},
		[]string{"-dso", "[kernel.kallsyms]"},
		[]string{"-sort", "comm,sym", "-comm", "echo"},
	)
}

// Samples without a map are one row by -sort dso (and any keys without
// sym), whatever their level, as perf's sort__dso_cmp finds two NULL
// maps equal: on this recording some are kernel samples and some user.
func TestReportSortDSOUnknownLevels(t *testing.T) {
	testForeignSortKeys(t, "perf.data.lost_samples-4.4",
		[]string{"-sort", "dso"},
		[]string{"-sort", "comm,dso"},
		[]string{"-sort", "pid,dso"},
	)
}

// An event group's table by sort keys is perf's group view: a row per
// key with an overhead and a sample count per member, ordered by the
// leader's period, then the members'.
func TestReportGroupSortKeys(t *testing.T) {
	testForeignSortKeys(t, "perf.data.group_desc-4.14",
		[]string{"-sort", "comm,dso,sym"},
		[]string{"-sort", "pid,sym"},
		[]string{"-sort", "dso,sym", "-comm", "echo"},
	)
}

// An event group with callchains gets perf's group view in the children
// table too, by any sort keys: Children, Self and Samples columns per
// member, ordered by the leader's Children.
func TestReportGroupChildren(t *testing.T) {
	testTablesAgainstPerf(t, "testdata/group/group.data", "anon group { cpu-clock, task-clock }",
		[]string{"-children"},
		[]string{"-no-children"},
		[]string{"-children", "-sort", "comm,dso"},
		[]string{"-children", "-sort", "dso,sym"},
		[]string{"-children", "-sort", "pid,dso,sym"},
	)
}

// A group's members' entries are paired with the leader's as perf pairs
// them (hists__match, then hists__link): by sort keys without dso, whose
// comparison of addresses without a symbol is no order, perf's searches
// can miss an equal entry, and the member's entry gets a line of its
// own, in the place its dummy leader entry takes in the tree.
func TestReportGroupUnresolvedPairs(t *testing.T) {
	testTablesAgainstPerf(t, "testdata/group/group.data", "anon group { cpu-clock, task-clock }",
		[]string{"-children", "-sort", "sym"},
		[]string{"-children", "-sort", "sym,pid"},
		[]string{"-children", "-sort", "sym,cpu"},
	)
	testTablesAgainstPerf(t, "testdata/group/flat.data", "anon group { cpu-clock, task-clock }",
		[]string{"-no-children", "-sort", "sym"},
		[]string{"-no-children", "-sort", "sym,cpu"},
		[]string{"-no-children", "-sort", "sym,comm"},
	)
	testTablesAgainstPerf(t, "testdata/group3/group3.data", "anon group { task-clock, page-faults, cpu-clock }",
		[]string{"-no-children", "-sort", "sym,comm"},
		[]string{"-no-children", "-sort", "sym,pid"},
		[]string{"-no-children", "-sort", "comm,sym"},
		[]string{"-no-children", "-sort", "comm,dso,sym"},
	)
}

// A line only a group member's entries make is perf's dummy leader entry,
// a copy of the first such member's entry (hists__link): its level (a
// kernel sample's frame without a map is [k]) and its object symbol's
// offset are the member's. A member's entry paired with a leader's
// shows on the leader entry's line, whatever level each has: perf's keys
// do not compare it.
func TestReportGroupMemberLines(t *testing.T) {
	testTablesAgainstPerf(t, "testdata/group/pairs.data", "anon group { minor-faults, cpu-clock }",
		[]string{"-children"},
		[]string{"-children", "-sort", "sym"},
		[]string{"-children", "-sort", "comm,dso,sym"},
		[]string{"-no-children", "-sort", "sym"},
	)
}

// Lines of an event group whose periods are equal for every member are
// ordered by their sample counts, the leader's and then each member's, as
// perf compares -n's column (perf_hpp__append_sort_keys, __hpp__sort):
// samples.data has such lines by sym, whose leader has no samples.
func TestReportGroupMemberSamples(t *testing.T) {
	testTablesAgainstPerf(t, "testdata/group3/samples.data", "anon group { context-switches, raw_syscalls:sys_enter, minor-faults }",
		[]string{"-no-children", "-sort", "sym"},
		[]string{"-no-children", "-sort", "comm,sym"},
		[]string{"-no-children", "-sort", "dso,sym"},
	)
}

// perf report leaves out an event group whose leader has no samples of
// its own, however many its members have (skip_empty): emptyleader.data's
// group of an empty tracepoint and cpu-clock has no table, task-clock's
// has.
func TestReportGroupEmptyLeader(t *testing.T) {
	testTablesAgainstPerf(t, "testdata/group3/emptyleader.data", "of event 'task-clock'",
		[]string{"-no-children", "-sort", "dso,sym"},
		[]string{"-no-children", "-sort", "sym"},
		[]string{"-no-children", "-sort", "comm,dso,sym"},
	)
}

// A member's entry shows on its leader entry's line even when the
// sample that made it was filtered out, and hides with that line when
// the leader's (or the member entry a dummy leader entry copies) was:
// perf prints a group's pairs whatever their mark, and hides lines by
// the leader entry's.
func TestReportGroupHiddenMembers(t *testing.T) {
	testTablesAgainstPerf(t, "testdata/group/group.data", "anon group { cpu-clock, task-clock }",
		[]string{"-children", "-sort", "sym", "-dso", "libc.so.6"},
		[]string{"-children", "-sort", "comm,sym", "-dso", "libc.so.6"},
		[]string{"-children", "-sort", "sym", "-comm", "sh,ls"},
	)
	testTablesAgainstPerf(t, "testdata/group3/group3.data", "anon group { task-clock, page-faults, cpu-clock }",
		[]string{"-no-children", "-sort", "dso,sym", "-comm", "ls"},
		[]string{"-children", "-sort", "dso,sym", "-comm", "sh,ls"},
	)
}

// TestReportUnwindingHook checks that kbench report sets up its memory
// once before its run (reportRunning), for unwinding (huge pages,
// thp.go) exactly when the view unwinds a DWARF recording's user stacks.
func TestReportUnwindingHook(t *testing.T) {
	defer func(f func(bool)) { reportRunning = f }(reportRunning)
	const dwarf = "testdata/dwarf/dwarf.data"
	pprofOut := filepath.Join(t.TempDir(), "profile.pb.gz")
	for _, tc := range []struct {
		name string
		file string
		args []string
		want bool
	}{
		{"children", dwarf, []string{"-children"}, true},
		{"default", dwarf, nil, false}, // the flat table, kbench's default
		{"script", dwarf, []string{"-format", "script"}, true},
		{"folded", dwarf, []string{"-format", "folded"}, true},
		{"pprof", dwarf, []string{"-format", "pprof", "-o", pprofOut}, true},
		{"script -G", dwarf, []string{"-format", "script", "-G"}, false},
		{"table", dwarf, []string{"-no-children"}, false},
		{"table by comm,sym", dwarf, []string{"-no-children", "-sort", "comm,sym"}, false},
		{"frame pointers", "testdata/group/group.data", []string{"-children"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			called, unwinds := 0, false
			reportRunning = func(u bool) { called, unwinds = called+1, u }
			mustReport(t, nil, append(append([]string{"-kallsyms", kallsymsSubset, "-debugdir", "-"}, tc.args...), tc.file)...)
			if called != 1 || unwinds != tc.want {
				t.Errorf("reportRunning called %d times, last told unwinds %v; want once, %v", called, unwinds, tc.want)
			}
		})
	}
}

// TestReportElidedKeyOrder checks that rows of equal overhead are
// ordered without the keys a filter elides, as perf's output sort skips
// their columns (hist_entry__sort, perf_hpp__should_skip). In a group's
// children table filtered by one DSO, a line can show an entry of
// another DSO; ordered by the DSO too, it came before its tie.
func TestReportElidedKeyOrder(t *testing.T) {
	testTablesAgainstPerf(t, "testdata/group/walk.data", "anon group { cpu-clock, task-clock }",
		[]string{"-children", "-sort", "dso,sym", "-dso", "libc.so.6"},
		[]string{"-children", "-sort", "comm,dso,sym", "-dso", "libc.so.6"},
	)
}

// testForeignSortKeys compares kbench's tables of a committed foreign
// recording with perf report's, with an empty kallsyms file.
func testForeignSortKeys(t *testing.T, name string, views ...[]string) {
	testTablesAgainstPerf(t, filepath.Join(foreignDir, name), "", views...)
}

// testTablesAgainstPerf compares kbench's tables of file with perf
// report's, one a view (kbench report's flags; perf report's are
// perfReportFlags), with an empty kallsyms file so that kernel frames
// read the same on any boot, and no build-id cache; perf's table must
// have two rows or more and contain want.
func testTablesAgainstPerf(t *testing.T, file, want string, views ...[]string) {
	empty := filepath.Join(t.TempDir(), "kallsyms")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, view := range views {
		t.Run(strings.Join(view, " "), func(t *testing.T) {
			flags := perfReportFlags(t, view)
			// No build-id cache for perf either: kbench runs with -debugdir -.
			table, _, err := perftest.Run(perftest.Options{NoBuildIDCache: true},
				append([]string{"report", "-i", file, "--stdio", "--sort", "dso,sym", "--no-children", "-n", "-g", "none", "--kallsyms", empty}, flags...)...)
			if errors.Is(err, perftest.ErrNotInstalled) {
				t.Skip(err)
			}
			if err != nil {
				t.Fatal(err)
			}
			got := mustReport(t, nil, append(append([]string{"-kallsyms", empty, "-debugdir", "-"}, view...), file)...)
			g, w := linediff.ReportRows(got), linediff.ReportRows(table)
			if len(w) < 2 || !strings.Contains(table, want) {
				t.Fatalf("perf report shows %d rows (%q in them: %v): the case tests little", len(w), want, strings.Contains(table, want))
			}
			if d := linediff.First(strings.Join(g, "\n"), strings.Join(w, "\n")); d != "" {
				t.Errorf("table differs from perf report %q: %s", flags, d)
			}
		})
	}
}

// perfReportFlags returns perf report's flags for kbench report's view
// flags: the same names with two dashes, the filters' plural.
func perfReportFlags(t *testing.T, view []string) []string {
	var flags []string
	for i := 0; i < len(view); i++ {
		switch f := view[i]; f {
		case "-children", "-no-children":
			flags = append(flags, "-"+f)
		case "-sort", "-dso", "-comm":
			if i+1 == len(view) {
				t.Fatalf("view %q: %s without a value", view, f)
			}
			flags = append(flags, map[string]string{"-sort": "--sort", "-dso": "--dsos", "-comm": "--comms"}[f], view[i+1])
			i++
		default:
			t.Fatalf("view %q: no perf report flag for %s", view, f)
		}
	}
	return flags
}

// -vdso takes a regular ELF file, and names the file when it refuses one.
func TestReportVDSOFlagErrors(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "text")
	if err := os.WriteFile(text, []byte("not elf"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(foreignDir, "perf.data.remmap-3.2")
	for _, tc := range []struct{ file, want string }{
		{text, text + ": not an ELF image"},
		{dir, dir + ": not a regular file"},
		{filepath.Join(dir, "none"), "no such file"},
	} {
		_, _, err := report(t, nil, "-progress", "never", "-kallsyms", "none", "-vdso", tc.file, rec)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "-vdso") {
			t.Errorf("-vdso %s: error %v, want one saying %q", tc.file, err, tc.want)
		}
	}
	if _, _, err := report(t, nil, "-progress", "never", "-kallsyms", "none", "-vdso", filepath.Join(foreignDir, "golden", "vdso.so"), rec); err != nil {
		t.Errorf("-vdso of a vdso image: %v", err)
	}
}

// -vdso is the image a [vdso] map is symbolized with: the recording's
// __vdso_gettimeofday samples are named with the goldens' vdso, and not
// with an ELF file that has no such symbol.
func TestReportVDSOFlagUsed(t *testing.T) {
	other, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true binary:", err)
	}
	rec := filepath.Join(foreignDir, "perf.data.raw_callgraph_branch-3.4")
	for _, tc := range []struct {
		vdso string
		want bool
	}{
		{filepath.Join(foreignDir, "golden", "vdso.so"), true},
		{other, false},
	} {
		out, _, err := report(t, nil, "-progress", "never", "-kallsyms", "none", "-debugdir", "-", "-sort", "sym", "-vdso", tc.vdso, rec)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(out, "__vdso_gettimeofday"); got != tc.want {
			t.Errorf("-vdso %s: __vdso_gettimeofday named %v, want %v", tc.vdso, got, tc.want)
		}
	}
}

// -cpuprofile and -trace write a CPU profile (gzipped protobuf) and a
// runtime execution trace of the run, and name a file they cannot make.
func TestReportProfileFlags(t *testing.T) {
	dir := t.TempDir()
	prof, tr := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "run.trace")
	rec := filepath.Join(foreignDir, "perf.data.remmap-3.2")
	if _, _, err := report(t, nil, "-progress", "never", "-kallsyms", "none", "-cpuprofile", prof, "-trace", tr, rec); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct{ file, magic string }{{prof, "\x1f\x8b"}, {tr, "go 1."}} {
		b, err := os.ReadFile(f.file)
		if err != nil || !bytes.HasPrefix(b, []byte(f.magic)) {
			t.Errorf("%s: %d bytes starting %q, err %v; want a file starting %q", f.file, len(b), b[:min(len(b), 8)], err, f.magic)
		}
	}
	bad := filepath.Join(dir, "none", "run.trace")
	if _, _, err := report(t, nil, "-progress", "never", "-kallsyms", "none", "-trace", bad, rec); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("-trace into a missing directory: error %v, want one naming %s", err, bad)
	}
}

// A recording through a pipe reads as from its file, whether the pipe
// ends within what is read ahead of the run (stdinPeekSize: a small
// pipe-mode recording is then read as a file of its size) or not.
func TestReportRealPipe(t *testing.T) {
	junk := append(mustRead(t, testdataDir+"pipe.data"), 1, 2, 3, 4, 5, 6, 7, 8, 'j', 'u', 'n', 'k')
	junkFile := filepath.Join(t.TempDir(), "junk.data")
	if err := os.WriteFile(junkFile, junk, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{testdataDir + "pipe.data", testdataDir + "pipezstd.data", testdataDir + "sleep.data", junkFile} {
		data := mustRead(t, file)
		for _, pad := range []int{0, stdinPeekSize} { // the second: longer than the peek
			if pad > 0 && !strings.HasPrefix(filepath.Base(file), "sleep") {
				continue // padding a pipe-mode recording would be junk
			}
			for _, args := range [][]string{{"-format", "script"}, {"-format", "table"}} {
				args = append(args, "-kallsyms", kallsymsSubset)
				want, wantErr, err := report(t, nil, append(args, file)...)
				if err != nil {
					t.Fatal(err)
				}
				// The padding comes after a file-mode recording's last
				// section: never read.
				r := pipeBytes(t, append(slices.Clip(data), make([]byte, pad)...))
				// As main does: the size first (wantsHugeHeap), whose
				// read ahead the report then reads.
				savedFile, savedPeek := stdinFile, stdinPeek
				stdinFile, stdinPeek = r, nil
				if size := stdinSize(); pad == 0 && size != int64(len(data)) {
					t.Errorf("%s: stdinSize %d, want %d", file, size, len(data))
				}
				stdinFile = savedFile
				got, gotErr, err := report(t, r, append(args, "-")...)
				stdinPeek = savedPeek
				if err != nil {
					t.Fatalf("%s %q through a pipe: %v\n%s", file, args, err, gotErr)
				}
				if got != want {
					t.Errorf("%s %q through a pipe (pad %d): %s", file, args, pad, linediff.First(got, want))
				}
				if strings.Contains(wantErr, "unexpected end") != strings.Contains(gotErr, "unexpected end") {
					t.Errorf("%s %q through a pipe: stderr %q, from the file %q", file, args, gotErr, wantErr)
				}
			}
		}
	}
}
