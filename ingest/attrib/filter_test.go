package attrib

import (
	"slices"
	"strings"
	"testing"
)

// --time reads as perf 6.1 reads it (perf_time__parse_for_ranges): slices
// in seconds, several apart, or percents of the recording's time.
func TestParseTimes(t *testing.T) {
	const first, last = 100_000_000_000, 200_000_000_000 // 100 s to 200 s
	type r = TimeRange
	for _, tc := range []struct {
		in   string
		want []TimeRange // nil: refused
	}{
		{"1.5,2", []r{{1_500_000_000, 2_000_000_000}}},
		{",2.000000001", []r{{0, 2_000_000_001}}},
		{"523.7,", []r{{523_700_000_000, 0}}},
		{",", []r{{0, 0}}},
		{" 1, +2", []r{{1e9, 2e9}}}, // strtoul's white space and sign
		{".,1.", []r{{0, 1e9}}},     // no digits before the point: 0
		{"1,2 3,4", []r{{1e9, 2e9}, {3e9, 4e9}}},
		{"1,2  3,", []r{{1e9, 2e9}, {3e9, 0}}},
		{",2 3,4\t5,6", []r{{0, 2e9}, {3e9, 4e9}, {5e9, 6e9}}},
		{"1.5", nil},            // no comma
		{"1.1234567890,2", nil}, // more than nine decimals
		{"x,2", nil},
		{"2,1", nil},     // ends before it starts
		{"1,3 2,4", nil}, // overlapping slices
		{"3,4 1,2", nil}, // out of order
		{"1,2,3 4,5", nil},
		{"1 ,2", nil},
		{"10%/2", []r{{110_000_000_000, 119_999_999_999}}},
		{"10%/10", []r{{190_000_000_000, last}}}, // the last ends at the last sample
		{"0%-10%,30%-40%", []r{{first, 109_999_999_999}, {130_000_000_000, 139_999_999_999}}},
		{"50%", []r{{first, 149_999_999_999}}},
		{"%-10%", []r{{first, 109_999_999_999}}}, // strtod of nothing: 0
		{"10%/1,", []r{{first, 109_999_999_999}}},
		{"33.3%/3", []r{{166_600_000_000, 199_899_999_999}}},
		{"0%-0%", []r{{first, first}}},
		{"110%", nil},
		{"10%/0", nil},
		{"10%/11", nil},
		{"0%/2", nil},
		{"10%%", nil},
		{"10%,20%", nil},
		{"0%-10%,30%", nil},
		{"x%/2", nil},
		{"nan%/1", nil},
		{"10%/2x", nil},
	} {
		got, err := ParseTimes(tc.in, first, last)
		if tc.want == nil && err == nil || tc.want != nil && (err != nil || !slices.Equal(got, tc.want)) {
			t.Errorf("ParseTimes(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	// Without the recording's sample times, percents are refused.
	if got, err := ParseTimes("10%/2", 0, 0); err == nil {
		t.Errorf("ParseTimes of percents without sample times = %v", got)
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
	f := &Filter{times: []TimeRange{{10, 20}}, CPUs: []uint32{1, 2}}
	for _, tc := range []struct {
		time uint64
		out  bool
	}{{0, false}, {9, true}, {10, false}, {20, false}, {21, true}} {
		if f.outsideTime(tc.time) != tc.out {
			t.Errorf("time %d: outside %v", tc.time, !tc.out)
		}
	}
	// Of several slices, one holds the sample (an open end holds what
	// follows).
	several := &Filter{times: []TimeRange{{0, 20}, {30, 40}, {50, 0}}}
	for _, tc := range []struct {
		time uint64
		out  bool
	}{{0, false}, {1, false}, {20, false}, {21, true}, {30, false}, {41, true}, {50, false}, {1 << 40, false}} {
		if several.outsideTime(tc.time) != tc.out {
			t.Errorf("several slices, time %d: outside %v", tc.time, !tc.out)
		}
	}
	if f.otherCPU(1) || !f.otherCPU(0) || !f.otherCPU(^uint32(0)) {
		t.Error("CPU filter")
	}
}

// Whatever --time holds, ParseTimes does not panic, and what it accepts
// is what perf accepts: slices that end after they start, apart and in
// order for seconds; within the recording's time for percents.
func FuzzParseTimes(f *testing.F) {
	for _, s := range []string{"1.5,2", "1,2 3,4", ",", "10%/2", "0%-10%,30%-40%", "50%", "%-10%", " 1, +2", "10%/1,"} {
		f.Add(s, uint64(100e9), uint64(200e9))
	}
	f.Fuzz(func(t *testing.T, s string, first, last uint64) {
		if last < first {
			first, last = last, first
		}
		ranges, err := ParseTimes(s, first, last)
		if err != nil {
			return
		}
		if len(ranges) == 0 || len(ranges) > 1+strings.Count(s, ",") {
			t.Fatalf("%q: %d slices", s, len(ranges))
		}
		percent := strings.Contains(s, "%")
		for i, r := range ranges {
			// perf takes a span that ends before it starts ("1%-%"): it
			// selects nothing.
			if percent && (r.Start < first || r.Start > last || r.End < first || r.End > last) {
				t.Errorf("%q: slice %v outside [%d, %d]", s, r, first, last)
			}
			if !percent && r.End != 0 && r.End < r.Start {
				t.Errorf("%q: slice %v ends before it starts", s, r)
			}
			if !percent && i > 0 && ranges[i-1].End >= r.Start {
				t.Errorf("%q: slices %v and %v overlap", s, ranges[i-1], r)
			}
		}
	})
}
