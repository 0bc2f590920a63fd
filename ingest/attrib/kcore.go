package attrib

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/kcore"
	"github.com/kmapindex/kmapindex/ingest/machine"
	"github.com/kmapindex/kmapindex/ingest/modules"
	"github.com/kmapindex/kmapindex/ingest/symbols"
)

// kcoreFiles are the files perf reads beside a kallsyms file named
// "kallsyms" when it loads the kernel (filename_from_kallsyms_filename):
// "kcore" and "modules" in the same directory.
type kcoreFiles struct {
	kcore, modules string
}

// kcoreBeside returns the kcore files of the kallsyms file at path, or
// nil when its base name is not "kallsyms" (perf then never tries kcore).
func kcoreBeside(path string) *kcoreFiles {
	if path == "" || filepath.Base(path) != "kallsyms" {
		return nil
	}
	dir := filepath.Dir(path)
	return &kcoreFiles{kcore: filepath.Join(dir, "kcore"), modules: filepath.Join(dir, "modules")}
}

// loadKcore is perf 6.1's kcore attempt in __dso__load_kallsyms
// (dso__load_kcore, then maps__split_kallsyms_for_kcore), run when the
// kernel map is loaded: it validates the recording against the files
// (validate_kcore_addresses: the kernel MMAP's reference symbol has the
// same address in kallsyms, and every module map starts where "modules"
// says), reads kcore's readable PT_LOAD segments, rebuilds the kernel maps
// from them and returns the kernel DSO's symbol table. On any failure it
// returns nil and why; perf then uses kallsyms alone, and so does the
// caller. An error is returned only when kcore was valid for perf but its
// segments cannot be indexed consistently.
func (f *kcoreFiles) load(m *machine.Machine, syms []kallsyms.Symbol) (*symbols.Table, string, error) {
	if name := m.RefRelocName; name != "" {
		addr, ok := kallsyms.FunctionStart(syms, name)
		if !ok {
			return nil, fmt.Sprintf("reference symbol %s not in kallsyms", name), nil
		}
		if addr != m.RefRelocAddr {
			return nil, fmt.Sprintf("reference symbol %s at %#x in kallsyms, %#x in the recording", name, addr, m.RefRelocAddr), nil
		}
	}
	mods, err := modules.ReadFile(f.modules)
	if err != nil {
		return nil, err.Error(), nil
	}
	starts := make(map[string]uint64, len(mods))
	for _, mod := range mods {
		if _, dup := starts[mod.Name]; !dup {
			starts[mod.Name] = mod.Start
		}
	}
	for _, mp := range m.Kernel().Slice() {
		if !m.IsKmodule(mp) {
			continue
		}
		name := moduleName(mp.DSO)
		if start, ok := starts[name]; !ok || start != mp.Start {
			return nil, fmt.Sprintf("module map %s at %#x not in %s at that address", mp.DSO, mp.Start, f.modules), nil
		}
	}
	segs, err := readKcoreELF(f.kcore)
	if err != nil {
		return nil, err.Error(), nil
	}
	if len(segs) == 0 {
		return nil, f.kcore + ": no readable PT_LOAD segment", nil
	}
	if err := m.LoadKcore(segs, kallsyms.Landmarks(syms)); err != nil {
		return nil, "", fmt.Errorf("%s: %w", f.kcore, err)
	}
	return symbols.Kcore(syms, m.Kernel().Find), "", nil
}

// readKcoreELF reads the segments perf maps from a kcore file: it must be
// ELF (file__read_maps opens it with libelf); readable PT_LOAD segments
// in file order (elf_read_maps with exe false: perf 6.1's kernel map has
// no PROT_EXEC).
func readKcoreELF(path string) ([]index.Segment, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	ef, err := kcore.ReadELF(fh)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return kcore.Segments(ef.Progs, false), nil
}
