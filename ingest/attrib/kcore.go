package attrib

import (
	"fmt"
	"path/filepath"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/kcore"
	"github.com/kmapindex/kmapindex/ingest/machine"
	"github.com/kmapindex/kmapindex/ingest/modules"
	"github.com/kmapindex/kmapindex/ingest/symbols"
	"github.com/kmapindex/kmapindex/internal/regular"
)

// Kcore is what perf reads beside a kallsyms file named "kallsyms" when it
// loads the kernel (filename_from_kallsyms_filename): the readable
// PT_LOAD segments of "kcore" and the "modules" list. An error in either
// makes perf, and Run, use kallsyms alone.
type Kcore struct {
	Source      string // the kcore file, for messages
	Segments    []index.Segment
	SegmentsErr error
	Modules     []index.Module
	ModulesErr  error
}

// KcoreBeside returns the kcore files of the kallsyms file at path, read
// when first needed, or nil when its base name is not "kallsyms" (perf
// then never tries kcore).
func KcoreBeside(path string) func() *Kcore {
	dir, ok := kcoreDir(path)
	if !ok {
		return nil
	}
	return func() *Kcore {
		k := &Kcore{Source: filepath.Join(dir, "kcore")}
		k.Segments, k.SegmentsErr = readKcoreELF(k.Source)
		k.Modules, k.ModulesErr = modules.ReadFile(filepath.Join(dir, "modules"))
		return k
	}
}

// kcoreDir is filename_from_kallsyms_filename's rule: the directory where
// perf looks for "kcore" and "modules" beside the kallsyms file at path,
// which must be named "kallsyms" (else perf never tries kcore).
func kcoreDir(path string) (dir string, ok bool) {
	if path == "" || filepath.Base(path) != "kallsyms" {
		return "", false
	}
	return filepath.Dir(path), true
}

// kcoreFileBeside reports whether the kallsyms file at path has a
// readable kcore file beside it that KcoreBeside would read: whether perf
// will likely use kcore (/proc/kcore is there for every user, readable by
// root only).
func kcoreFileBeside(path string) bool {
	dir, ok := kcoreDir(path)
	if !ok {
		return false
	}
	f, err := regular.Open(filepath.Join(dir, "kcore"))
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// load is perf 6.1's kcore attempt in __dso__load_kallsyms
// (dso__load_kcore, then maps__split_kallsyms_for_kcore), run when the
// kernel map is loaded: it validates the recording against the files
// (validate_kcore_addresses: the kernel MMAP's reference symbol has the
// same address in kallsyms, and every module map perf holds, one that
// others overlap too, starts where "modules" says), rebuilds the kernel
// maps from kcore's segments and returns the kernel DSO's symbol table.
// On any failure it returns nil and why; perf then uses kallsyms alone,
// and so does the caller. An error is returned only when kcore was valid
// for perf but its segments cannot be indexed consistently.
func (k *Kcore) load(m *machine.Machine, syms *kallsyms.List) (*symbols.Table, string, error) {
	if name := m.RefRelocName; name != "" {
		addr, ok := syms.FunctionStart(name)
		if !ok {
			return nil, fmt.Sprintf("reference symbol %s not in kallsyms", name), nil
		}
		if addr != m.RefRelocAddr {
			return nil, fmt.Sprintf("reference symbol %s at %#x in kallsyms, %#x in the recording", name, addr, m.RefRelocAddr), nil
		}
	}
	if k.ModulesErr != nil {
		return nil, k.ModulesErr.Error(), nil
	}
	starts := make(map[string]uint64, len(k.Modules))
	for _, mod := range k.Modules {
		if _, dup := starts[mod.Name]; !dup {
			starts[mod.Name] = mod.Start
		}
	}
	for mp := range m.AllKernelMaps() {
		if !m.IsKmodule(mp) {
			continue
		}
		if start, ok := starts[index.ModuleName(mp.DSO)]; !ok || start != mp.Start {
			return nil, fmt.Sprintf("module map %s at %#x not in modules at that address", mp.DSO, mp.Start), nil
		}
	}
	if k.SegmentsErr != nil {
		return nil, k.SegmentsErr.Error(), nil
	}
	if len(k.Segments) == 0 {
		return nil, k.Source + ": no readable PT_LOAD segment", nil
	}
	if err := m.LoadKcore(k.Segments, syms.Landmarks()); err != nil {
		return nil, "", fmt.Errorf("%s: %w", k.Source, err)
	}
	return symbols.Kcore(syms, m.Kernel().Find), "", nil
}

// readKcoreELF reads the segments perf maps from a kcore file: it must be
// ELF (file__read_maps opens it with libelf); readable PT_LOAD segments
// in file order (elf_read_maps with exe false: perf 6.1's kernel map has
// no PROT_EXEC).
func readKcoreELF(path string) ([]index.Segment, error) {
	fh, err := regular.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	ef, err := kcore.ReadELF(fh)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return kcore.Segments(ef.Progs, false), nil
}
