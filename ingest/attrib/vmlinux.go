package attrib

import (
	"fmt"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/machine"
	"github.com/kmapindex/kmapindex/ingest/symbols"
)

// VmlinuxPath returns perf 6.1's vmlinux_path (vmlinux_path__init) for a
// recording of kernel release osRelease (its HEADER_OSRELEASE: perf
// report and perf script pass the recording's env) read with --symfs
// symfs: "vmlinux", below symfs or else in the working directory, and
// "/boot/vmlinux"; then, without a symfs, /boot/vmlinux-R,
// /usr/lib/debug/boot/vmlinux-R, /lib/modules/R/build/vmlinux,
// /usr/lib/debug/lib/modules/R/vmlinux and
// /usr/lib/debug/boot/vmlinux-R.debug. A recording without a release
// gives R = "(null)", as perf's printf does.
func VmlinuxPath(osRelease, symfs string) []string {
	local := "vmlinux"
	if symfs != "" {
		local = symfs + "/vmlinux" // __symbol__join_symfs
	}
	path := []string{local, "/boot/vmlinux"}
	if symfs != "" {
		return path
	}
	r := osRelease
	if r == "" {
		r = "(null)"
	}
	return append(path,
		"/boot/vmlinux-"+r,
		"/usr/lib/debug/boot/vmlinux-"+r,
		"/lib/modules/"+r+"/build/vmlinux",
		"/usr/lib/debug/lib/modules/"+r+"/vmlinux",
		"/usr/lib/debug/boot/vmlinux-"+r+".debug")
}

// vmlinuxCandidates lists the files dso__load_kernel_sym tries as a
// vmlinux for a kernel DSO with build id id (none: nil), in its order:
// Options.Vmlinux alone when set; else the build-id cache's ELF entry,
// the vmlinux path, and the cache's kallsyms entry that
// dso__load_vmlinux_path tries last (buildIDCacheEntry).
func vmlinuxCandidates(only string, path []string, debugDir string, id []byte) []string {
	if only != "" {
		return []string{only}
	}
	if path == nil {
		return nil
	}
	cache := func(base string) []string {
		if len(id) == 0 || debugDir == "" {
			return nil
		}
		return []string{buildIDCacheEntry(debugDir, id, base)}
	}
	out := append(cache("elf"), path...)
	if len(path) > 0 {
		out = append(out, cache("kallsyms")...)
	}
	return out
}

// loadVmlinux is dso__load_kernel_sym's vmlinux steps: the first
// candidate symbols.ReadVmlinux takes, with the kernel DSO's build id and
// the recording's reference symbol, gives the kernel's symbols, and the
// kernel maps change as perf changes them (machine.LoadVmlinux). It
// reports whether the kernel's symbols are settled: a vmlinux was used,
// or Options.Vmlinux was given (perf then uses nothing else, and warns
// when it cannot be used).
func (s *symbolizer) loadVmlinux(m *machine.Machine) bool {
	if s.vmlinuxUsed != "" {
		return true // the DSO is loaded: perf moves no later kernel map
	}
	id := s.kernelMmapBuildID
	if id == nil {
		id = s.buildIDs[m.KernelDSO()]
	}
	for _, cand := range vmlinuxCandidates(s.vmlinuxOnly, s.vmlinuxPath, s.debugDir, id) {
		v, err := symbols.ReadVmlinux(cand, id, m.RefRelocName, m.RefRelocAddr)
		if err != nil || v.Symbols == 0 {
			if s.vmlinuxOnly != "" {
				if err == nil {
					err = fmt.Errorf("%s: no kernel symbols in it", cand)
				}
				s.vmlinuxNote = err.Error()
			}
			continue
		}
		s.useVmlinux(m, cand, v)
		return true
	}
	if s.vmlinuxOnly != "" {
		s.kernel = &symbols.KernelTables{Kernel: new(symbols.Table), Modules: map[string]*symbols.Table{}}
		return true
	}
	return false
}

// useVmlinux makes the vmlinux v read from file the kernel's symbols: the
// kernel map moves to its .text, each other section with symbols gets a
// map named by the kernel DSO's short name and the section's
// (dso__process_kernel_symbol: "[kernel.kallsyms].init.text"), and the
// modules get no symbols from it.
func (s *symbolizer) useVmlinux(m *machine.Machine, file string, v *symbols.Vmlinux) {
	kdso := m.KernelDSO()
	var text *index.Map
	kernel := new(symbols.Table)
	if v.Text != nil {
		start := v.Text.Addr + v.Reloc
		text = &index.Map{Start: start, End: start + v.Text.Size, Pgoff: v.Text.Offset, Mapping: index.MappingDSO, Kind: index.KindKernel, DSO: kdso}
		kernel = v.Text.Table
	}
	short := ShortName(kdso, true)
	sections := make([]index.Map, len(v.Sections))
	for i, sec := range v.Sections {
		start := sec.Addr + v.Reloc
		sections[i] = index.Map{Start: start, End: start + sec.Size, Pgoff: sec.Offset, Mapping: index.MappingDSO, Kind: index.KindKernelSection, DSO: short + sec.Name}
		s.kernelSections[sections[i].DSO] = sec.Table
	}
	if err := m.LoadVmlinux(text, sections); err != nil && s.mapsErr == nil {
		s.mapsErr = fmt.Errorf("vmlinux %s: %w", file, err)
	}
	s.kernel = &symbols.KernelTables{Kernel: kernel, Modules: map[string]*symbols.Table{}}
	s.vmlinuxUsed = file
}
