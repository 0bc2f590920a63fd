package index

import "testing"

func TestKmodName(t *testing.T) {
	for _, tc := range []struct {
		path, name string
		kmod       bool
	}{
		{"[nf_tables]", "[nf_tables]", true},
		{"[aaa.bbb]", "[aaa.bbb]", true},
		{"[kernel.kallsyms]", "[kernel.kallsyms]", false},
		{"[kernel.kallsyms]_text", "[kernel.kallsyms]_text", false},
		{"[vdso]", "[vdso]", false},
		{"/lib/modules/6.1.0-18-amd64/kernel/net/netfilter/nf_tables.ko", "[nf_tables]", true},
		{"/lib/modules/6.1/kernel/drivers/kvm-amd.ko.xz", "[kvm_amd]", true},
		{"/lib/modules/6.1/kernel/drivers/kvm-amd.ko.gz", "[kvm_amd]", true},
		{"/lib/modules/6.1/kernel/drivers/kvm-amd.ko.zst", "kvm_amd.ko.zst", false},
		{"/lib/modules/6.1.0-18/build/vmlinux", "vmlinux", false},
		{"/usr/lib/debug/vmlinux-6.1", "vmlinux_6.1", false},
		{"noext", "noext", false},
	} {
		if name, kmod := KmodName(tc.path); name != tc.name || kmod != tc.kmod {
			t.Errorf("KmodName(%q) = %q, %v; want %q, %v", tc.path, name, kmod, tc.name, tc.kmod)
		}
	}
}
