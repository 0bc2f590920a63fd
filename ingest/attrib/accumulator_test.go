package attrib

import (
	"slices"
	"testing"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/ingest/symbols"
)

// Maps of one DSO (a library in each process) share one cache of their
// symbols' entries and find the same entries; another DSO, level or
// event has entries of its own.
func TestAccumulatorSharesSymbolEntries(t *testing.T) {
	tab := symbols.Build([]symbols.Symbol{{Start: 0x1000, End: 0x1100, Name: "f"}, {Start: 0x1100, End: 0x1200, Name: "g"}})
	state := func(dso string, start uint64, kernel bool) *mapState {
		return &mapState{key: stateKey{m: index.Map{Start: start, End: start + 0x10000, DSO: dso}, kernel: kernel}}
	}
	ac := newAccumulator()
	a1, a2 := state("/lib/a.so", 0x400000, false), state("/lib/a.so", 0x7f0000000000, false)
	f := ac.symEntry(a1, tab, 0, 0, 0)
	if got := ac.symEntry(a2, tab, 0, 0, 0); got != f {
		t.Errorf("f in two maps of one DSO: entries %d and %d", f, got)
	}
	if got := ac.symEntry(a2, tab, 1, 0, 0); got == f {
		t.Errorf("g has f's entry %d", f)
	}
	if len(ac.symIDs) != 1 {
		t.Errorf("%d caches of one DSO's entries, want 1", len(ac.symIDs))
	}
	for _, c := range []struct {
		what  string
		st    *mapState
		event int
	}{
		{"another DSO", state("/lib/b.so", 0x500000, false), 0},
		{"the kernel level", state("/lib/a.so", 0x600000, true), 0},
		{"another event", a1, 1},
	} {
		if got := ac.symEntry(c.st, tab, 0, c.event, 0); got == f {
			t.Errorf("f of %s has the first map's entry %d", c.what, f)
		}
	}
	if len(ac.symIDs) != 4 {
		t.Errorf("%d caches of entries, want 4", len(ac.symIDs))
	}
	want := []Key{
		{DSO: "/lib/a.so", Sym: "f", Addr: 0x1000},
		{DSO: "/lib/a.so", Sym: "g", Addr: 0x1100},
		{DSO: "/lib/b.so", Sym: "f", Addr: 0x1000},
		{DSO: "/lib/a.so", Sym: "f", Addr: 0x1000, Kernel: true},
		{DSO: "/lib/a.so", Sym: "f", Addr: 0x1000, Event: 1},
	}
	if ac.keys.len() != len(want) {
		t.Fatalf("%d entries, want %v", ac.keys.len(), want)
	}
	for i := range want {
		if ac.keys.at(int32(i)) != want[i] {
			t.Errorf("entry %d: %+v, want %+v", i, ac.keys.at(int32(i)), want[i])
		}
	}
}

// Addresses without a symbol in maps of one DSO (a library in each
// process) find one entry per address and event; another DSO or level
// has entries of its own; and their keys are the ones entry would make.
// A map named as no map is ([unknown]) still goes through entry.
func TestAccumulatorSharesAddressEntries(t *testing.T) {
	state := func(dso string, start uint64, kernel bool) *mapState {
		return &mapState{key: stateKey{m: index.Map{Start: start, End: start + 0x10000, DSO: dso}, kernel: kernel}}
	}
	ac := newAccumulator()
	a1, a2 := state("/lib/a.so", 0x400000, false), state("/lib/a.so", 0x7f0000000000, false)
	x := ac.addrEntry(a1, 0x1234, 0)
	for _, c := range []struct {
		what  string
		st    *mapState
		addr  uint64
		event int
		same  bool
	}{
		{"the same map", a1, 0x1234, 0, true},
		{"another map of the DSO", a2, 0x1234, 0, true},
		{"another address", a2, 0x1238, 0, false},
		{"another event", a2, 0x1234, 1, false},
		{"another DSO", state("/lib/b.so", 0x500000, false), 0x1234, 0, false},
		{"the kernel level", state("/lib/a.so", 0x600000, true), 0x1234, 0, false},
	} {
		if got := ac.addrEntry(c.st, c.addr, c.event); (got == x) != c.same {
			t.Errorf("%s: entry %d, the first's %d: same %v, want %v", c.what, got, x, got == x, c.same)
		}
	}
	if n := ac.keys.len(); n != 5 {
		t.Errorf("%d entries, want 5", n)
	}
	for i := range int32(ac.keys.len()) {
		k := ac.keys.at(i)
		if got := ac.entry(k); got != i {
			t.Errorf("entry of %+v: %d, want the address's entry %d", k, got, i)
		}
	}
	if len(ac.byKey) != 0 {
		t.Errorf("byKey holds %d address entries: their names are hashed for nothing", len(ac.byKey))
	}
	u := ac.addrEntry(state(symbols.Unknown, 0x900000, false), 0x77, 0)
	if got := ac.noMapEntry(0x77, false, false, 0); got != u {
		t.Errorf("an address of a map named %s: entry %d, the no-map entry %d", symbols.Unknown, u, got)
	}
}

// An address outside every map has one entry whichever way it is asked
// for, with the level it was first made at.
func TestAccumulatorNoMapEntries(t *testing.T) {
	ac := newAccumulator()
	id := ac.noMapEntry(0x1234, true, false, 0)
	if got := ac.entry(Key{DSO: symbols.Unknown, Sym: symbols.Unknown, Addr: 0x1234}); got != id {
		t.Errorf("entry of the address: %d, noMapEntry's %d", got, id)
	}
	if got := ac.noMapEntry(0x1234, false, true, 0); got != id {
		t.Errorf("at another level: %d, want %d", got, id)
	}
	if got := ac.noMapEntry(0x1234, true, false, 1); got == id {
		t.Errorf("another event has entry %d", got)
	}
	if !ac.keys.at(id).Kernel || len(ac.byKey) != 0 {
		t.Errorf("entry %+v (byKey %v): want the kernel level, in noMap alone", ac.keys.at(id), ac.byKey)
	}
}

// A children table keeps perf's callchain cursor only for a recording
// whose events differ in having callchains: with all or none of them
// having one, no sample is counted in another's frames.
func TestNewChainCursor(t *testing.T) {
	const chain, plain = perfdata.SampleFormatIP | perfdata.SampleFormatCallchain, perfdata.SampleFormatIP
	for _, tc := range []struct {
		name  string
		types []perfdata.SampleFormat
		want  []bool // chainless per event; nil: no cursor
	}{
		{"one with", []perfdata.SampleFormat{chain}, nil},
		{"one without", []perfdata.SampleFormat{plain}, nil},
		{"all with", []perfdata.SampleFormat{chain, chain}, nil},
		{"none with", []perfdata.SampleFormat{plain, plain, plain}, nil},
		{"with, without", []perfdata.SampleFormat{chain, plain}, []bool{false, true}},
		{"without, with, without", []perfdata.SampleFormat{plain, chain, plain}, []bool{true, false, true}},
	} {
		var attrs []*perfdata.Attr
		for _, st := range tc.types {
			attrs = append(attrs, &perfdata.Attr{SampleType: st})
		}
		c := newChainCursor(attrs)
		switch {
		case tc.want == nil && c != nil:
			t.Errorf("%s: a cursor, chainless %v", tc.name, c.chainless)
		case tc.want != nil && c == nil:
			t.Errorf("%s: no cursor", tc.name)
		case tc.want != nil && !slices.Equal(c.chainless, tc.want):
			t.Errorf("%s: chainless %v, want %v", tc.name, c.chainless, tc.want)
		}
	}
}
