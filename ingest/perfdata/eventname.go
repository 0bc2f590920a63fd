package perfdata

import (
	"fmt"
	"strings"
)

// Name returns the name perf 6.1 gives an event its recording does not
// name (no EVENT_DESC entry for it): evsel__name's, made from the attr's
// type and config, with the modifiers its exclude and precise_ip bits
// imply ("cycles:u", "raw 0x1cd:ppp"). A tracepoint is "unknown
// tracepoint", as its name needs the tracing data.
func (a *Attr) Name() string {
	const (
		typeHardware = iota
		typeSoftware
		typeTracepoint
		typeHWCache
		typeRaw
		typeBreakpoint
	)
	var name string
	switch a.Type {
	case typeHardware:
		name = tableName(hwNames, a.Config, "unknown-hardware")
	case typeSoftware:
		name = tableName(swNames, a.Config, "unknown-software")
	case typeHWCache:
		name = hwCacheName(a.Config)
	case typeRaw:
		name = fmt.Sprintf("raw %#x", a.Config)
	case typeTracepoint:
		return "unknown tracepoint"
	case typeBreakpoint:
		var b strings.Builder
		fmt.Fprintf(&b, "mem:%#x:", a.Config1) // bp_addr shares config1's place
		for i, c := range "rwx" {
			if a.BPType&(1<<i) != 0 {
				b.WriteRune(c)
			}
		}
		name = b.String()
	default:
		return fmt.Sprintf("unknown attr type: %d", a.Type)
	}
	return name + a.modifiers()
}

// evsel__hw_names and evsel__sw_names of perf 6.1 (its sw table stops
// at dummy: bpf-output and cgroup-switches are unknown-software there).
var (
	hwNames = []string{"cycles", "instructions", "cache-references", "cache-misses", "branches", "branch-misses",
		"bus-cycles", "stalled-cycles-frontend", "stalled-cycles-backend", "ref-cycles"}
	swNames = []string{"cpu-clock", "task-clock", "page-faults", "context-switches", "cpu-migrations",
		"minor-faults", "major-faults", "alignment-faults", "emulation-faults", "dummy"}
)

func tableName(names []string, config uint64, unknown string) string {
	if config < uint64(len(names)) {
		return names[config]
	}
	return unknown
}

// hwCacheName is __evsel__hw_cache_name: type, op and result from the
// config's low three bytes, an op valid for the cache type.
func hwCacheName(config uint64) string {
	caches := []string{"L1-dcache", "L1-icache", "LLC", "dTLB", "iTLB", "branch", "node"}
	// evsel__hw_cache_stat: the ops (read 1, write 2, prefetch 4) each
	// cache has.
	valid := []uint8{7, 5, 7, 7, 1, 1, 7}
	ops := [][2]string{{"load", "loads"}, {"store", "stores"}, {"prefetch", "prefetches"}}
	results := []string{"refs", "misses"}
	typ, op, result := config&0xff, config>>8&0xff, config>>16&0xff
	switch {
	case typ >= uint64(len(caches)):
		return "unknown-ext-hardware-cache-type"
	case op >= uint64(len(ops)):
		return "unknown-ext-hardware-cache-op"
	case result >= uint64(len(results)):
		return "unknown-ext-hardware-cache-result"
	case valid[typ]&(1<<op) == 0:
		return "invalid-cache"
	case result != 0:
		return caches[typ] + "-" + ops[op][0] + "-" + results[result]
	}
	return caches[typ] + "-" + ops[op][1]
}

// modifiers is evsel__add_modifiers: ":" and k, u, h for the contexts
// counted when any is excluded, p per precise_ip level, and H, G for
// host and guest unless exclude_guest is what the others imply.
func (a *Attr) modifiers() string {
	var b strings.Builder
	mod := func(excluded AttrFlags, c byte) {
		if a.Flags&excluded == 0 {
			b.WriteByte(c)
		}
	}
	excludeGuestDefault := false
	if a.Flags&(AttrExcludeKern|AttrExcludeUser|AttrExcludeHV) != 0 {
		mod(AttrExcludeKern, 'k')
		mod(AttrExcludeUser, 'u')
		mod(AttrExcludeHV, 'h')
		excludeGuestDefault = true
	}
	if p := a.Flags >> 15 & 3; p != 0 {
		b.WriteString("ppp"[:p])
		excludeGuestDefault = true
	}
	if a.Flags&AttrExcludeHost != 0 || (a.Flags&AttrExcludeGuest != 0) == excludeGuestDefault {
		mod(AttrExcludeHost, 'H')
		mod(AttrExcludeGuest, 'G')
	}
	if b.Len() == 0 {
		return ""
	}
	return ":" + b.String()
}
