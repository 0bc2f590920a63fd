package kmodsec_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log"

	"github.com/kmapindex/kmapindex/ingest/kmodsec"
)

func Example() {
	rec := kmodsec.Record{
		Misc:    kmodsec.MiscKernel,
		Pid:     -1,
		Start:   0xffffffffc0e5a000,
		Len:     0x5c3,
		Pgoff:   0x1c040,
		Section: ".noinstr.text",
		Path:    "/lib/modules/6.2.0-rc1/kernel/arch/x86/kvm/kvm-amd.ko",
	}
	// A big-endian stream with a private type number.
	var buf bytes.Buffer
	if err := kmodsec.WriteStream(&buf, []kmodsec.Record{rec}, binary.BigEndian, 90); err != nil {
		log.Fatal(err)
	}
	recs, order, err := kmodsec.ReadStream(&buf, 90)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(order, len(recs))
	fmt.Println(recs[0].Map())
	// Output:
	// BigEndian 1
	// ffffffffc0e5a000-ffffffffc0e5a5c3 1c040 dso section [kvm-amd].noinstr.text
}

func ExampleDecode() {
	raw := kmodsec.Encode(kmodsec.Record{Pid: -1, Start: 0xffffffffc0001000, Len: 0x80,
		Pgoff: 0x2c0, Section: ".text.unlikely", Path: "/k/m.ko"}, binary.LittleEndian, kmodsec.DefaultType, 0)
	fmt.Println(len(raw), kmodsec.LooksLikeKmodSecMap(raw, binary.LittleEndian))
	rec, err := kmodsec.Decode(raw, binary.LittleEndian, 0)
	fmt.Printf("%s %s %#x %v\n", rec.Section, rec.Path, rec.Pgoff, err)
	raw[40] = 0 // sec_name_len = 0
	_, err = kmodsec.Decode(raw, binary.LittleEndian, 0)
	fmt.Println(err)
	// Output:
	// 72 true
	// .text.unlikely /k/m.ko 0x2c0 <nil>
	// kmodsec: offset 40 (0x28): sec_name_len is 0; it must count the section name's NUL
}
