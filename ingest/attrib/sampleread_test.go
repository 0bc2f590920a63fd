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
	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/internal/linediff"
	"github.com/kmapindex/kmapindex/internal/perftest"
)

// TestSampleReadAgainstPerf records with leader sampling, whose samples
// read a group's counters (PERF_SAMPLE_READ, PERF_FORMAT_GROUP), and
// compares perf script and perf report (self and children) with kbench:
// perf delivers each sample once per group member, with the growth of
// that member's counter as its period.
func TestSampleReadAgainstPerf(t *testing.T) {
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("perf not installed")
	}
	ks, err := kallsyms.ReadFile("/proc/kallsyms")
	if err != nil || kallsyms.Restricted(ks) {
		t.Skip("no readable /proc/kallsyms")
	}
	work := []string{"sh", "-c", "i=0; while [ $i -lt 40000 ]; do i=$((i+1)); done; ls -R /usr/lib >/dev/null"}
	for _, tc := range []struct {
		name   string
		args   []string
		chains bool // the children table too (perf shows it only with callchains)
	}{
		{"group", []string{"-e", "{cpu-clock,task-clock}:S"}, false},
		{"group-g", []string{"-g", "-e", "{task-clock,cpu-clock}:S", "-F", "3000"}, true},
	} {
		f := filepath.Join(t.TempDir(), tc.name+".data")
		if err := perftest.Record(f, tc.args, work...); err != nil {
			t.Skipf("perf record %v: %v", tc.args, err)
		}
		r, err := perfdata.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		at := r.Attrs()
		r.Close()
		if len(at) != 2 || at[0].SampleType&perfdata.SampleFormatRead == 0 || at[0].ReadFormat&perfdata.ReadGroup == 0 {
			t.Fatalf("%s: the recording does not read its group (attrs %d)", tc.name, len(at))
		}

		want := perfScript(t, f, "--kallsyms", "/proc/kallsyms")
		got, res := ourScript(t, f, ks, mapset.BTree, false)
		if !bytes.Equal(got, want) {
			compareLines(t, tc.name, got, want)
		}
		if res.ByEvent == nil || res.Samples == 0 {
			t.Fatalf("%s: no samples", tc.name)
		}
		for _, children := range []bool{false, true} {
			if children && !tc.chains {
				continue
			}
			args := []string{"--kallsyms", "/proc/kallsyms"}
			if children {
				args = append(args, "--children")
			}
			out, err := perftest.ReportTable(f, args...)
			if err != nil {
				t.Skip(err)
			}
			rr, err := perfdata.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Run(rr, Options{Impl: mapset.BTree, Kallsyms: ks, Children: children})
			rr.Close()
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := res.WriteTable(&b); err != nil {
				t.Fatal(err)
			}
			wantRows, gotRows := linediff.ReportRows(string(out)), linediff.ReportRows(b.String())
			if d := linediff.First(strings.Join(gotRows, "\n"), strings.Join(wantRows, "\n")); d != "" {
				t.Errorf("%s children=%v: table differs from perf report: %s", tc.name, children, d)
			}
		}
		t.Logf("%s: %d script lines equal perf's", tc.name, bytes.Count(want, []byte("\n")))
	}
}

// A counter whose id no event has is counted, not delivered; a counter
// that did not grow delivers nothing; each other delivers a sample of its
// event with its growth as period.
func TestSampleReadsDelivery(t *testing.T) {
	a := &attributor{res: &Result{}}
	var delivered [][2]uint64 // attr, period
	deliver := func(e *event) { delivered = append(delivered, [2]uint64{uint64(e.attr), e.period}) }
	reads := [][]readValue{
		{{value: 10, id: 7, attr: 0, known: true}, {value: 4, id: 9, attr: 1, known: true}, {value: 5, id: 99}},
		{{value: 10, id: 7, attr: 0, known: true}, {value: 6, id: 9, attr: 1, known: true}},
		{{value: 25, id: 7, attr: 0, known: true}, {value: 6, id: 9, attr: 1, known: true}},
	}
	for _, rs := range reads {
		e := &event{kf: uint8(evSample), side: &sideband{reads: rs}, period: 1}
		if err := a.eachRead(e, func(e *event) error { deliver(e); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	want := [][2]uint64{{0, 10}, {1, 4}, {1, 2}, {0, 15}}
	if !slices.Equal(delivered, want) {
		t.Fatalf("delivered (attr, period) %v, want %v", delivered, want)
	}
	if a.res.UnknownIDs != 1 {
		t.Fatalf("UnknownIDs %d, want 1", a.res.UnknownIDs)
	}
	// A group of no counters: perf 6.1's deliver_sample_group fails.
	e := &event{kf: uint8(evSample), side: &sideband{off: 0x1234, reads: []readValue{}}, period: 1}
	err := a.eachRead(e, func(e *event) error { deliver(e); return nil })
	if err == nil || !strings.Contains(err.Error(), "0x1234") {
		t.Fatalf("a group of no counters: error %v, want one naming offset 0x1234", err)
	}
}
