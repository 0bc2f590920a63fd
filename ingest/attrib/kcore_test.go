package attrib_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/corpus/gen"
	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/attrib"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/internal/linediff"
	"github.com/kmapindex/kmapindex/internal/perftest"
)

var updateKcore = flag.Bool("update-kcore", false, "rewrite testdata/kcore.golden from perf script (needs perf)")

// kcoreCase is one generated corpus with kcore beside its kallsyms.
type kcoreCase struct {
	arch       string
	seed       uint64
	callchains bool
}

func (c kcoreCase) String() string {
	return fmt.Sprintf("%s/seed=%d/callchains=%v", c.arch, c.seed, c.callchains)
}

func kcoreCases() []kcoreCase {
	var cs []kcoreCase
	for _, arch := range []string{"x86_64", "aarch64", "ppc64le", "s390x", "riscv64"} {
		for _, seed := range []uint64{4, 5} {
			for _, cc := range []bool{false, true} {
				cs = append(cs, kcoreCase{arch, seed, cc})
			}
		}
	}
	return cs
}

// generate writes the corpus into a temporary directory.
func (c kcoreCase) generate(t testing.TB) string {
	dir := filepath.Join(t.TempDir(), "corpus")
	_, err := gen.Generate(gen.Params{Arch: c.arch, Seed: c.seed, Callchains: c.callchains, Samples: 1500,
		Modules: 50, BPF: 10, Procs: 20}, dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// kbenchScript attributes dir's perf.data with kcore beside kallsyms as
// perf script on an x86_64 host does (it fetches instructions only for
// x86_64 recordings there: the goldens were made on one); arch "table"
// runs as perf report -g none does, for the table only: no script, whose
// callchains, resolved to be printed, load the kernel at their first
// kernel address, where perf report loads it at the first sample's; arch
// "children" as perf report --children -g none does.
func kbenchScript(t testing.TB, dir, arch string, impl mapset.Impl) (string, *attrib.Result) {
	return kbenchScriptKallsyms(t, dir, filepath.Join(dir, "kallsyms"), arch, impl)
}

// kbenchScriptKallsyms is kbenchScript with the kallsyms file at ks.
func kbenchScriptKallsyms(t testing.TB, dir, ks, arch string, impl mapset.Impl) (string, *attrib.Result) {
	r, err := perfdata.Open(filepath.Join(dir, "perf.data"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out bytes.Buffer
	opts := attrib.Options{Impl: impl, LoadKallsyms: attrib.LoadKallsymsFile(ks), KallsymsFile: ks,
		DebugDir: "-", NoFiles: true, FetchInsn: arch == "x86_64"}
	switch arch {
	case "table":
	case "children":
		opts.Children = true
	default:
		opts.Script = &out
	}
	res, err := attrib.Run(r, opts)
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), res
}

func perfScript(t testing.TB, dir string) (string, bool) {
	return perfScriptKallsyms(t, dir, filepath.Join(dir, "kallsyms"))
}

// perfReportTable runs perf report --stdio --sort dso,sym --no-children
// -n -g none --kallsyms DIR/kallsyms, then args, on dir/perf.data (""
// on failure).
func perfReportTable(t testing.TB, dir string, args ...string) string {
	out, err := perftest.ReportTable(filepath.Join(dir, "perf.data"), append([]string{"--kallsyms", filepath.Join(dir, "kallsyms")}, args...)...)
	if err != nil {
		t.Log(err)
		return ""
	}
	return out
}

// perfScriptKallsyms runs perf script -F ip,sym,dso --kallsyms ks on
// dir/perf.data; false when perf is not installed or fails.
func perfScriptKallsyms(t testing.TB, dir, ks string) (string, bool) {
	out, err := perftest.Script(filepath.Join(dir, "perf.data"), "--kallsyms", ks)
	if err != nil {
		if !errors.Is(err, perftest.ErrNotInstalled) {
			t.Log(err)
		}
		return "", false
	}
	return out, true
}

func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

const kcoreGolden = "testdata/kcore.golden"

// perfGolden holds the digests of perf script's outputs for tests that
// compare with perf live when it is installed and with these otherwise:
// one "case lines sha256" line per case in file, rewritten with
// -update-kcore.
type perfGolden struct {
	file, header string
	want         map[string][2]string
	lines        []string // with -update-kcore
}

func newPerfGolden(t *testing.T, file, header string) *perfGolden {
	g := &perfGolden{file: file, header: header, want: map[string][2]string{}}
	if *updateKcore {
		return g
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) == 3 && !strings.HasPrefix(fs[0], "#") {
			g.want[fs[0]] = [2]string{fs[1], fs[2]}
		}
	}
	return g
}

// record notes perf's output for key (with -update-kcore).
func (g *perfGolden) record(t *testing.T, key, perf string, havePerf bool) {
	if !*updateKcore {
		return
	}
	if !havePerf {
		t.Fatal("-update-kcore needs perf")
	}
	g.lines = append(g.lines, fmt.Sprintf("%s %d %s", key, strings.Count(perf, "\n"), digest(perf)))
}

// check compares impl's output got for key with perf's: perf (when
// havePerf) line for line, else the recorded digest.
func (g *perfGolden) check(t *testing.T, key, impl, got, perf string, havePerf bool) {
	if havePerf {
		if d := linediff.First(got, perf); d != "" {
			t.Errorf("%s: differs from perf script: %s", impl, d)
		}
		return
	}
	w, ok := g.want[key]
	if !ok {
		t.Fatalf("no golden for %s in %s", key, g.file)
	}
	if n := fmt.Sprint(strings.Count(got, "\n")); n != w[0] || digest(got) != w[1] {
		t.Errorf("%s: %s lines, digest %s; perf script had %s lines, digest %s", impl, n, digest(got), w[0], w[1])
	}
}

// write rewrites the file (with -update-kcore).
func (g *perfGolden) write(t *testing.T) {
	if !*updateKcore {
		return
	}
	body := "# " + g.header + ": case lines sha256\n" + strings.Join(g.lines, "\n") + "\n"
	if err := os.WriteFile(g.file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestKcoreAgainstPerf attributes generated corpora of every architecture
// (several seeds, callchains on and off) with kcore beside kallsyms, on
// both implementations, and compares the script output with perf 6.1's
// perf script -F ip,sym,dso --kallsyms DIR/kallsyms: line for line when
// perf is installed, else by the digests perf's output had
// (testdata/kcore.golden). Every corpus must have used kcore.
func TestKcoreAgainstPerf(t *testing.T) {
	if testing.Short() {
		t.Skip("generates 20 corpora")
	}
	golden := newPerfGolden(t, kcoreGolden, "perf 6.1 script -F ip,sym,dso --kallsyms DIR/kallsyms on corpora of TestKcoreAgainstPerf")
	for _, c := range kcoreCases() {
		t.Run(c.String(), func(t *testing.T) {
			checkKcoreAgainstPerf(t, c.generate(t), c.arch, c.callchains, true, c.String(), golden)
		})
	}
	golden.write(t)
}

var kcoreSeeds = flag.Int("kcore-seeds", 10, "TestKcoreRandomAgainstPerf: the number of random corpora")

// TestKcoreRandomAgainstPerf is TestKcoreAgainstPerf on corpora whose
// every parameter is random (architecture, modules and their sections,
// BPF programs, processes and their DSOs, kernel symbols, samples, the
// shares in the kernel and in no map, callchains), compared with perf
// live: it needs perf. A quarter of them have their modules file spoiled
// (a module left out, or moved by a page), on which perf refuses kcore
// when that module's map is there at the kernel's load (TestKcoreRefused):
// kbench must decide as perf did.
func TestKcoreRandomAgainstPerf(t *testing.T) {
	if testing.Short() {
		t.Skip("generates corpora")
	}
	if !perftest.Installed() {
		t.Skip(perftest.ErrNotInstalled)
	}
	archs := []string{"x86_64", "aarch64", "ppc64le", "s390x", "riscv64"}
	for seed := range uint64(*kcoreSeeds) {
		rng := rand.New(rand.NewPCG(seed, 41))
		p := gen.Params{
			Arch:          archs[rng.IntN(len(archs))],
			Modules:       rng.IntN(120),
			BPF:           rng.IntN(30),
			Procs:         rng.IntN(25),
			Samples:       int64(200 + rng.IntN(2500)),
			Seed:          rng.Uint64(),
			Callchains:    rng.IntN(2) == 0,
			KernelSymbols: 500 + rng.IntN(30000),
			Sections:      rng.IntN(gen.MaxSections + 1),
			DSOs:          1 + rng.IntN(8),
			MissRate:      rng.Float64() * 0.2,
			KernelShare:   0.05 + rng.Float64()*0.9,
		}
		spoil := rng.IntN(8) // 0: a module left out; 1: one moved
		line := rng.IntN(1 << 20)
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "corpus")
			if _, err := gen.Generate(p, dir); err != nil {
				t.Fatal(err)
			}
			t.Logf("%+v", p)
			spoiled := spoil < 2 && spoilModules(t, filepath.Join(dir, "modules"), line, spoil == 1)
			checkKcoreAgainstPerf(t, dir, p.Arch, p.Callchains, !spoiled, "", nil)
		})
	}
}

// spoilModules leaves line n (modulo their number) of the modules file
// out, or with move moves that module by a page; false when the file
// has no lines.
func spoilModules(t *testing.T, path string, n int, move bool) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return false
	}
	i := n % len(lines)
	if move {
		fs := strings.Fields(lines[i])
		addr, err := strconv.ParseUint(strings.TrimPrefix(fs[len(fs)-1], "0x"), 16, 64)
		if err != nil {
			t.Fatalf("%s: %q: %v", path, lines[i], err)
		}
		fs[len(fs)-1] = fmt.Sprintf("0x%x", addr+4096)
		lines[i] = strings.Join(fs, " ") + "\n"
		t.Logf("modules: %s moved", fs[0])
	} else {
		t.Logf("modules: %s left out", strings.Fields(lines[i])[0])
		lines = slices.Delete(lines, i, i+1)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	return true
}

// checkKcoreAgainstPerf compares kbench's script of the corpus in dir
// (of arch), its table and, with callchains, its children table, on both
// implementations, with perf script's and perf report's; golden, if not
// nil, keeps perf script's digests under name for hosts without perf
// (perfGolden), else perf is needed. With kcore, the corpus must use it;
// without, perf decides.
func checkKcoreAgainstPerf(t *testing.T, dir, arch string, callchains, kcore bool, name string, golden *perfGolden) {
	want, havePerf := perfScript(t, dir)
	if golden != nil {
		golden.record(t, name, want, havePerf)
	} else if !havePerf {
		t.Fatal("perf script failed")
	}
	tables := map[string]string{} // kbenchScript's mode → perf report's table
	if havePerf {
		tables["table"] = perfReportTable(t, dir)
		if callchains {
			tables["children"] = perfReportTable(t, dir, "--children")
		}
	}
	for _, impl := range mapset.All {
		got, res := kbenchScript(t, dir, arch, impl)
		if kcore && !strings.HasPrefix(res.KernelSymbols, "kcore ") {
			t.Errorf("%s: kernel symbols from %q, want kcore", impl.Name, res.KernelSymbols)
		}
		if golden != nil {
			golden.check(t, name, impl.Name, got, want, havePerf)
		} else if d := linediff.First(got, want); d != "" {
			t.Errorf("%s: differs from perf script: %s", impl.Name, d)
		}
		for _, mode := range []string{"table", "children"} {
			table := tables[mode]
			if table == "" {
				continue
			}
			// perf report fetches no instructions: its kernel loads
			// at the first kernel-map sample (see TestKernelLoadOrder).
			_, res := kbenchScript(t, dir, mode, impl)
			var b bytes.Buffer
			if err := res.WriteTable(&b); err != nil {
				t.Fatal(err)
			}
			g, w := linediff.ReportRows(b.String()), linediff.ReportRows(table)
			if d := linediff.First(strings.Join(g, "\n"), strings.Join(w, "\n")); d != "" {
				t.Errorf("%s: %s differs from perf report: %s", impl.Name, mode, d)
			}
		}
	}
}
