package symbols

import (
	"debug/elf"
	"encoding/hex"
	"strings"

	"github.com/kmapindex/kmapindex/internal/regular"
)

// SymbolCandidates lists the files perf 6.1's dso__load tries for the
// symbols of the user-space DSO at path (its long name), in
// binary_type_symtab's order, as dso__read_binary_type_filename names
// them below the --symfs directory symfs ("" for none):
//
//   - DEBUGLINK: the file its .gnu_debuglink names (DebuglinkFile of
//     symfs+path), when one exists;
//   - BUILD_ID_CACHE and BUILD_ID_CACHE_DEBUGINFO: cache(id, "elf") and
//     cache(id, "debug"), the build-id cache's entries, when the DSO has
//     a build id and cache is not nil;
//   - FEDORA_DEBUGINFO: symfs/usr/lib/debug + path + ".debug";
//   - UBUNTU_DEBUGINFO: symfs/usr/lib/debug + path;
//   - BUILDID_DEBUGINFO: symfs/usr/lib/debug/.build-id/xx/rest.debug, by
//     the build id;
//   - SYSTEM_PATH_DSO: symfs + path;
//   - OPENEMBEDDED_DEBUGINFO: symfs + path's directory + "/.debug/" + its
//     base name;
//   - MIXEDUP_UBUNTU_DEBUGINFO: symfs/usr/lib/debug + path less its
//     "/usr", for a path in /usr/lib/.
func SymbolCandidates(path, symfs string, id []byte, cache func(id []byte, entry string) string) []string {
	var out []string
	if f := DebuglinkFile(symfs + path); f != "" {
		out = append(out, f)
	}
	if len(id) > 0 && cache != nil {
		out = append(out, cache(id, "elf"), cache(id, "debug"))
	}
	out = append(out, symfs+debugRoot+path+".debug", symfs+debugRoot+path)
	if len(id) > 0 {
		h := hex.EncodeToString(id)
		out = append(out, symfs+debugRoot+"/.build-id/"+h[:2]+"/"+h[2:]+".debug")
	}
	out = append(out, symfs+path)
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		out = append(out, symfs+path[:i]+"/.debug"+path[i:])
	}
	if strings.HasPrefix(path, "/usr/lib/") {
		out = append(out, symfs+debugRoot+path[len("/usr"):])
	}
	return out
}

// DebuglinkFile is perf 6.1's DEBUGLINK candidate for the file at path:
// the name its .gnu_debuglink section starts with
// (filename__read_debuglink), looked for in the working directory, in
// path's directory, in its .debug subdirectory and below /usr/lib/debug
// + that directory (debuglink_paths); the first regular file, or "".
func DebuglinkFile(path string) string {
	if !regular.Is(path) {
		return ""
	}
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	s := f.Section(".gnu_debuglink")
	if s == nil {
		return ""
	}
	data, err := s.Data()
	if err != nil {
		return ""
	}
	name := cstring(string(data), 0)
	dir := path[:max(strings.LastIndexByte(path, '/'), 0)]
	for _, c := range []string{name, dir + "/" + name, dir + "/.debug/" + name, debugRoot + dir + "/" + name} {
		if regular.Is(c) {
			return c
		}
	}
	return ""
}

// SymbolSources returns the files perf 6.1's dso__load reads a user-space
// DSO's symbols from, among its candidates cands in order
// (SymbolCandidates): syms, the first that symsrc__init accepts (a
// regular ELF file carrying build id id, when id is not empty: perf's
// elf_read_build_id, zero padding aside) with a .symtab of type
// SHT_SYMTAB, and runtime, the first accepted with a .dynsym of type
// SHT_DYNSYM or an .opd of type SHT_PROGBITS; each stands in for the
// other when no candidate has it. ok is false when none has either, and
// perf leaves the DSO without symbols. ELFWithDebug(runtime, syms) builds
// the table.
func SymbolSources(cands []string, id []byte) (runtime, syms string, ok bool) {
	for _, c := range cands {
		symtab, dynamic := probeSymsrc(c, id)
		if syms == "" && symtab {
			syms = c
		}
		if runtime == "" && dynamic {
			runtime = c
		}
		if syms != "" && runtime != "" {
			break
		}
	}
	switch {
	case syms == "" && runtime == "":
		return "", "", false
	case syms == "":
		syms = runtime
	case runtime == "":
		runtime = syms
	}
	return runtime, syms, true
}

// probeSymsrc is symsrc__init on the file at path for a DSO of build id
// id: whether perf takes it and finds a symbol table (symtab) or a
// runtime one (dynamic) in it. A file perf refuses has neither.
func probeSymsrc(path string, id []byte) (symtab, dynamic bool) {
	if !regular.Is(path) {
		return false, false
	}
	f, err := elf.Open(path)
	if err != nil {
		return false, false
	}
	defer f.Close()
	if len(id) > 0 && !SameBuildID(id, BuildID(f)) {
		return false, false
	}
	has := func(name string, typ elf.SectionType) bool {
		s := f.Section(name)
		return s != nil && s.Type == typ
	}
	return has(".symtab", elf.SHT_SYMTAB), has(".dynsym", elf.SHT_DYNSYM) || has(".opd", elf.SHT_PROGBITS)
}
