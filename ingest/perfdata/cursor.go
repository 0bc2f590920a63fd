package perfdata

import (
	"encoding/binary"
)

// cursor decodes fields of one record or section in the file's byte order.
// The first failure sticks; later reads return zero values.
type cursor struct {
	b    []byte
	pos  int
	bo   binary.ByteOrder
	base int64  // file offset of b[0]
	what string // what is being decoded, for errors
	err  error
}

func (c *cursor) fail(field string, n int) {
	if c.err == nil {
		c.err = formatError(c.base+int64(c.pos), "%s at file offset %#x: %s needs %d bytes, only %d left", c.what, c.base+int64(c.pos), field, n, len(c.b)-c.pos)
	}
}

func (c *cursor) need(field string, n int) bool {
	if c.err != nil {
		return false
	}
	if n < 0 || n > len(c.b)-c.pos {
		c.fail(field, n)
		return false
	}
	return true
}

func (c *cursor) u8(field string) uint8 {
	if !c.need(field, 1) {
		return 0
	}
	v := c.b[c.pos]
	c.pos++
	return v
}

func (c *cursor) u16(field string) uint16 {
	if !c.need(field, 2) {
		return 0
	}
	v := c.bo.Uint16(c.b[c.pos:])
	c.pos += 2
	return v
}

func (c *cursor) u32(field string) uint32 {
	if !c.need(field, 4) {
		return 0
	}
	v := c.bo.Uint32(c.b[c.pos:])
	c.pos += 4
	return v
}

func (c *cursor) u64(field string) uint64 {
	if !c.need(field, 8) {
		return 0
	}
	v := c.bo.Uint64(c.b[c.pos:])
	c.pos += 8
	return v
}

// bytes returns the next n bytes (aliasing the buffer).
func (c *cursor) bytes(field string, n int) []byte {
	if !c.need(field, n) {
		return nil
	}
	v := c.b[c.pos : c.pos+n : c.pos+n]
	c.pos += n
	return v
}

// count reads a u64 element count for elements of size elem and checks that
// they fit in what is left.
func (c *cursor) count(field string, elem int) int {
	n := c.u64(field)
	if c.err != nil {
		return 0
	}
	if n > uint64(len(c.b)-c.pos)/uint64(elem) {
		c.err = formatError(c.base+int64(c.pos-8), "%s at file offset %#x: %s count %d does not fit in %d bytes", c.what, c.base+int64(c.pos-8), field, n, len(c.b)-c.pos)
		return 0
	}
	return int(n)
}

// u64s decodes n u64 values into dst (reused).
func (c *cursor) u64s(field string, n int, dst []uint64) []uint64 {
	dst = dst[:0]
	if !c.need(field, 8*n) {
		return dst
	}
	for i := 0; i < n; i++ {
		dst = append(dst, c.bo.Uint64(c.b[c.pos:]))
		c.pos += 8
	}
	return dst
}

// cstring returns the NUL-terminated string in the rest of b (all of it if
// there is no NUL).
func cstring(b []byte) string {
	for i, x := range b {
		if x == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
