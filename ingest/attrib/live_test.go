package attrib

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/internal/perftest"
)

// perfScript runs perf script -F ip,sym,dso on file.
func perfScript(t *testing.T, file string, args ...string) []byte {
	t.Helper()
	out, err := perftest.Script(file, args...)
	if err != nil {
		t.Skip(err)
	}
	return []byte(out)
}

func ourScript(t *testing.T, file string, ks []kallsyms.Symbol, impl mapset.Impl, hide bool) ([]byte, *Result) {
	t.Helper()
	r, err := perfdata.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var buf bytes.Buffer
	res, err := Run(r, Options{Impl: impl, Kallsyms: ks, Script: &buf, HideCallchain: hide})
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), res
}

func compareLines(t *testing.T, name string, got, want []byte) {
	t.Helper()
	gl := strings.Split(string(got), "\n")
	wl := strings.Split(string(want), "\n")
	match, shown := 0, 0
	for i := 0; i < len(gl) && i < len(wl); i++ {
		if gl[i] == wl[i] {
			match++
		} else if shown < 8 {
			t.Errorf("%s line %d:\n got %q\nwant %q", name, i+1, gl[i], wl[i])
			shown++
		}
	}
	if len(gl) != len(wl) {
		t.Errorf("%s: %d lines, perf %d", name, len(gl), len(wl))
	}
	t.Logf("%s: %d/%d lines match perf script", name, match, len(wl))
}

// TestAgainstPerfScriptLive compares with perf script on this machine:
// every committed recording with the running kernel's kallsyms, and a
// fresh recording with callchains made now.
func TestAgainstPerfScriptLive(t *testing.T) {
	ks, err := kallsyms.ReadFile("/proc/kallsyms")
	if err != nil || kallsyms.Restricted(ks) {
		t.Skip("no readable /proc/kallsyms")
	}
	files, _ := filepath.Glob("../perfdata/testdata/*.data")
	dir := t.TempDir()
	for name, args := range map[string][]string{
		"fresh.data": {"-g", "-e", "cpu-clock", "-F", "2000"},
		// A delayed start makes perf track with a dummy event whose
		// sample_id trailer lacks the CPU the tracepoint's has: each
		// record's trailer is its own attr's.
		"delayed.data": {"-D", "1", "-e", "sched:sched_switch", "-e", "cpu-clock", "-F", "2000"},
	} {
		f := filepath.Join(dir, name)
		if err := perftest.Record(f, args,
			"sh", "-c", "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done; ls -R /usr/lib >/dev/null"); err != nil {
			t.Logf("%s skipped: %v", name, err)
		} else {
			files = append(files, f)
		}
	}
	for _, f := range files {
		name := filepath.Base(f)
		want := perfScript(t, f, "--kallsyms", "/proc/kallsyms")
		got, _ := ourScript(t, f, ks, mapset.BTree, false)
		if !bytes.Equal(got, want) {
			compareLines(t, name, got, want)
			continue
		}
		t.Logf("%s: %d/%d lines equal perf script", name, len(lines(want)), len(lines(want)))
		wantG := perfScript(t, f, "--kallsyms", "/proc/kallsyms", "-G")
		gotG, _ := ourScript(t, f, ks, mapset.BTree, true)
		if !bytes.Equal(gotG, wantG) {
			compareLines(t, name+" -G", gotG, wantG)
		}
	}
}
