package attrib

import (
	"slices"
	"testing"
)

func TestParseTime(t *testing.T) {
	for _, tc := range []struct {
		in         string
		start, end uint64
		ok         bool
	}{
		{"1.5,2", 1_500_000_000, 2_000_000_000, true},
		{",2.000000001", 0, 2_000_000_001, true},
		{"523.7,", 523_700_000_000, 0, true},
		{",", 0, 0, true},
		{"1.5", 0, 0, false},            // no comma
		{"1.1234567890,2", 0, 0, false}, // more than nine decimals
		{"x,2", 0, 0, false},
		{"-1,2", 0, 0, false},
	} {
		start, end, err := ParseTime(tc.in)
		if (err == nil) != tc.ok || tc.ok && (start != tc.start || end != tc.end) {
			t.Errorf("ParseTime(%q) = %d, %d, %v; want %d, %d, ok %v", tc.in, start, end, err, tc.start, tc.end, tc.ok)
		}
	}
}

func TestParseSortKeys(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string // nil: an error
	}{
		{"dso,sym", []string{"dso", "sym"}},
		{"comm, pid,cpu", []string{"comm", "pid", "cpu"}},
		{"symbol", []string{"sym"}},
		{"tid", nil}, // perf 6.1 has no tid key: pid is the thread
		{"dso,dso", nil},
		{"", nil},
	} {
		got, err := ParseSortKeys(tc.in)
		if tc.want == nil && err == nil || tc.want != nil && (err != nil || !slices.Equal(got, tc.want)) {
			t.Errorf("ParseSortKeys(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// Time and CPU filters drop samples; a nil filter passes everything.
func TestFilterDrops(t *testing.T) {
	var none *Filter
	if none.outsideTime(5) || none.otherCPU(3) {
		t.Error("a nil filter drops samples")
	}
	f := &Filter{TimeStart: 10, TimeEnd: 20, CPUs: []uint32{1, 2}}
	for _, tc := range []struct {
		time uint64
		out  bool
	}{{0, false}, {9, true}, {10, false}, {20, false}, {21, true}} {
		if f.outsideTime(tc.time) != tc.out {
			t.Errorf("time %d: outside %v", tc.time, !tc.out)
		}
	}
	if f.otherCPU(1) || !f.otherCPU(0) || !f.otherCPU(^uint32(0)) {
		t.Error("CPU filter")
	}
}
