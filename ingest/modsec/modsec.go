// Package modsec builds the section maps of loaded kernel modules, as the
// KMOD_SEC_MAP RFC (perf-maps-semantics.md §3.10, §4.1 patch 4/4) does on
// the recording side.
//
// A module's .ko file is ET_REL: it has no program headers and every
// sh_addr is 0, so the file alone cannot say where the kernel put its
// sections. The kernel publishes each loaded section's address in
// /sys/module/NAME/sections/SEC; the .ko's section header gives its size
// and file offset. For every SHF_ALLOC section with a sysfs address and a
// non-zero size, except ".init*" sections:
//
//   - ".text" narrows the module map (from /proc/modules) to
//     [start, start + .text sh_size) with pgoff = .text sh_offset, dso
//     "[name]", and gets no map of its own;
//   - every other section becomes a section map [addr, addr + sh_size),
//     pgoff sh_offset, dso "[ko]SEC", e.g. "[kvm-amd].noinstr.text".
//
// ".init*" sections are skipped because the kernel frees them after the
// module's init function returns and may reuse their addresses for other
// modules (the RFC's stated reason). ".exit*" sections are kept when sysfs
// lists them: the RFC skips only ".init*", and a kernel with
// CONFIG_MODULE_UNLOAD loads .exit sections with the module's core and
// keeps them until unload, while a kernel without it does not load them
// at all, so they have no sysfs entry and are skipped by that rule.
//
// Two names are in play: /proc/modules and /sys/module use the kernel's
// module name, in which '-' is '_' ("kvm_amd"), while the section DSO names
// take the .ko basename as is ("kvm-amd"), as the RFC's parser does. The
// module map keeps its /proc/modules name, "[kvm_amd]".
package modsec

import (
	"bufio"
	"debug/elf"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/kmodsec"
	"github.com/kmapindex/kmapindex/internal/regular"
)

// Section is one section header of a module's .ko file.
type Section struct {
	Name   string
	Size   uint64 // sh_size
	Offset uint64 // sh_offset: where the section's bytes are in the file
	Flags  elf.SectionFlag
	Type   elf.SectionType
}

// KernelName returns the kernel's name for a module: its .ko basename up
// to ".ko" with every '-' replaced by '_' (so "kvm-amd.ko" is "kvm_amd",
// the name in /proc/modules and /sys/module).
func KernelName(koPath string) (string, error) {
	name, err := kmodsec.ModuleName("/" + path.Base(koPath))
	if err != nil {
		return "", fmt.Errorf("modsec: %q is not a module file name", koPath)
	}
	return strings.ReplaceAll(name, "-", "_"), nil
}

// SysfsDir returns the sysfs directory holding a module's section
// addresses, relative to the file system root: "sys/module/NAME/sections",
// with NAME in the kernel's spelling ('_' for '-').
func SysfsDir(module string) string {
	return "sys/module/" + strings.ReplaceAll(module, "-", "_") + "/sections"
}

// maxAddrFile bounds the bytes read from one sysfs section file; the
// kernel writes "0x" and 16 hex digits and a newline.
const maxAddrFile = 256

// ReadSysfs reads the section addresses of one module from dir, a
// /sys/module/NAME/sections directory of fsys (for example
// SysfsDir(name) of os.DirFS("/")): one file per section, named after it
// (".text", ".noinstr.text", "__mcount_loc", ...), each holding the load
// address as "0x" and hexadecimal digits. Subdirectories are ignored.
// Under kptr_restrict the kernel shows every address as 0; ReadSysfs
// returns such zeros as they are.
func ReadSysfs(fsys fs.FS, dir string) (map[string]uint64, error) {
	ents, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("modsec: reading section addresses: %w", err)
	}
	addrs := make(map[string]uint64, len(ents))
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		name := path.Join(dir, e.Name())
		a, err := readAddr(fsys, name)
		if err != nil {
			return nil, err
		}
		addrs[e.Name()] = a
	}
	return addrs, nil
}

func readAddr(fsys fs.FS, name string) (uint64, error) {
	f, err := regular.OpenFS(fsys, name)
	if err != nil {
		return 0, fmt.Errorf("modsec: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(bufio.NewReader(f), maxAddrFile+1))
	if err != nil {
		return 0, fmt.Errorf("modsec: reading %s: %w", name, err)
	}
	if len(b) > maxAddrFile {
		return 0, fmt.Errorf("modsec: %s: more than %d bytes, not a section address", name, maxAddrFile)
	}
	s := strings.TrimSpace(string(b))
	hex, ok := strings.CutPrefix(s, "0x")
	if !ok {
		return 0, fmt.Errorf("modsec: %s: %q is not a 0x-prefixed address", name, s)
	}
	a, err := strconv.ParseUint(hex, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("modsec: %s: bad address %q: %w", name, s, err)
	}
	return a, nil
}

// ReadELFSections returns the section headers of a module file, in file
// order (the null section at index 0 included). The file must be ET_REL,
// as every .ko is; any other type is an error naming it.
func ReadELFSections(r io.ReaderAt) ([]Section, error) {
	f, err := elf.NewFile(r)
	if err != nil {
		return nil, fmt.Errorf("modsec: reading module ELF: %w", err)
	}
	if f.Type != elf.ET_REL {
		return nil, fmt.Errorf("modsec: ELF type at file offset 0x10 (e_type) is %v, want ET_REL (a kernel module object)", f.Type)
	}
	secs := make([]Section, 0, len(f.Sections))
	for _, s := range f.Sections {
		secs = append(secs, Section{Name: s.Name, Size: s.Size, Offset: s.Offset, Flags: s.Flags, Type: s.Type})
	}
	return secs, nil
}

// Placed is a section chosen for a map, with its load address.
type Placed struct {
	Section
	Addr uint64
}

// Select returns the sections of secs that get a section map, in file
// order: SHF_ALLOC, non-zero size, not ".text", not ".init*", and with a
// non-zero address in sysfs. A name that occurs twice in secs is taken
// once, at its first occurrence (sysfs has one file per name). The second
// result is the ".text" section, if it qualifies the same way (".text"
// needs no sysfs address: the module map supplies it).
func Select(sysfs map[string]uint64, secs []Section) (placed []Placed, text *Section) {
	seen := make(map[string]bool)
	for i := range secs {
		s := &secs[i]
		if s.Flags&elf.SHF_ALLOC == 0 || s.Size == 0 || seen[s.Name] {
			continue
		}
		seen[s.Name] = true
		if s.Name == ".text" {
			text = s
			continue
		}
		if strings.HasPrefix(s.Name, ".init") {
			continue
		}
		if a := sysfs[s.Name]; a != 0 {
			placed = append(placed, Placed{Section: *s, Addr: a})
		}
	}
	return placed, text
}

// Build returns a loaded module's maps: the module map, narrowed to its
// .text, and one section map per other placed section (see the package
// doc), in .ko file order. module is the module's /proc/modules line;
// koPath, its .ko file, must name the same module (its KernelName must be
// module.Name); its basename up to ".ko" names the section DSOs. Without a .text
// section the module map is left as /proc/modules gives it.
func Build(module index.Module, sysfs map[string]uint64, secs []Section, koPath string) (moduleMap index.Map, sectionMaps []index.Map, err error) {
	recs, text, err := records(module, sysfs, secs, koPath)
	if err != nil {
		return index.Map{}, nil, err
	}
	moduleMap = index.Map{
		Start:   module.Start,
		End:     module.Start + module.Size,
		Mapping: index.MappingDSO,
		Kind:    index.KindModule,
		DSO:     "[" + module.Name + "]",
	}
	if text != nil {
		moduleMap.End = module.Start + text.Size
		moduleMap.Pgoff = text.Offset
	}
	if err := moduleMap.Validate(); err != nil {
		return index.Map{}, nil, fmt.Errorf("modsec: module %s: %w", module.Name, err)
	}
	base, _ := kmodsec.ModuleName("/" + path.Base(koPath)) // checked by records
	for _, r := range recs {
		m := r.Map()
		m.DSO = "[" + base + "]" + r.Section
		sectionMaps = append(sectionMaps, m)
	}
	return moduleMap, sectionMaps, nil
}

// Records returns the KMOD_SEC_MAP records the RFC synthesises for a
// loaded module, one per section map of Build, in the same order: host pid
// -1, misc PERF_RECORD_MISC_KERNEL, path koPath (which must contain a '/'
// and end in a .ko name, as the RFC's parser requires).
func Records(module index.Module, sysfs map[string]uint64, secs []Section, koPath string) ([]kmodsec.Record, error) {
	if _, err := kmodsec.ModuleName(koPath); err != nil {
		return nil, fmt.Errorf("modsec: module %s: %w", module.Name, err)
	}
	recs, _, err := records(module, sysfs, secs, koPath)
	return recs, err
}

func records(module index.Module, sysfs map[string]uint64, secs []Section, koPath string) ([]kmodsec.Record, *Section, error) {
	kname, err := KernelName(koPath)
	if err != nil {
		return nil, nil, err
	}
	if kname != module.Name {
		return nil, nil, fmt.Errorf("modsec: %s is module %q, not %q", koPath, kname, module.Name)
	}
	placed, text := Select(sysfs, secs)
	recs := make([]kmodsec.Record, 0, len(placed))
	for _, p := range placed {
		if p.Addr+p.Size < p.Addr {
			return nil, nil, fmt.Errorf("modsec: module %s section %s: [%#x, +%#x) wraps around", module.Name, p.Name, p.Addr, p.Size)
		}
		recs = append(recs, kmodsec.Record{
			Misc:    kmodsec.MiscKernel,
			Pid:     -1,
			Start:   p.Addr,
			Len:     p.Size,
			Pgoff:   p.Offset,
			Section: p.Name,
			Path:    koPath,
		})
	}
	return recs, text, nil
}
