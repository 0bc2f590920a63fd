package symbols

import (
	"debug/elf"
	"errors"
	"fmt"
)

// Section returns the symbols of one section of a relocatable object (a
// kernel module's .ko file), keyed by file offset: st_value plus the
// section's sh_offset, which is what index.Map.MapIP gives for the
// section's map (KMOD_SEC_MAP maps have pgoff = sh_offset). This is how
// the KMOD_SEC_MAP proposal resolves samples in a module's non-.text
// sections: the module's symbols filtered by section name. Function,
// object and untyped named symbols are kept; sizes and duplicates are
// fixed up as for any DSO (Build). Errors are *FileError values naming the
// file, with debug/elf's error reachable through errors.As.
func Section(path, section string) (*Table, error) {
	f, err := openELF(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var sec *elf.Section
	idx := -1
	for i, s := range f.Sections {
		if s.Name == section {
			sec, idx = s, i
			break
		}
	}
	if sec == nil {
		return nil, &FileError{File: path, Err: fmt.Errorf("no section %s", section)}
	}
	syms, err := f.Symbols()
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		return nil, &FileError{File: path, Err: err}
	}
	var out []Symbol
	for _, s := range syms {
		switch elf.ST_TYPE(s.Info) {
		case elf.STT_FUNC, elf.STT_OBJECT, elf.STT_NOTYPE, elf.STT_GNU_IFUNC:
		default:
			continue
		}
		if int(s.Section) != idx || s.Name == "" || s.Value > sec.Size {
			continue
		}
		start := sec.Offset + s.Value
		out = append(out, Symbol{Start: start, End: start + s.Size, Name: s.Name})
	}
	return Build(out), nil
}
