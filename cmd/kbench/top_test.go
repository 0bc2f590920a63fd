package main

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kmapindex/kmapindex/perfevent"
)

func TestTopTable(t *testing.T) {
	c := &topCounts{rows: map[topKey]uint64{
		{dso: "[kernel]", sym: "do_syscall_64", kernel: true}: 3,
		{dso: "libc.so.6", sym: "malloc"}:                     5,
		{dso: "libc.so.6", sym: "free"}:                       3,
	}, samples: 11}
	var b bytes.Buffer
	writeTopTable(&b, c, perfevent.Stats{Lost: 7, LostRecords: 2}, 4000, 2*time.Second, 2)
	want := `kbench top: 11 samples in 2.0 s (6/s), 4000 Hz cpu-clock; lost: 7 samples in 2 LOST records
-------------------------------------------------------------------------------
  45.45%         5  libc.so.6                 [.] malloc
  27.27%         3  [kernel]                  [k] do_syscall_64
`
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestTopKeys(t *testing.T) {
	for _, tt := range []struct {
		in string
		ok bool
	}{{"dso,sym", true}, {"comm,pid,dso,sym", true}, {"cpu", false}, {"dso,", false}} {
		if _, err := parseTopKeys(tt.in); (err == nil) != tt.ok {
			t.Errorf("parseTopKeys(%q): %v", tt.in, err)
		}
	}
}

// TestTopLive samples the machine for a second; it skips where the
// kernel does not allow perf_event_open.
func TestTopLive(t *testing.T) {
	if testing.Short() {
		t.Skip("samples for a second")
	}
	var out, errb bytes.Buffer
	err := runTop([]string{"-d", "1", "-n", "5", "-F", "999"}, &out, &errb)
	if errors.Is(err, perfevent.ErrNotPermitted) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if !regexp.MustCompile(`^kbench top: [1-9]\d* samples in `).MatchString(lines[0]) || len(lines) < 3 {
		t.Fatalf("output:\n%s", out.String())
	}
	row := regexp.MustCompile(`^ +\d+\.\d\d%  +\d+  \S.* \[[k.]\] \S`)
	for _, l := range lines[2:] {
		if !row.MatchString(l) {
			t.Errorf("row %q", l)
		}
	}
}
