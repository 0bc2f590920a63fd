package index

import "strings"

// KmodName is perf's kmod_path__parse_name (dso.c, v6.1) of a kernel
// map's filename: the short DSO name perf gives it and whether it names a
// kernel module. A bracketed name ("[nf_tables]") is kept as it is and is
// a module unless it is the kernel's or a vdso/vsyscall name; a path
// whose last dot, after stripping a .gz or .xz suffix, starts ".ko" in its
// base name is a module named "[base]", '-' written '_'; any other path
// is its base name, '-' written '_', and no module.
func KmodName(path string) (name string, kmod bool) {
	name, kmod, _ = kmodPath(path)
	return name, kmod
}

// KmodCompression is the compression perf 6.1 reads a module file with,
// by the module DSO's file name: "gz" or "xz" for a module path ending
// ".ko.gz" or ".ko.xz" (kmod_path__parse's kmod and comp, which make the
// DSO's symtab type _KMODULE_COMP); "" otherwise.
func KmodCompression(path string) string {
	_, kmod, comp := kmodPath(path)
	if !kmod {
		return ""
	}
	return comp
}

// kmodPath is kmod_path__parse: KmodName's answers and the compression
// suffix stripped ("gz", "xz" or "").
func kmodPath(path string) (name string, kmod bool, comp string) {
	base := path[strings.LastIndexByte(path, '/')+1:]
	if strings.HasPrefix(base, "[") {
		for _, k := range []string{KernelDSO, "[guest.kernel.kallsyms", "[vdso]", "[vdso32]", "[vdsox32]", "[vsyscall]"} {
			if strings.HasPrefix(base, k) {
				return base, false, ""
			}
		}
		return base, true, ""
	}
	ext := strings.LastIndexByte(path, '.')
	if ext < 0 {
		return base, false, ""
	}
	if c := path[ext+1:]; c == "gz" || c == "xz" { // perf 6.1's compressions
		comp = c
		ext -= 3
	}
	start := len(path) - len(base)
	if ext > start && strings.HasPrefix(path[ext:], ".ko") {
		return "[" + strings.ReplaceAll(path[start:ext], "-", "_") + "]", true, comp
	}
	return strings.ReplaceAll(base, "-", "_"), false, comp
}

// ModuleName is perf's module name of a module map's DSO, without the
// brackets: "[name]" as is, a .ko path's base name with '-' as '_'
// (KmodName).
func ModuleName(dso string) string {
	short, _ := KmodName(dso)
	return strings.TrimSuffix(strings.TrimPrefix(short, "["), "]")
}
