package attrib

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
)

// reportRows returns the data rows of a perf report --stdio table,
// whitespace-normalized.
func reportRows(text string) []string {
	var rows []string
	for _, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		rows = append(rows, strings.Join(strings.Fields(line), " "))
	}
	slices.Sort(rows)
	return rows
}

// TestTableAgainstPerfReport compares WriteTable's rows with perf report
// --stdio --sort dso,sym --no-children -n -g none on the committed
// recordings (same kallsyms): overhead, samples, DSO, level and symbol,
// unresolved addresses included; a table per event where there are
// several.
func TestTableAgainstPerfReport(t *testing.T) {
	perf, err := exec.LookPath("perf")
	if err != nil {
		t.Skip("perf not installed")
	}
	ks, err := kallsyms.ReadFile(kallsymsSubset)
	if err != nil {
		t.Fatal(err)
	}
	total, matched := 0, 0
	for _, f := range recordings(t) {
		name := filepath.Base(f)
		cmd := exec.Command(perf, "report", "-i", f, "--stdio", "--sort", "dso,sym", "--no-children", "-n", "-g", "none", "--kallsyms", kallsymsSubset)
		out, err := cmd.Output()
		if err != nil {
			t.Skipf("perf report: %v", err)
		}
		_, res := ourScript(t, f, ks, mapset.BTree, true)
		var b bytes.Buffer
		if err := res.WriteTable(&b); err != nil {
			t.Fatal(err)
		}
		want, got := reportRows(string(out)), reportRows(b.String())
		total += len(want)
		for _, row := range want {
			if _, ok := slices.BinarySearch(got, row); ok {
				matched++
			} else {
				t.Errorf("%s: perf row %q missing", name, row)
			}
		}
		if len(got) != len(want) {
			t.Errorf("%s: %d rows, perf %d", name, len(got), len(want))
		}
	}
	t.Logf("%d/%d perf report rows equal", matched, total)
}
