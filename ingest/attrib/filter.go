package attrib

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/machine"
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
