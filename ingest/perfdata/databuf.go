package perfdata

import (
	"bufio"
	"io"
)

// dataBuffer is the buffer a recording's data is read through: the part
// of bufio.Reader that readRaw uses (Peek, Discard, Read), with
// its buffer in readRaw's reach, so that the common case, a whole record
// already buffered, is a slice of it without a call (bufio's three calls
// a record were 14 ms of decoding a 1.1 M-record recording, where the
// decoder sets a flat table's pace).
type dataBuffer struct {
	src  io.Reader
	buf  []byte
	r, w int   // buf[r:w] is read and not consumed
	err  error // the last read error, returned once by Peek
}

func newDataBuffer(src io.Reader, size int) *dataBuffer {
	return &dataBuffer{src: src, buf: make([]byte, size)}
}

// Peek returns the next n bytes without consuming them. Fewer come with
// the source's error when it ends before them, or bufio.ErrBufferFull
// when n exceeds the buffer, as bufio.Reader.Peek.
func (b *dataBuffer) Peek(n int) ([]byte, error) {
	if n > len(b.buf) {
		b.fill(len(b.buf))
		return b.buf[b.r:b.w], bufio.ErrBufferFull
	}
	b.fill(n)
	if b.w-b.r < n {
		err := b.err
		b.err = nil
		return b.buf[b.r:b.w], err
	}
	return b.buf[b.r : b.r+n], nil
}

// fill reads until n bytes are buffered or the source fails.
func (b *dataBuffer) fill(n int) {
	if b.w-b.r >= n || b.err != nil {
		return
	}
	if b.r+n > len(b.buf) {
		b.w = copy(b.buf, b.buf[b.r:b.w])
		b.r = 0
	}
	for empty := 0; b.w-b.r < n && b.err == nil; {
		m, err := b.src.Read(b.buf[b.w:])
		b.w += m
		b.err = err
		if m > 0 {
			empty = 0
		} else if empty++; empty == 100 && err == nil {
			b.err = io.ErrNoProgress // as bufio
		}
	}
}

// Discard consumes the next n buffered bytes (at most those buffered).
func (b *dataBuffer) Discard(n int) { b.r += min(n, b.w-b.r) }

// Read reads buffered bytes, filling the buffer when it is empty.
func (b *dataBuffer) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if b.r == b.w {
		if _, err := b.Peek(1); b.r == b.w {
			return 0, err
		}
	}
	n := copy(p, b.buf[b.r:b.w])
	b.r += n
	return n, nil
}
