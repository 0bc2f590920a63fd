package kcore

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"strings"
	"testing"
)

func FuzzReadELF(f *testing.F) {
	f.Add(writeHeaders(f, k1Segments(), elf.EM_AARCH64, binary.LittleEndian))
	f.Add(writeHeaders(f, k1Segments()[:1], elf.EM_S390, binary.BigEndian))
	f.Add(elf32(f, progs32, elf.EM_386, binary.LittleEndian))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := ReadELF(bytes.NewReader(data))
		if err != nil {
			return
		}
		segs := Segments(file.Progs, false)
		_ = Validate(segs)
		if len(file.Progs) > len(data)/32 {
			t.Fatalf("%d program headers from %d bytes", len(file.Progs), len(data))
		}
	})
}

func FuzzParseReadelf(f *testing.F) {
	for _, name := range []string{"k1.readelf-l.txt", "k1.readelf-lW.txt"} {
		if b, err := os.ReadFile("testdata/" + name); err == nil {
			f.Add(string(b))
		}
	}
	f.Add("Program Headers:\n  LOAD 0x0 0x1000 0x0 0x10 0x10 R E 0\n")
	f.Add("There is 1 program header, starting at offset 64\nProgram Headers:\n  LOAD 0x0 0x1 0x0\n       0x10 0x10 RW 0x1000\n")
	f.Fuzz(func(t *testing.T, text string) {
		progs, err := ParseReadelf(strings.NewReader(text))
		if err != nil {
			return
		}
		_ = Validate(Segments(progs, false))
	})
}
