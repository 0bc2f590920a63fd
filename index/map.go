package index

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Mapping says how a map translates an address into an offset in its DSO.
type Mapping uint8

const (
	// MappingDSO translates a to a - Start + Pgoff (perf MAPPING_TYPE__DSO).
	MappingDSO Mapping = iota
	// MappingIdentity translates a to a (perf MAPPING_TYPE__IDENTITY).
	MappingIdentity
)

func (m Mapping) String() string {
	switch m {
	case MappingDSO:
		return "dso"
	case MappingIdentity:
		return "identity"
	}
	return fmt.Sprintf("mapping(%d)", uint8(m))
}

// Kind classifies a map by where it came from.
type Kind uint8

const (
	KindKernel        Kind = iota // the kernel text map (perf's vmlinux_map)
	KindKcore                     // any other piece of a /proc/kcore segment
	KindModule                    // a kernel module from /proc/modules or an MMAP record
	KindModuleSection             // one section of a kernel module (sysfs, KMOD_SEC_MAP)
	KindBPFProg                   // a BPF program (PERF_RECORD_KSYMBOL, bpf_prog_*)
	KindBPFImage                  // a BPF trampoline or dispatcher
	KindOOL                       // out-of-line kernel code (KSYMBOL type OOL)
	KindUser                      // a file-backed user-space mapping
	KindAnon                      // anonymous user memory ([heap], //anon, ...)
	KindKernelSection             // a vmlinux section other than .text (perf's dso__load_vmlinux)
	numKinds
)

var kindNames = [numKinds]string{"kernel", "kcore", "module", "section", "bpf_prog", "bpf_image", "ool", "user", "anon", "kernel_section"}

func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// ParseKind returns the Kind whose String is s.
func ParseKind(s string) (Kind, error) {
	for k, name := range kindNames {
		if name == s {
			return Kind(k), nil
		}
	}
	return 0, fmt.Errorf("unknown map kind %q", s)
}

// Map is one address range of an address space: [Start, End), translated
// to its DSO by Mapping and Pgoff (a byte offset, as in perf).
type Map struct {
	Start, End uint64
	Pgoff      uint64
	Mapping    Mapping
	Kind       Kind
	DSO        string
}

// Size returns End - Start.
func (m Map) Size() uint64 { return m.End - m.Start }

// Contains reports whether Start <= a < End.
func (m Map) Contains(a uint64) bool { return m.Start <= a && a < m.End }

// Overlaps reports whether m and o share at least one address.
func (m Map) Overlaps(o Map) bool { return m.Start < o.End && o.Start < m.End }

// MapIP translates an address into the map's DSO (perf map__map_ip).
func (m Map) MapIP(a uint64) uint64 {
	if m.Mapping == MappingIdentity {
		return a
	}
	return a - m.Start + m.Pgoff
}

// UnmapIP is the inverse of MapIP (perf map__unmap_ip).
func (m Map) UnmapIP(rip uint64) uint64 {
	if m.Mapping == MappingIdentity {
		return rip
	}
	return rip + m.Start - m.Pgoff
}

// Slice returns the piece [start, end) of m with its pgoff adjusted so that
// MapIP stays continuous across the cut. start and end must lie in m.
func (m Map) Slice(start, end uint64) Map {
	p := m
	p.Pgoff = m.Pgoff + (start - m.Start)
	p.Start, p.End = start, end
	return p
}

// String is the canonical one-line form "start-end pgoff mapping kind dso",
// hex without 0x, like perf's maps dump.
func (m Map) String() string {
	return fmt.Sprintf("%x-%x %x %s %s %s", m.Start, m.End, m.Pgoff, m.Mapping, m.Kind, m.DSO)
}

// Validate reports an error for a map that may not be stored: end before
// start or an empty range.
func (m Map) Validate() error {
	if m.End < m.Start {
		return fmt.Errorf("map %s: end %#x before start %#x", m.DSO, m.End, m.Start)
	}
	if m.End == m.Start {
		return fmt.Errorf("map %s: empty range at %#x", m.DSO, m.Start)
	}
	return nil
}

// Canonical returns the canonical text of maps in the given order: one
// Map.String line each, newline-terminated.
func Canonical(maps []Map) string {
	var b strings.Builder
	for _, m := range maps {
		b.WriteString(m.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// Digest returns the hex SHA-256 of a canonical text.
func Digest(canonical string) string {
	sum := sha256.Sum256([]byte(canonical))
	return hex.EncodeToString(sum[:])
}
