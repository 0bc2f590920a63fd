package attrib

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/machine"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/ingest/symbols"
)

// Filter selects samples as perf report's and perf script's filter
// options do. A sample outside the time range or on another CPU is
// dropped before anything counts it; a sample of another thread, DSO or
// symbol is filtered: perf report counts it in the totals (its percentages
// are absolute) but shows no row for it, perf script does not print it.
type Filter struct {
	Pids, Tids []int32  // --pid, --tid: the thread's pid or tid is one of these
	Comms      []string // --comms: the thread's command name at the sample is one of these
	CPUs       []uint32 // --cpu
	// TimeText is the --time argument: time slices in seconds
	// ("start,end", several separated by spaces) or percents of the
	// recording's time ("10%/2", "0%-10%,30%-40%", "50%"), as ParseTimes
	// reads it; perf's table header repeats it. Samples without a time
	// pass.
	TimeText string
	DSOs     []string // --dsos: the map's DSO, by short or long name
	Syms     []string // --symbols: the symbol's name or "0x" and its start address
	// times are TimeText's slices, once Run has read them (withTimes).
	times []TimeRange
}

// TimeRange is a time slice of perf's --time: from Start to End in
// nanoseconds, both included; 0 leaves a side open.
type TimeRange struct{ Start, End uint64 }

// ParseTimes reads perf's --time argument s as perf 6.1 does
// (perf_time__parse_for_ranges) for a recording whose first and last
// samples are at first and last (perfdata.Features.FirstSampleTime; both
// 0: not recorded). Slices in seconds are "start,end", either side empty
// for open, several separated by spaces, in order and apart. Percents
// divide the span from first to last: "P%/N" is its Nth slice of P
// percent, "A%-B%" the span from A to B percent, "P%" its first P
// percent, several separated by commas; without first and last they are
// refused, as perf refuses them.
func ParseTimes(s string, first, last uint64) ([]TimeRange, error) {
	size := 1 + strings.Count(s, ",") // perf_time__range_alloc
	var (
		ranges []TimeRange
		err    error
	)
	if strings.Contains(s, "%") {
		if first == 0 && last == 0 {
			return nil, fmt.Errorf("time %q: the recording has no first and last sample times (its SAMPLE_TIME header feature), which percents divide", s)
		}
		ranges, err = percentTimes(s, size, first, last)
	} else {
		ranges, err = secondTimes(s)
	}
	if err != nil {
		return nil, fmt.Errorf("time %q: invalid time string (%w)", s, err)
	}
	return ranges, nil
}

// secondTimes is perf_time__parse_strs: as many slices as s has commas,
// separated by white space; each "start,end" in seconds (parseNsec), end
// not before start, each slice ending before the next starts.
func secondTimes(s string) ([]TimeRange, error) {
	num := strings.Count(s, ",")
	if num == 0 {
		return nil, errors.New("want start,end")
	}
	ranges := make([]TimeRange, 0, num)
	p := s
	for range num - 1 {
		// The piece runs to the white space after its comma's value,
		// which holds no comma.
		comma := strings.IndexByte(p, ',')
		rest := strings.TrimLeft(p[comma+1:], cSpace)
		end := strings.IndexAny(rest, cSpace)
		if end < 0 {
			end = len(rest)
		}
		if strings.Contains(rest[:end], ",") {
			return nil, errors.New("slices are separated by white space")
		}
		arg := p[:len(p)-len(rest)+end]
		if end < len(rest) {
			rest = rest[end+1:]
		} else {
			rest = rest[end:]
		}
		r, err := secondTime(arg)
		if err != nil {
			return nil, err
		}
		ranges, p = append(ranges, r), rest
	}
	r, err := secondTime(p)
	if err != nil {
		return nil, err
	}
	ranges = append(ranges, r)
	for i := range len(ranges) - 1 {
		if ranges[i].End >= ranges[i+1].Start {
			return nil, errors.New("slices overlap or are out of order")
		}
	}
	return ranges, nil
}

// cSpace is what C's isspace takes for white space.
const cSpace = " \t\n\v\f\r"

// secondTime is perf_time__parse_str: "start,end", either empty.
func secondTime(s string) (TimeRange, error) {
	var r TimeRange
	if s == "" {
		return r, nil
	}
	lo, hi, _ := strings.Cut(s, ",")
	var err error
	if lo != "" {
		if r.Start, err = parseNsec(lo); err != nil {
			return r, err
		}
	}
	if hi != "" {
		if r.End, err = parseNsec(hi); err != nil {
			return r, err
		}
	}
	if r.End != 0 && r.End < r.Start {
		return r, errors.New("a slice ends before it starts")
	}
	return r, nil
}

// parseNsec is perf's parse_nsec_time: seconds, then optionally "." and
// at most nine digits of a fraction, each read by strtoul.
func parseNsec(s string) (uint64, error) {
	sec, rest := strtoul(s)
	if rest != "" && rest[0] != '.' {
		return 0, fmt.Errorf("bad time %q", s)
	}
	var ns uint64
	if rest != "" {
		frac := rest[1:]
		if len(frac) > 9 {
			return 0, fmt.Errorf("bad time %q", s)
		}
		var left string
		if ns, left = strtoul(frac + strings.Repeat("0", 9-len(frac))); left != "" {
			return 0, fmt.Errorf("bad time %q", s)
		}
	}
	return sec*1e9 + ns, nil // wrapping, as perf's u64s do
}

// strtoul is C's strtoul in base 10 as perf calls it: leading white
// space, an optional sign (a minus negates the value modulo 2^64), digits
// (too many give the largest value); the rest of s after them, or all
// of s when there are none.
func strtoul(s string) (uint64, string) {
	t := strings.TrimLeft(s, cSpace)
	neg := false
	if t != "" && (t[0] == '+' || t[0] == '-') {
		neg, t = t[0] == '-', t[1:]
	}
	i := 0
	var n uint64
	over := false
	for ; i < len(t) && '0' <= t[i] && t[i] <= '9'; i++ {
		d := uint64(t[i] - '0')
		if n > (math.MaxUint64-d)/10 {
			over = true
		}
		n = n*10 + d
	}
	if i == 0 {
		return 0, s
	}
	if over {
		return math.MaxUint64, t[i:]
	}
	if neg {
		n = -n
	}
	return n, t[i:]
}

// percentTimes is perf_time__percent_parse_str: comma-separated "P%/N"
// slices when s has a "/", else "A%-B%" spans when it has a "-", else
// one "P%" (ending s). size is perf's room for slices.
func percentTimes(s string, size int, first, last uint64) ([]TimeRange, error) {
	var one func(string) (TimeRange, error)
	switch {
	case strings.Contains(s, "/"):
		one = func(p string) (TimeRange, error) { return percentSlash(p, first, last) }
	case strings.Contains(s, "-"):
		one = func(p string) (TimeRange, error) { return percentDash(p, first, last) }
	default:
		if strings.IndexByte(s, '%') != len(s)-1 {
			return nil, errors.New("a percent ends the string")
		}
		r, err := percentSlash(s+"/1", first, last)
		if err != nil {
			return nil, err
		}
		return []TimeRange{r}, nil
	}
	var ranges []TimeRange
	for p := s; p != ""; { // a comma ending s ends the slices (percent_comma_split)
		if len(ranges) >= size {
			return nil, errors.New("too many slices")
		}
		piece, rest, _ := strings.Cut(p, ",")
		r, err := one(piece)
		if err != nil {
			return nil, err
		}
		ranges, p = append(ranges, r), rest
	}
	return ranges, nil
}

// parsePercent is perf's parse_percent: the number before the first "%"
// (which must be there), as a fraction.
func parsePercent(s string) (float64, error) {
	num, _, ok := strings.Cut(s, "%")
	if !ok {
		return 0, errors.New("no percent")
	}
	d, err := strtod(num)
	if err != nil {
		return 0, err
	}
	return d / 100.0, nil
}

// strtod reads s whole as C's strtod does a decimal number (leading
// white space, a sign, digits with a point, an exponent); "" is 0, as
// strtod then reads nothing of nothing. Hexadecimal numbers and NaN,
// which perf would take or misuse, are refused.
func strtod(s string) (float64, error) {
	if s == "" {
		return 0, nil
	}
	t := strings.TrimLeft(s, cSpace)
	if t == "" || strings.ContainsAny(t, "_xXpP") {
		return 0, fmt.Errorf("bad percent %q", s)
	}
	d, err := strconv.ParseFloat(t, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsNaN(d) {
		return 0, fmt.Errorf("bad percent %q", s)
	}
	return d, nil
}

// percentSlash is perf's percent_slash_split: "P%/N", the Nth slice of P
// percent.
func percentSlash(s string, first, last uint64) (TimeRange, error) {
	p, nth, ok := strings.Cut(s, "/")
	if !ok {
		return TimeRange{}, errors.New("want P%/N")
	}
	pcnt, err := parsePercent(p)
	if err != nil {
		return TimeRange{}, err
	}
	n, left := strtoul(nth)
	if left != "" {
		return TimeRange{}, fmt.Errorf("bad slice number %q", nth)
	}
	i := int64(int32(n)) // perf's (int)strtol
	if pcnt <= 0 {
		return TimeRange{}, errors.New("a slice of no percent")
	}
	return percentTime(pcnt*float64(i-1), pcnt*float64(i), first, last)
}

// percentDash is perf's percent_dash_split: "A%-B%".
func percentDash(s string, first, last uint64) (TimeRange, error) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return TimeRange{}, errors.New("want A%-B%")
	}
	start, err := parsePercent(a)
	if err != nil {
		return TimeRange{}, err
	}
	end, err := parsePercent(b)
	if err != nil {
		return TimeRange{}, err
	}
	return percentTime(start, end, first, last)
}

// percentTime is perf's set_percent_time: the span from start to end
// (fractions of the recording's time, each from 0 to 1), its end a
// nanosecond short unless it is the last sample's.
func percentTime(start, end float64, first, last uint64) (TimeRange, error) {
	if start < 0 || start > 1 || end < 0 || end > 1 {
		return TimeRange{}, errors.New("percents run from 0 to 100")
	}
	// In doubles, as perf adds them.
	total := float64(last - first)
	r := TimeRange{uint64(float64(first) + math.Round(start*total)), uint64(float64(first) + math.Round(end*total))}
	if r.End > r.Start && r.End != last {
		r.End--
	}
	return r, nil
}

// withTimes returns f with its time slices read for a recording whose
// first and last samples are at first and last (ParseTimes), f itself
// without a time filter.
func (f *Filter) withTimes(first, last uint64) (*Filter, error) {
	if f == nil || f.TimeText == "" {
		return f, nil
	}
	ranges, err := ParseTimes(f.TimeText, first, last)
	if err != nil {
		return nil, err
	}
	g := *f
	g.times = ranges
	return &g, nil
}

// outsideTime reports whether the sample at time t is outside the time
// slices (perf_time__ranges_skip_sample): one slice bounds it where it
// is not open; of several, one must hold it.
func (f *Filter) outsideTime(t uint64) bool {
	if f == nil || t == 0 || len(f.times) == 0 {
		return false
	}
	if len(f.times) == 1 {
		r := f.times[0]
		return r.Start != 0 && t < r.Start || r.End != 0 && t > r.End
	}
	for _, r := range f.times {
		if t >= r.Start && (t <= r.End || r.End == 0) {
			return false
		}
	}
	return true
}

// checkCPUs refuses a CPU filter perf 6.1 refuses, as
// perf_session__cpu_bitmap does before reading a sample: when the first
// attr of any of the generic event types (hardware to breakpoint) does
// not sample the CPU, or a CPU is not below the recording's CPUs
// (HEADER_NRCPUS's nr_cpus_avail, at most 2048; none known yet in a pipe,
// whose features come later: perf refuses every CPU there).
func (f *Filter) checkCPUs(r *perfdata.Reader) error {
	if f == nil || len(f.CPUs) == 0 {
		return nil
	}
	const typeMax = 6 // PERF_TYPE_MAX
	var seen [typeMax]bool
	for i, a := range r.Attrs() {
		if a.Type >= typeMax || seen[a.Type] {
			continue
		}
		seen[a.Type] = true
		if a.SampleType&perfdata.SampleFormatCPU == 0 {
			return fmt.Errorf("attrib: -cpu: the samples of event %q carry no CPU (perf: \"File does not contain CPU events\")", eventNames(r)[i])
		}
	}
	n := min(r.Features().NrCPUsAvail, 2048) // MAX_NR_CPUS
	for _, cpu := range f.CPUs {
		switch {
		case n == 0:
			return fmt.Errorf("attrib: -cpu: the recording does not say how many CPUs it has (HEADER_NRCPUS; a pipe's comes after its samples): perf refuses every CPU (\"Requested CPU %d too large\")", cpu)
		case cpu >= n:
			return fmt.Errorf("attrib: -cpu: CPU %d is not one of the recording's %d (perf: \"Requested CPU %d too large\")", cpu, n, cpu)
		}
	}
	return nil
}

// otherCPU reports whether the sample was taken on a CPU not selected.
func (f *Filter) otherCPU(cpu uint32) bool {
	return f != nil && len(f.CPUs) > 0 && !slices.Contains(f.CPUs, cpu)
}

// filtered reports whether perf marks the sample filtered
// (thread__is_filtered, then machine__resolve's DSO and symbol lists): t
// is its thread, mp its map if found, sym its symbol (start, name) if
// found.
func (f *Filter) filtered(t *machine.Thread, mp index.Map, found bool, kernel bool, sym symbols.Symbol, hasSym bool) bool {
	if f == nil {
		return false
	}
	if len(f.Comms) > 0 && !slices.Contains(f.Comms, t.Comm) ||
		len(f.Pids) > 0 && !slices.Contains(f.Pids, int32(t.Pid)) ||
		len(f.Tids) > 0 && !slices.Contains(f.Tids, int32(t.Tid)) {
		return true
	}
	if len(f.DSOs) > 0 && (!found || !slices.Contains(f.DSOs, ShortName(mp.DSO, kernel)) && !slices.Contains(f.DSOs, mp.DSO)) {
		return true
	}
	if len(f.Syms) > 0 {
		if !hasSym {
			return true
		}
		if !slices.Contains(f.Syms, sym.Name) && !slices.Contains(f.Syms, "0x"+strconv.FormatUint(mp.UnmapIP(sym.Start), 16)) {
			return true
		}
	}
	return false
}
