package unwind

import (
	"bytes"
	"encoding/binary"
)

// Hand-made CFI for the tests: one CIE ("zR", pc-relative FDE
// pointers, code alignment 1, data alignment -8, return address in
// column 16) and FDEs, laid out as a binary's .eh_frame_hdr (with its
// table) followed by .eh_frame, at address hdrAddr.

const hdrAddr = 0x2000

// testFDE is one function: its range and its CFA program.
type testFDE struct {
	start, size uint64
	instr       []byte
}

func uleb(v uint64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			c |= 0x80
		}
		b = append(b, c)
		if v == 0 {
			return b
		}
	}
}

func sleb(v int64) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func u32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

// pad4 pads an entry body to a multiple of 4 with DW_CFA_nop.
func pad4(b []byte) []byte {
	for (len(b)+4)%4 != 0 {
		b = append(b, cfaNop)
	}
	return b
}

// cieBytes is a CIE with the augmentation aug ("zR" or "zRS") and the
// initial instructions instr.
func cieBytes(aug string, instr []byte) []byte {
	body := cat(u32(0), []byte{1}, []byte(aug), []byte{0}, uleb(1), sleb(-8), []byte{16}, uleb(1), []byte{0x1b}, instr)
	body = pad4(body)
	return cat(u32(uint32(len(body))), body)
}

// ehImage lays out the header, its table and .eh_frame (one CIE with
// augmentation aug and initial instructions cieInstr, then the FDEs)
// and returns the section holding them and the table's facts.
func ehImage(aug string, cieInstr []byte, fdes []testFDE) (sec *section, table, count uint64) {
	n := uint64(len(fdes))
	ehStart := uint64(hdrAddr + 12 + 8*n)
	eh := cieBytes(aug, cieInstr)
	var entries []byte
	for _, f := range fdes {
		at := ehStart + uint64(len(eh))
		body := cat(u32(uint32(at+4-ehStart)), u32(uint32(f.start-(at+8))), u32(uint32(f.size)), uleb(0), f.instr)
		body = pad4(body)
		eh = append(eh, cat(u32(uint32(len(body))), body)...)
		entries = append(entries, cat(u32(uint32(f.start-hdrAddr)), u32(uint32(at-hdrAddr)))...)
	}
	eh = append(eh, u32(0)...)
	hdr := cat([]byte{1, 0x1b, 0x03, 0x3b}, u32(uint32(ehStart-(hdrAddr+4))), u32(uint32(n)))
	return &section{name: ".eh_frame", addr: hdrAddr, data: cat(hdr, entries, eh)}, hdrAddr + 12, n
}

// testFile makes a File of hand-made CFI and a file image (for reads of
// code by offset).
func testFile(aug string, cieInstr []byte, fdes []testFDE, image []byte) *File {
	sec, table, count := ehImage(aug, cieInstr, fdes)
	return &File{r: bytes.NewReader(image), size: int64(len(image)), hdrAddr: hdrAddr, table: table, count: count,
		eh: sec, fdes: make(map[uint64]fdeResult)}
}

// Common CIE instructions on x86_64: CFA = RSP + 8, RIP at CFA - 8.
var stdCIE = cat([]byte{cfaDefCFA}, uleb(dwRSP), uleb(8), []byte{cfaOffset | dwRIP}, uleb(1))
