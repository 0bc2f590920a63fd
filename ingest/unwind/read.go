package unwind

import "encoding/binary"

// section is the bytes of one CFI section and the address its first byte
// has in the binary (its sh_addr; 0 for .debug_frame, which is addressed
// by offset).
type section struct {
	name string
	addr uint64
	data []byte
}

// cursor reads a section from an offset, little-endian (x86_64).
type cursor struct {
	sec *section
	off uint64
	err error // the first failed read; later reads return 0
}

func (s *section) at(off uint64) *cursor { return &cursor{sec: s, off: off} }

// fail records a read error at the cursor's offset.
func (c *cursor) fail(what string) { c.failAt(c.off, what) }

// failAt records a read error at offset off.
func (c *cursor) failAt(off uint64, what string) {
	if c.err == nil {
		c.err = &CFIError{Section: c.sec.name, Offset: off, What: what}
	}
}

// bytes returns the next n bytes, or nil (and an error) past the end.
func (c *cursor) bytes(n uint64, what string) []byte {
	if c.err != nil {
		return nil
	}
	if n > uint64(len(c.sec.data)) || c.off > uint64(len(c.sec.data))-n {
		c.fail(what + " past the end")
		return nil
	}
	b := c.sec.data[c.off : c.off+n]
	c.off += n
	return b
}

func (c *cursor) u8(what string) uint8 {
	if b := c.bytes(1, what); b != nil {
		return b[0]
	}
	return 0
}

func (c *cursor) u16(what string) uint16 {
	if b := c.bytes(2, what); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

func (c *cursor) u32(what string) uint32 {
	if b := c.bytes(4, what); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (c *cursor) u64(what string) uint64 {
	if b := c.bytes(8, what); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// uleb reads an unsigned LEB128 number; bits past 64 are dropped, as
// libunwind drops them.
func (c *cursor) uleb(what string) uint64 {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		b := c.u8(what)
		if c.err != nil {
			return 0
		}
		if shift < 64 {
			v |= uint64(b&0x7f) << shift
		}
		if b&0x80 == 0 {
			return v
		}
	}
}

// sleb reads a signed LEB128 number.
func (c *cursor) sleb(what string) uint64 {
	var v uint64
	shift := uint(0)
	for {
		b := c.u8(what)
		if c.err != nil {
			return 0
		}
		if shift < 64 {
			v |= uint64(b&0x7f) << shift
		}
		shift += 7
		if b&0x80 == 0 {
			if shift < 64 && b&0x40 != 0 {
				v |= ^uint64(0) << shift
			}
			return v
		}
	}
}

// cstring reads a NUL-terminated string.
func (c *cursor) cstring(what string) []byte {
	start := c.off
	for {
		b := c.u8(what)
		if c.err != nil {
			return nil
		}
		if b == 0 {
			return c.sec.data[start : c.off-1]
		}
	}
}

// Pointer encodings (DW_EH_PE_*).
const (
	peAbsptr  = 0x00
	peUleb128 = 0x01
	peUdata2  = 0x02
	peUdata4  = 0x03
	peUdata8  = 0x04
	peSleb128 = 0x09
	peSdata2  = 0x0a
	peSdata4  = 0x0b
	peSdata8  = 0x0c
	pePcrel   = 0x10
	peDatarel = 0x30
	peAligned = 0x50
	peIndir   = 0x80
	peOmit    = 0xff
)

// encoded reads a pointer in encoding enc (libunwind's
// dwarf_read_encoded_pointer): pc-relative values are relative to the
// address of the field itself, data-relative ones to 0 (libunwind's
// pi->gp, unset for perf's remote tables); an indirect pointer is read
// through mem. Text-relative, function-relative and unknown encodings
// are errors.
func (c *cursor) encoded(enc uint8, mem func(addr uint64) (uint64, bool), what string) uint64 {
	if enc == peOmit {
		return 0
	}
	start := c.off
	fieldAddr := c.sec.addr + c.off
	var v uint64
	switch enc & 0x0f {
	case peAbsptr:
		v = c.u64(what)
	case peUleb128:
		v = c.uleb(what)
	case peUdata2:
		v = uint64(c.u16(what))
	case peUdata4:
		v = uint64(c.u32(what))
	case peUdata8, peSdata8:
		v = c.u64(what)
	case peSleb128:
		v = c.sleb(what)
	case peSdata2:
		v = uint64(int64(int16(c.u16(what))))
	case peSdata4:
		v = uint64(int64(int32(c.u32(what))))
	default:
		c.failAt(start, "unknown pointer encoding")
		return 0
	}
	switch enc & 0x70 {
	case 0, peDatarel:
	case pePcrel:
		v += fieldAddr
	default:
		c.failAt(start, "unsupported pointer encoding")
		return 0
	}
	if enc&peIndir != 0 && c.err == nil {
		w, ok := uint64(0), false
		if mem != nil {
			w, ok = mem(v)
		}
		if !ok {
			c.failAt(start, "indirect pointer not readable")
			return 0
		}
		v = w
	}
	return v
}
