package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/kmapindex/kmapindex/internal/perfswap"
	"github.com/kmapindex/kmapindex/internal/perftest"
)

// perf script prints a perf stat recording's counters at each STAT_ROUND;
// kbench's script view prints the same text, whatever fields -F asks for,
// and the same for the recording in big-endian byte order.
func TestReportStatRecord(t *testing.T) {
	files, err := filepath.Glob("testdata/stat/*.data")
	if err != nil || len(files) < 5 {
		t.Fatalf("testdata/stat: %d recordings, %v", len(files), err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			want := string(mustRead(t, f[:len(f)-len(".data")]+".script"))
			got := mustReport(t, nil, "-format", "script", f)
			if got != want {
				t.Errorf("kbench report -format script:\n%s\nperf script (golden):\n%s", got, want)
			}
			if data := mustRead(t, f); data[8] == 104 { // file mode: ToBigEndian's
				be := filepath.Join(t.TempDir(), "be.data")
				if err := os.WriteFile(be, perfswap.ToBigEndian(data), 0o644); err != nil {
					t.Fatal(err)
				}
				if got := mustReport(t, nil, "-format", "script", be); got != want {
					t.Errorf("big-endian: kbench report -format script:\n%s\nwant:\n%s", got, want)
				}
			}
			live, _, err := perftest.Run(perftest.Options{}, "script", "-F", "ip,sym,dso", "-i", f)
			if errors.Is(err, perftest.ErrNotInstalled) {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if live != want {
				t.Errorf("perf script -F ip,sym,dso:\n%s\ngolden:\n%s", live, want)
			}
		})
	}
}
