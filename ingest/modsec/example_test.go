package modsec_test

import (
	"debug/elf"
	"fmt"
	"log"
	"testing/fstest"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/modsec"
)

func ExampleBuild() {
	// /sys/module/kvm_amd/sections as the kernel shows it.
	sysfs := fstest.MapFS{
		"sys/module/kvm_amd/sections/.text":          {Data: []byte("0xffffffffc0e40000\n")},
		"sys/module/kvm_amd/sections/.noinstr.text":  {Data: []byte("0xffffffffc0e5a000\n")},
		"sys/module/kvm_amd/sections/.init.text":     {Data: []byte("0xffffffffc0f00000\n")},
		"sys/module/kvm_amd/sections/.data":          {Data: []byte("0xffffffffc0e70000\n")},
		"sys/module/kvm_amd/sections/__mcount_loc":   {Data: []byte("0xffffffffc0e7f000\n")},
		"sys/module/kvm_amd/sections/.note.Linux":    {Data: []byte("0xffffffffc0e7e000\n")},
		"sys/module/kvm_amd/sections/.gnu.linkonce.": {Data: []byte("0xffffffffc0e7d000\n")},
	}
	addrs, err := modsec.ReadSysfs(sysfs, modsec.SysfsDir("kvm-amd"))
	if err != nil {
		log.Fatal(err)
	}
	// Section headers of kvm-amd.ko (normally from ReadELFSections).
	const AX, WA = elf.SHF_ALLOC | elf.SHF_EXECINSTR, elf.SHF_ALLOC | elf.SHF_WRITE
	secs := []modsec.Section{
		{Name: ".text", Size: 0x19a00, Offset: 0x40, Flags: AX},
		{Name: ".noinstr.text", Size: 0x5c3, Offset: 0x1c040, Flags: AX},
		{Name: ".init.text", Size: 0x1200, Offset: 0x1c640, Flags: AX},
		{Name: ".data", Size: 0x2a0, Offset: 0x1e000, Flags: WA},
		{Name: ".comment", Size: 0x60, Offset: 0x20000, Flags: elf.SHF_MERGE | elf.SHF_STRINGS},
	}
	mod := index.Module{Name: "kvm_amd", Start: 0xffffffffc0e40000, Size: 0x3e000}
	modMap, secMaps, err := modsec.Build(mod, addrs, secs, "/lib/modules/6.2.0/kernel/arch/x86/kvm/kvm-amd.ko")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(index.Canonical(append([]index.Map{modMap}, secMaps...)))
	// Output:
	// ffffffffc0e40000-ffffffffc0e59a00 40 dso module [kvm_amd]
	// ffffffffc0e5a000-ffffffffc0e5a5c3 1c040 dso section [kvm-amd].noinstr.text
	// ffffffffc0e70000-ffffffffc0e702a0 1e000 dso section [kvm-amd].data
}
