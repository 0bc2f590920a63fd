package perfdata

import (
	"bufio"
	"errors"
	"io"
	"runtime"
	"sync"
)

// dataBuffer is the buffer a recording's data is read through: the part
// of bufio.Reader that readRaw uses (Peek, Discard, Read), with
// its buffer in readRaw's reach, so that the common case, a whole record
// already buffered, is a slice of it without a call (bufio's three calls
// a record were 14 ms of decoding a 1.1 M-record recording, where the
// decoder sets a flat table's pace).
//
// With ahead, chunks of the source are read on a goroutine of their own
// while the caller decodes the chunk before (see readAhead).
type dataBuffer struct {
	src   io.Reader
	buf   []byte
	r, w  int   // buf[r:w] is read and not consumed
	err   error // the last read error, returned once by Peek
	size  int   // the most Peek returns
	ahead *readAhead
}

func newDataBuffer(src io.Reader, size int) *dataBuffer {
	return &dataBuffer{src: src, buf: make([]byte, size), size: size}
}

// Peek returns the next n bytes without consuming them. Fewer come with
// the source's error when it ends before them, or bufio.ErrBufferFull
// when n exceeds the buffer, as bufio.Reader.Peek.
func (b *dataBuffer) Peek(n int) ([]byte, error) {
	if n > b.size {
		b.fill(b.size)
		return b.buf[b.r:min(b.w, b.r+b.size)], bufio.ErrBufferFull
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
	if b.ahead != nil {
		b.fillAhead(n)
		return
	}
	if b.r+n > len(b.buf) {
		b.w = copy(b.buf, b.buf[b.r:b.w])
		b.r = 0
	}
	m, err := readAtLeast(b.src, b.buf[b.w:], n-(b.w-b.r))
	b.w += m
	b.err = err
}

// readAtLeast reads src into p until at least atLeast bytes are read or src
// fails, as io.ReadAtLeast does, but with bufio's rule for a source that
// gives nothing: io.ErrNoProgress after 100 empty reads.
func readAtLeast(src io.Reader, p []byte, atLeast int) (n int, err error) {
	for empty := 0; n < atLeast && err == nil; {
		var m int
		m, err = src.Read(p[n:])
		n += m
		if m > 0 {
			empty = 0
		} else if empty++; empty == 100 && err == nil {
			err = io.ErrNoProgress
		}
	}
	return n, err
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

// close stops the read-ahead goroutine, if any.
func (b *dataBuffer) close() {
	if b != nil && b.ahead != nil {
		b.ahead.stop()
	}
}

// Reading ahead. Copying a recording out of the page cache is most of
// what decoding a recording with user stacks costs (45 of 72 ms for the
// 213 MB of 26 k DWARF samples): a goroutine reads the next chunks while
// the caller decodes one, on another core. Chunks have aheadReserve
// bytes of room before their data, where fillAhead copies the unread
// rest of the chunk before (less than a record, at most 64 KiB), so that
// the two are contiguous.
const (
	aheadReserve = 64 << 10
	aheadChunks  = 3 // the caller's, one ready, one being read
	// aheadMin is the smallest data section read ahead: a few chunks.
	aheadMin = 4 << 20
)

// readAhead is a dataBuffer's reading goroutine and the chunks it reads
// into. The goroutine holds no reference to the dataBuffer, which stops
// it when collected (or closed).
type readAhead struct {
	reserve  int // aheadReserve, but in tests
	full     chan aheadChunk
	free     chan []byte
	done     chan struct{}
	exited   chan struct{} // closed when the goroutine returns
	stopOnce sync.Once
	cur      []byte // the chunk buf lies in, until the next one comes
	ended    bool   // the goroutine sent its last chunk
	endErr   error  // and its error
}

// aheadChunk is chunk memory whose mem[reserve:][:n] was read,
// followed by err.
type aheadChunk struct {
	mem []byte
	n   int
	err error
}

// newReadAheadBuffer returns a dataBuffer reading chunks of size bytes
// of src ahead of its caller, with reserve bytes of room before each.
func newReadAheadBuffer(src io.Reader, size, reserve int) *dataBuffer {
	a := &readAhead{
		reserve: reserve,
		full:    make(chan aheadChunk, aheadChunks),
		free:    make(chan []byte, aheadChunks),
		done:    make(chan struct{}),
		exited:  make(chan struct{}),
	}
	for range aheadChunks {
		a.free <- make([]byte, reserve+size)
	}
	b := &dataBuffer{src: src, size: size, ahead: a}
	go a.run(src)
	runtime.AddCleanup(b, func(a *readAhead) { a.stop() }, a)
	return b
}

// run reads chunks until the source ends or fails, or the buffer stops.
func (a *readAhead) run(src io.Reader) {
	defer close(a.exited)
	for {
		var mem []byte
		select {
		case mem = <-a.free:
		case <-a.done:
			return
		}
		c := aheadChunk{mem: mem}
		c.n, c.err = readAtLeast(src, mem[a.reserve:], len(mem)-a.reserve)
		select {
		case a.full <- c:
		case <-a.done:
			return
		}
		if c.err != nil {
			return
		}
	}
}

func (a *readAhead) stop() { a.stopOnce.Do(func() { close(a.done) }) }

// errReadAfterClose is what reading a stopped read-ahead buffer gives.
var errReadAfterClose = errors.New("perfdata: the recording was read after Close")

// fillAhead is fill with a read-ahead goroutine: each chunk it takes
// follows the unread bytes of the one before.
func (b *dataBuffer) fillAhead(n int) {
	a := b.ahead
	for b.w-b.r < n && b.err == nil {
		if a.ended {
			b.err = a.endErr // as a source read again after its end
			return
		}
		var c aheadChunk
		select {
		case c = <-a.full:
		case <-a.done:
			b.err = errReadAfterClose // the goroutine is gone: no hang
			return
		}
		if c.err != nil {
			a.ended, a.endErr = true, c.err
		}
		rest := b.buf[b.r:b.w]
		data := c.mem[a.reserve : a.reserve+c.n]
		if len(rest) <= a.reserve {
			start := a.reserve - len(rest)
			copy(c.mem[start:], rest)
			b.buf, b.r, b.w = c.mem, start, a.reserve+c.n
		} else {
			// More than a record unread (a Peek of more than the
			// reserve): both, in memory of their own.
			joined := make([]byte, len(rest)+len(data))
			copy(joined[copy(joined, rest):], data)
			b.buf, b.r, b.w = joined, 0, len(joined)
			a.free <- c.mem
			c.mem = nil
		}
		if a.cur != nil && !a.ended {
			a.free <- a.cur
		}
		a.cur = c.mem
		b.err = c.err
		if a.ended {
			// The goroutine is done: the chunks it would read into
			// can go.
			for len(a.free) > 0 {
				<-a.free
			}
		}
	}
}
