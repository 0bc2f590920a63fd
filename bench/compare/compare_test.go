package compare

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The testdata files are go test -bench output in the format of this
// module's bench package, 6 samples per benchmark:
//
//   - pass.txt: KcoreOrder and MergeIn (btree, list; MergeIn also reports
//     ns/map) and Lookup (btree, list, snapshot, finder) at n=100, 1000
//     and 10000; every sample set has an exact median (two middle samples
//     equal), and at n=10000 the B-tree is 50×, 25× and 36× faster.
//   - slow.txt: the same, but MergeIn's B-tree at n=10000 is only 4× faster.
//   - missing.txt: the same as pass.txt without Lookup impl=list at n=10000.
//   - split-btree.txt, split-others.txt: pass.txt split by implementation.
//   - kbench-maxn1000.txt: a real run (-maxn=1000 -benchtime=0.1s) on a
//     noisy shared 2-core machine.

func read(t *testing.T, files ...string) *Report {
	t.Helper()
	for i, f := range files {
		files[i] = filepath.Join("testdata", f)
	}
	r, err := ReadFiles(files, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestTables(t *testing.T) {
	r := read(t, "pass.txt")
	var units []string
	for _, tb := range r.Tables {
		units = append(units, tb.Unit)
	}
	if want := []string{"sec/op", "B/op", "allocs/op", "sec/map"}; !slices.Equal(units, want) {
		t.Errorf("units %q, want %q", units, want)
	}
	tb := r.Table(TimeUnit)
	if want := []string{"list", "btree", "snapshot", "finder"}; !slices.Equal(tb.Impls, want) {
		t.Errorf("impls %q, want %q (baseline first)", tb.Impls, want)
	}
	var names []string
	for _, row := range tb.Rows {
		names = append(names, fmt.Sprintf("%s|%s|%d", row.Name, row.Bench, row.N))
	}
	wantNames := []string{
		"KcoreOrder/n=100-2|KcoreOrder|100", "KcoreOrder/n=1000-2|KcoreOrder|1000", "KcoreOrder/n=10000-2|KcoreOrder|10000",
		"MergeIn/n=100-2|MergeIn|100", "MergeIn/n=1000-2|MergeIn|1000", "MergeIn/n=10000-2|MergeIn|10000",
		"Lookup/n=100-2|Lookup|100", "Lookup/n=1000-2|Lookup|1000", "Lookup/n=10000-2|Lookup|10000",
	}
	if !slices.Equal(names, wantNames) {
		t.Errorf("rows\n%q\nwant\n%q", names, wantNames)
	}

	for _, tc := range []struct {
		unit, row, impl string
		center          float64
		delta, cmp      string // "" for the baseline
	}{
		{"sec/op", "KcoreOrder/n=10000-2", "list", 0.1, "", ""},
		{"sec/op", "KcoreOrder/n=10000-2", "btree", 0.002, "-98.00%", "p=0.002 n=6"},
		{"sec/op", "KcoreOrder/n=100-2", "btree", 13.9e-6, "~", "p=0.221 n=6"},
		{"sec/op", "Lookup/n=10000-2", "finder", 230e-9, "-99.57%", "p=0.002 n=6"},
		{"sec/op", "MergeIn/n=100-2", "btree", 80e-6, "+196.30%", "p=0.002 n=6"},
		{"B/op", "MergeIn/n=10000-2", "btree", 1783296, "+76.71%", "p=0.002 n=6"},
		{"allocs/op", "KcoreOrder/n=1000-2", "list", 1011, "", ""},
		{"allocs/op", "Lookup/n=100-2", "snapshot", 0, "~", "p=1.000 n=6"},
		{"sec/map", "MergeIn/n=10000-2", "list", 40e-6, "", ""},
		{"sec/map", "MergeIn/n=10000-2", "btree", 1.6e-6, "-96.00%", "p=0.002 n=6"},
	} {
		t.Run(tc.unit+"/"+tc.row+"/"+tc.impl, func(t *testing.T) {
			c := cellOf(t, r, tc.unit, tc.row, tc.impl)
			if len(c.Values) != 6 {
				t.Errorf("%d values, want 6", len(c.Values))
			}
			if !near(c.Summary.Center, tc.center) {
				t.Errorf("center %g, want %g", c.Summary.Center, tc.center)
			}
			if !(c.Summary.Lo <= c.Summary.Center && c.Summary.Center <= c.Summary.Hi) {
				t.Errorf("interval [%g, %g] does not hold center %g", c.Summary.Lo, c.Summary.Hi, c.Summary.Center)
			}
			if c.Compared != (tc.delta != "") || c.Delta != tc.delta {
				t.Errorf("compared %v delta %q, want %q", c.Compared, c.Delta, tc.delta)
			}
			if c.Compared && c.Comparison.String() != tc.cmp {
				t.Errorf("comparison %q, want %q", c.Comparison.String(), tc.cmp)
			}
		})
	}
	if len(r.Table("sec/map").Rows) != 3 {
		t.Errorf("sec/map table has %d rows, want MergeIn's 3", len(r.Table("sec/map").Rows))
	}
	if r.Table("ns/op") != nil {
		t.Error("ns/op should be tidied to sec/op")
	}
}

func cellOf(t *testing.T, r *Report, unit, row, impl string) *Cell {
	t.Helper()
	tb := r.Table(unit)
	if tb == nil {
		t.Fatalf("no %s table", unit)
	}
	for _, rw := range tb.Rows {
		if rw.Name == row {
			if c := tb.Cell(rw, impl); c != nil {
				return c
			}
			t.Fatalf("%s %s: no %s cell", unit, row, impl)
		}
	}
	t.Fatalf("%s: no row %s", unit, row)
	return nil
}

func near(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

func TestWriteText(t *testing.T) {
	var b bytes.Buffer
	if err := read(t, "pass.txt").WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := strings.Split(out, "\n")
	find := func(prefix string) []string {
		var ls []string
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				ls = append(ls, l)
			}
		}
		return ls
	}
	for _, tc := range []struct {
		prefix string
		want   []string // in order
	}{
		{"sec/op ", []string{"list", "btree vs list", "snapshot vs list", "finder vs list"}},
		{"KcoreOrder/n=10000-2 ", []string{"100.000m ±  1%", "2.000m ±  1%", "-98.00% (p=0.002 n=6)"}},
		{"KcoreOrder/n=100-2 ", []string{"14.00µ ±  2%", "13.90µ ±  2%", "~ (p=0.221 n=6)"}},
		{"Lookup/n=10000-2 ", []string{"54000.0n ±  1%", "1500.0n ±  5%", "-97.22% (p=0.002 n=6)", "240.0n ± 10%", "-99.56% (p=0.002 n=6)", "230.0n ± 3%", "-99.57% (p=0.002 n=6)"}},
		{"sec/map ", []string{"list", "btree vs list"}},
		{"MergeIn/n=10000-2 ", []string{"985.5Ki ± 0%", "1741.5Ki ± 0%", "+76.71% (p=0.002 n=6)"}},
		{"¹ ", []string{"all samples are equal"}},
	} {
		ls := find(tc.prefix)
		if len(ls) == 0 {
			t.Errorf("no line starting %q in\n%s", tc.prefix, out)
			continue
		}
		ok := false
		for _, l := range ls {
			if inOrder(l, tc.want) {
				ok = true
			}
		}
		if !ok {
			t.Errorf("no line starting %q holds %q in order:\n%s", tc.prefix, tc.want, strings.Join(ls, "\n"))
		}
	}
	// Rows of one table are aligned: every line of the sec/op table has
	// the same width and its separators at the same columns.
	table := strings.SplitN(out, "\n\n", 2)[0]
	var width int
	for i, l := range strings.Split(table, "\n") {
		if n := len([]rune(l)); i == 0 {
			width = n
		} else if n != width {
			t.Errorf("line %d is %d runes wide, want %d: %q", i, n, width, l)
		}
	}
}

func inOrder(s string, parts []string) bool {
	for _, p := range parts {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}

func TestSpeedups(t *testing.T) {
	got := read(t, "pass.txt").Speedups()
	want := []Speedup{
		{"KcoreOrder", 100, 14000.0 / 13900, 0.221}, {"KcoreOrder", 1000, 5.5, 0.002}, {"KcoreOrder", 10000, 50, 0.002},
		{"MergeIn", 100, 27.0 / 80, 0.002}, {"MergeIn", 1000, 2200.0 / 750, 0.002}, {"MergeIn", 10000, 25, 0.002},
		{"Lookup", 100, 240.0 / 350, 0.002}, {"Lookup", 1000, 4.5, 0.002}, {"Lookup", 10000, 36, 0.002},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d speedups, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Bench != w.Bench || g.N != w.N || !near(g.Ratio, w.Ratio) || math.Abs(g.P-w.P) > 0.0005 {
			t.Errorf("speedup %d = %+v, want %+v", i, g, w)
		}
	}
	var b bytes.Buffer
	if err := read(t, "pass.txt").WriteSpeedups(&b); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"benchmark       n  speedup list/btree      p\n", "\nKcoreOrder  10000               50.0×  0.002\n", "\nMergeIn       100              0.338×  0.002\n"} {
		if !strings.Contains(b.String(), l) {
			t.Errorf("speedups lack %q:\n%s", l, b.String())
		}
	}
}

func TestGate(t *testing.T) {
	for _, tc := range []struct {
		file     string
		min      float64
		wantErrs []string // substrings; none means pass
		notErrs  []string
	}{
		{file: "pass.txt", min: 10},
		{file: "pass.txt", min: 25},
		{file: "pass.txt", min: 30, wantErrs: []string{"MergeIn/n=10000-2: btree is 25.0× faster than list, want ≥ 30×"}, notErrs: []string{"KcoreOrder", "Lookup"}},
		{file: "pass.txt", min: 100, wantErrs: []string{"KcoreOrder/n=10000-2", "MergeIn/n=10000-2", "Lookup/n=10000-2"}, notErrs: []string{"n=1000-2"}},
		{file: "slow.txt", min: 10, wantErrs: []string{"MergeIn/n=10000-2: btree is 4.00× faster than list"}, notErrs: []string{"KcoreOrder", "Lookup"}},
		{file: "missing.txt", min: 10, wantErrs: []string{"Lookup/n=10000-2: no results for impl=list"}, notErrs: []string{"MergeIn", "n=1000-2"}},
		{file: "kbench-maxn1000.txt", min: 10, wantErrs: []string{"KcoreOrder/n=1000-2", "LookupClustered/n=1000-2"}},
		{file: "kbench-maxn1000.txt", min: 1},
	} {
		t.Run(fmt.Sprintf("%s/%g", tc.file, tc.min), func(t *testing.T) {
			err := read(t, tc.file).Gate(tc.min)
			if len(tc.wantErrs) == 0 {
				if err != nil {
					t.Fatalf("gate failed: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("gate passed")
			}
			for _, s := range tc.wantErrs {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error lacks %q: %v", s, err)
				}
			}
			for _, s := range tc.notErrs {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error mentions %q: %v", s, err)
				}
			}
		})
	}
}

func TestGateNoTimes(t *testing.T) {
	in := "BenchmarkX/impl=btree/n=10-2 \t 100\t 8 B/op\nBenchmarkX/impl=list/n=10-2 \t 100\t 9 B/op\n"
	r, err := Read([]Input{{"bytes.txt", strings.NewReader(in)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Gate(10); err == nil || !strings.Contains(err.Error(), "no sec/op results") {
		t.Errorf("gate error %v, want no sec/op results", err)
	}
	if sp := r.Speedups(); sp != nil {
		t.Errorf("speedups %v without times", sp)
	}
}

// TestSplitInputs reads the same results from two files, split by
// implementation, and from readers: the cells pool identically.
func TestSplitInputs(t *testing.T) {
	whole := read(t, "pass.txt")
	split := read(t, "split-btree.txt", "split-others.txt")
	if !slices.Equal(whole.Speedups(), split.Speedups()) {
		t.Errorf("speedups differ:\n%v\n%v", whole.Speedups(), split.Speedups())
	}
	var a, b bytes.Buffer
	whole.WriteText(&a)
	split.WriteText(&b)
	if a.String() != b.String() {
		t.Errorf("tables differ:\n%s\n%s", a.String(), b.String())
	}

	var inputs []Input
	for _, f := range []string{"split-others.txt", "split-btree.txt"} {
		data, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, Input{f, bytes.NewReader(data)})
	}
	r, err := Read(inputs, &Options{Confidence: 0.95})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(whole.Speedups(), r.Speedups()) {
		t.Errorf("speedups from readers differ:\n%v\n%v", whole.Speedups(), r.Speedups())
	}
}

func TestOptions(t *testing.T) {
	r, err := ReadFiles([]string{"testdata/pass.txt"}, &Options{Baseline: "btree", Target: "finder"})
	if err != nil {
		t.Fatal(err)
	}
	tb := r.Table(TimeUnit)
	if want := []string{"btree", "list", "snapshot", "finder"}; !slices.Equal(tb.Impls, want) {
		t.Errorf("impls %q, want %q", tb.Impls, want)
	}
	sp := r.Speedups()
	if len(sp) != 3 || sp[2].Bench != "Lookup" || sp[2].N != 10000 || !near(sp[2].Ratio, 1500.0/230) {
		t.Errorf("btree/finder speedups %+v", sp)
	}
	if err := r.Gate(2); err == nil || !strings.Contains(err.Error(), "KcoreOrder/n=10000-2: no results for impl=finder") {
		t.Errorf("gate: %v", err)
	}
}

func TestReadErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"empty", "", "no benchmark results"},
		{"no impl key", "BenchmarkFoo/n=10-2 \t 100\t 12 ns/op\n", "no benchmark results with an impl= key"},
		{"bad n", "BenchmarkFoo/impl=list/n=ten-2 \t 100\t 12 ns/op\n", `n="ten" is not an integer`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read([]Input{{"in.txt", strings.NewReader(tc.in)}}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := ReadFiles([]string{"testdata/nope.txt"}, nil); err == nil || !strings.Contains(err.Error(), "testdata/nope.txt") {
		t.Errorf("missing file: %v", err)
	}
	_, err := Read([]Input{{"bad.txt", iotestErr{}}}, nil)
	if err == nil || !strings.Contains(err.Error(), "reading bad.txt") {
		t.Errorf("read error: %v", err)
	}

	// A malformed benchmark line is a warning, not an error.
	in := "BenchmarkFoo/impl=list/n=10-2 \t 100\t 12 ns/op\nBenchmarkFoo/impl=btree/n=10-2 \t 100\t 12\n"
	r, err := Read([]Input{{"in.txt", strings.NewReader(in)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "in.txt:2") {
		t.Errorf("warnings %q", r.Warnings)
	}
}

type iotestErr struct{}

func (iotestErr) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

// TestMatchesBenchstat checks every center, interval, delta and p-value
// against the pinned "go tool benchstat" on the same files, with the same
// column order (the baseline first).
func TestMatchesBenchstat(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go tool benchstat")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH; skipping the benchstat comparison")
	}
	if out, err := exec.Command(goBin, "tool", "-n", "benchstat").CombinedOutput(); err != nil {
		t.Skipf("go tool benchstat is not available (%v: %s); skipping the comparison", err, bytes.TrimSpace(out))
	}
	for _, file := range []string{"pass.txt", "slow.txt", "missing.txt", "kbench-maxn1000.txt"} {
		t.Run(file, func(t *testing.T) {
			path := filepath.Join("testdata", file)
			cmd := exec.Command(goBin, "tool", "benchstat", "-format", "csv", "-col", "/impl@(list btree snapshot finder)", path)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("benchstat: %v\n%s", err, stderr.String())
			}
			want := parseBenchstatCSV(t, out)
			r := read(t, file)
			n := 0
			for key, w := range want {
				c := cellOf(t, r, key.unit, key.row, key.impl)
				n++
				if got := fmt.Sprint(c.Summary.Center); got != w.center {
					t.Errorf("%v: center %s, benchstat %s", key, got, w.center)
				}
				if got := c.Summary.PctRangeString(); got != w.ci {
					t.Errorf("%v: CI %s, benchstat %s", key, got, w.ci)
				}
				if got := c.Delta; got != w.delta {
					t.Errorf("%v: delta %q, benchstat %q", key, got, w.delta)
				}
				if c.Compared {
					if got := c.Comparison.String(); got != w.p {
						t.Errorf("%v: %q, benchstat %q", key, got, w.p)
					}
				}
			}
			// And nothing more: every cell of ours is in benchstat's output.
			ours := 0
			for _, tb := range r.Tables {
				for _, row := range tb.Rows {
					for _, c := range row.Cells {
						if c != nil {
							ours++
						}
					}
				}
			}
			if n == 0 || ours != n {
				t.Errorf("%d cells, benchstat %d", ours, n)
			}
		})
	}
}

type bsKey struct{ unit, row, impl string }
type bsCell struct{ center, ci, delta, p string }

// parseBenchstatCSV reads benchstat -format csv output: per table, a row
// of column names (impl at the first column of each group), a row of units
// ("", unit, "CI", unit, "CI", "vs base", "P", …), data rows, "geomean".
func parseBenchstatCSV(t *testing.T, data []byte) map[bsKey]bsCell {
	t.Helper()
	cr := csv.NewReader(bytes.NewReader(data))
	cr.FieldsPerRecord = -1
	cells := make(map[bsKey]bsCell)
	var prev, cols []string
	var unit string
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("benchstat csv: %v", err)
		}
		switch {
		case len(rec) > 2 && rec[0] == "" && rec[2] == "CI":
			unit, cols = rec[1], prev
		case len(rec) > 1 && cols != nil && rec[0] != "geomean" && rec[0] != "":
			for i := 1; i < len(rec) && i < len(cols); i++ {
				if cols[i] == "" || rec[i] == "" {
					continue
				}
				c := bsCell{center: rec[i], ci: rec[i+1]}
				if i+3 < len(rec) && i+3 < len(cols) && cols[i+2] == "" && i > 1 {
					c.delta, c.p = rec[i+2], rec[i+3]
				}
				cells[bsKey{unit, rec[0], cols[i]}] = c
			}
		case len(rec) > 0 && rec[0] == "geomean":
			cols = nil
		}
		prev = rec
	}
	return cells
}

// GateFamilies leaves out the families its pattern does not match.
func TestGateFamilies(t *testing.T) {
	r := read(t, "slow.txt")
	if err := r.GateFamilies(10, regexp.MustCompile(`^(KcoreOrder|Lookup)$`)); err != nil {
		t.Errorf("MergeIn was gated: %v", err)
	}
	if err := r.GateFamilies(10, regexp.MustCompile(`^MergeIn$`)); err == nil {
		t.Error("the slow MergeIn passed")
	}
}
