package attrib

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/internal/linediff"
	"github.com/kmapindex/kmapindex/internal/perftest"
)

// TestTableAgainstPerfReport compares WriteTable's rows with perf report
// --stdio --sort dso,sym --no-children -n -g none on the committed
// recordings (same kallsyms): overhead, samples, DSO, level and symbol,
// unresolved addresses included; a table per event where there are
// several.
func TestTableAgainstPerfReport(t *testing.T) {
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("perf not installed")
	}
	ks, err := kallsyms.ReadFile(kallsymsSubset)
	if err != nil {
		t.Fatal(err)
	}
	total, matched := 0, 0
	for _, f := range recordings(t) {
		name := filepath.Base(f)
		out, err := perftest.ReportTable(f, "--kallsyms", kallsymsSubset)
		if err != nil {
			t.Skip(err)
		}
		_, res := ourScript(t, f, ks, mapset.BTree, true)
		var b bytes.Buffer
		if err := res.WriteTable(&b); err != nil {
			t.Fatal(err)
		}
		want, got := linediff.ReportRows(string(out)), linediff.ReportRows(b.String())
		total += len(want)
		for i := range min(len(got), len(want)) {
			if got[i] == want[i] {
				matched++
			} else {
				t.Errorf("%s: row %d is %q, perf's %q", name, i+1, got[i], want[i])
				break
			}
		}
		if len(got) != len(want) {
			t.Errorf("%s: %d rows, perf %d", name, len(got), len(want))
		}
	}
	t.Logf("%d/%d perf report rows equal", matched, total)
}
