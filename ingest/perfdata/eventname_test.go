package perfdata

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/kmapindex/kmapindex/internal/perftest"
)

// Attr.Name makes evsel__name's names: the type's table or format, then
// the modifiers of the exclude and precise_ip bits.
func TestAttrName(t *testing.T) {
	const hw, sw, tp, cache, raw, bp = 0, 1, 2, 3, 4, 5
	for _, tc := range []struct {
		attr Attr
		want string
	}{
		// perf record sets exclude_guest; H and G show when it differs
		// from what the other modifiers imply (none: not excluded).
		{Attr{Type: hw, Config: 0, Flags: AttrExcludeGuest}, "cycles"},
		{Attr{Type: hw, Config: 0}, "cycles:HG"},
		{Attr{Type: hw, Config: 9, Flags: AttrExcludeKern | AttrExcludeHV | AttrExcludeGuest}, "ref-cycles:uH"},
		{Attr{Type: hw, Config: 9, Flags: AttrExcludeKern | AttrExcludeHV}, "ref-cycles:u"},
		{Attr{Type: hw, Config: 10, Flags: AttrExcludeGuest}, "unknown-hardware"},
		{Attr{Type: hw, Config: 1, Flags: 2 << 15}, "instructions:pp"},
		{Attr{Type: hw, Config: 1, Flags: 2<<15 | AttrExcludeGuest}, "instructions:ppH"},
		{Attr{Type: sw, Config: 0, Flags: AttrExcludeHost}, "cpu-clock:G"},        // guest only
		{Attr{Type: sw, Config: 10, Flags: AttrExcludeGuest}, "unknown-software"}, // bpf-output: not in perf 6.1's table
		{Attr{Type: sw, Config: 2, Flags: AttrExcludeUser}, "page-faults:kh"},
		{Attr{Type: tp, Config: 300}, "unknown tracepoint"},
		{Attr{Type: cache, Config: 0 | 0<<8 | 1<<16, Flags: AttrExcludeGuest}, "L1-dcache-load-misses"},
		{Attr{Type: cache, Config: 2 | 1<<8, Flags: AttrExcludeGuest}, "LLC-stores"},
		{Attr{Type: cache, Config: 4 | 1<<8, Flags: AttrExcludeGuest}, "invalid-cache"}, // iTLB has no store
		{Attr{Type: cache, Config: 9, Flags: AttrExcludeGuest}, "unknown-ext-hardware-cache-type"},
		{Attr{Type: raw, Config: 0x1cd, Flags: AttrExcludeKern | AttrExcludeHV | 3<<15}, "raw 0x1cd:uppp"},
		{Attr{Type: bp, Config1: 0x1000, BPType: 3, Flags: AttrExcludeKern | AttrExcludeHV}, "mem:0x1000:rw:u"},
		{Attr{Type: 8}, "unknown attr type: 8"},
	} {
		if got := tc.attr.Name(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.attr, got, tc.want)
		}
	}
}

// perf 6.1 names an event by its attr, evsel__name, when it falls back
// from cycles to cpu-clock (no hardware counters, as in most VMs): the
// names it records then are Attr.Name's. Where cycles counts, there is
// nothing to compare.
func TestAttrNameAgainstPerf(t *testing.T) {
	compared := 0
	for _, event := range []string{"cycles", "cycles:u", "cycles:k", "cycles:ppp", "cycles:uH"} {
		file := filepath.Join(t.TempDir(), "perf.data")
		if err := perftest.Record(file, []string{"-e", event}, "true"); err != nil {
			if errors.Is(err, perftest.ErrNotInstalled) {
				t.Skip(err)
			}
			t.Logf("%s: %v", event, err)
			continue
		}
		r, err := Open(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range r.Attrs() {
			if a.Type != 1 || len(a.IDs) == 0 {
				t.Logf("%s: no fallback to cpu-clock here", event)
				continue
			}
			compared++
			if want := r.Features().EventName(a.IDs[0]); a.Name() != want {
				t.Errorf("%s: Name %q, perf named it %q", event, a.Name(), want)
			}
		}
		r.Close()
	}
	if compared == 0 {
		t.Skip("perf fell back to cpu-clock for none: no name of evsel__name's to compare")
	}
}
