package index

import (
	"strings"
	"testing"
)

func TestKmodName(t *testing.T) {
	for _, tc := range []struct {
		path, name string
		kmod       bool
		comp       string // KmodCompression's
	}{
		{"[nf_tables]", "[nf_tables]", true, ""},
		{"[aaa.bbb]", "[aaa.bbb]", true, ""},
		{"[kernel.kallsyms]", "[kernel.kallsyms]", false, ""},
		{"[kernel.kallsyms]_text", "[kernel.kallsyms]_text", false, ""},
		{"[vdso]", "[vdso]", false, ""},
		{"/lib/modules/6.1.0-18-amd64/kernel/net/netfilter/nf_tables.ko", "[nf_tables]", true, ""},
		{"/lib/modules/6.1/kernel/drivers/kvm-amd.ko.xz", "[kvm_amd]", true, "xz"},
		{"/lib/modules/6.1/kernel/drivers/kvm-amd.ko.gz", "[kvm_amd]", true, "gz"},
		{"/lib/modules/6.1/kernel/drivers/kvm-amd.ko.zst", "kvm_amd.ko.zst", false, ""},
		{"/lib/modules/6.1/kernel/drivers/notes.gz", "notes.gz", false, ""},
		{"/lib/modules/6.1.0-18/build/vmlinux", "vmlinux", false, ""},
		{"/usr/lib/debug/vmlinux-6.1", "vmlinux_6.1", false, ""},
		{"noext", "noext", false, ""},
	} {
		if name, kmod := KmodName(tc.path); name != tc.name || kmod != tc.kmod {
			t.Errorf("KmodName(%q) = %q, %v; want %q, %v", tc.path, name, kmod, tc.name, tc.kmod)
		}
		if comp := KmodCompression(tc.path); comp != tc.comp {
			t.Errorf("KmodCompression(%q) = %q, want %q", tc.path, comp, tc.comp)
		}
	}
}

// A module at address 0 among others (a kptr_restrict read mixed with a
// real one) is refused, naming its line in the modules file.
func TestKernelMapsZeroModuleNamesLine(t *testing.T) {
	lm := Landmarks{Text: Landmark{Addr: 0xffffffff81000000, OK: true}, Edata: Landmark{Addr: 0xffffffff82000000, OK: true}}
	mods := []Module{{Name: "a", Start: 0xffffffffc0000000, Size: 0x1000, Line: 1}, {Name: "b", Size: 0x1000, Line: 2}}
	_, err := KernelMaps(lm, mods)
	if err == nil || !strings.Contains(err.Error(), "b (modules line 2)") {
		t.Errorf("error %v, want one naming b at modules line 2", err)
	}
}
