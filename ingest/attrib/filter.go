package attrib

import (
	"fmt"
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
	// TimeStart and TimeEnd bound the sample time in nanoseconds, both
	// included (--time start,end; 0: open). Samples without a time pass.
	TimeStart, TimeEnd uint64
	TimeText           string   // the --time argument as given, which perf's table header repeats
	DSOs               []string // --dsos: the map's DSO, by short or long name
	Syms               []string // --symbols: the symbol's name or "0x" and its start address
}

// ParseTime parses perf's --time argument "start,end" (either side may be
// empty; each seconds with up to nine decimals, as parse_nsec_time reads
// them) into nanoseconds.
func ParseTime(s string) (start, end uint64, err error) {
	lo, hi, ok := strings.Cut(s, ",")
	if !ok {
		return 0, 0, fmt.Errorf("time %q: want start,end", s)
	}
	if start, err = parseNsec(lo); err == nil {
		end, err = parseNsec(hi)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("time %q: %w", s, err)
	}
	return start, end, nil
}

// parseNsec is perf's parse_nsec_time ("" is 0).
func parseNsec(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	sec, frac, _ := strings.Cut(s, ".")
	n, err := strconv.ParseUint(sec, 10, 64)
	if err != nil || len(frac) > 9 {
		return 0, fmt.Errorf("bad time %q", s)
	}
	var ns uint64
	if frac != "" {
		if ns, err = strconv.ParseUint(frac+strings.Repeat("0", 9-len(frac)), 10, 64); err != nil {
			return 0, fmt.Errorf("bad time %q", s)
		}
	}
	return n*1e9 + ns, nil
}

// outsideTime reports whether the sample is outside the time range
// (perf_time__skip_sample).
func (f *Filter) outsideTime(t uint64) bool {
	return f != nil && t != 0 && (f.TimeStart != 0 && t < f.TimeStart || f.TimeEnd != 0 && t > f.TimeEnd)
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
