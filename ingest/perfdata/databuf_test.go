package perfdata

import (
	"bufio"
	"bytes"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"
	"testing/iotest"
	"time"
)

// TestDataBufferLikeBufio runs random Peek, Discard and full reads on a
// dataBuffer and a bufio.Reader of the same size over the same random
// stream (whole, in short reads, or ending in an error): both give the
// same bytes and the same errors, call for call (how much each has
// buffered may differ: bufio reads a large span past its buffer). Half
// the seeds read ahead on a goroutine (newReadAheadBuffer).
func TestDataBufferLikeBufio(t *testing.T) {
	errBroken := io.ErrClosedPipe
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 9))
		data := make([]byte, rng.IntN(300_000))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		size := 64 + rng.IntN(70_000)
		source := func() io.Reader {
			var src io.Reader = bytes.NewReader(data)
			switch seed % 4 {
			case 1:
				src = iotest.HalfReader(src)
			case 2:
				src = iotest.OneByteReader(src)
			case 3:
				src = io.MultiReader(src, iotest.ErrReader(errBroken))
			}
			return src
		}
		ours, theirs := newDataBuffer(source(), size), bufio.NewReaderSize(source(), size) // size > bufio's minimum
		if seed%8 >= 4 {
			ours = newReadAheadBuffer(source(), size, 1+rng.IntN(size)) // a small reserve joins chunks too
			defer ours.close()
		}
		for step := 0; step < 3000; step++ {
			switch op := rng.IntN(3); op {
			case 0:
				n := rng.IntN(size + size/8 + 1)
				a, aerr := ours.Peek(n)
				b, berr := theirs.Peek(n)
				if !bytes.Equal(a, b) || aerr != berr {
					t.Fatalf("seed %d step %d: Peek(%d): %d bytes, %v; bufio %d bytes, %v", seed, step, n, len(a), aerr, len(b), berr)
				}
			case 1:
				n := rng.IntN(min(ours.w-ours.r, theirs.Buffered()) + 1)
				ours.Discard(n)
				if _, err := theirs.Discard(n); err != nil {
					t.Fatal(err)
				}
			case 2:
				// Short reads may differ (io.Reader allows them): read a
				// whole span through each.
				p := make([]byte, rng.IntN(5000))
				q := make([]byte, len(p))
				an, aerr := io.ReadFull(ours, p)
				bn, berr := io.ReadFull(theirs, q)
				if an != bn || aerr != berr || !bytes.Equal(p[:an], q[:bn]) {
					t.Fatalf("seed %d step %d: ReadFull(%d): %d, %v; bufio %d, %v", seed, step, len(p), an, aerr, bn, berr)
				}
			}
		}
	}
}

// endless is a source that never ends.
type endless struct{}

func (endless) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestReadAheadStops checks that a read-ahead goroutine ends when its
// buffer is closed, and when it is dropped unclosed. It watches the two
// goroutines themselves: counting all goroutines would also count those
// of readers earlier tests dropped, which end when they are collected.
func TestReadAheadStops(t *testing.T) {
	closed := newReadAheadBuffer(endless{}, 1<<10, 64)
	dropped := newReadAheadBuffer(endless{}, 1<<10, 64)
	for _, b := range []*dataBuffer{closed, dropped} {
		if p, err := b.Peek(100); len(p) != 100 || err != nil {
			t.Fatalf("Peek(100): %d bytes, %v", len(p), err)
		}
	}
	running := func(a *readAhead) bool {
		select {
		case <-a.exited:
			return false
		default:
			return true
		}
	}
	closedAhead, droppedAhead := closed.ahead, dropped.ahead // neither refers to its buffer
	if !running(closedAhead) || !running(droppedAhead) {
		t.Fatal("a read-ahead goroutine of an endless source ended before its buffer was closed")
	}
	closed.close()
	// Reading a closed buffer fails; it does not wait for a goroutine
	// that is gone.
	failed := make(chan error, 1)
	go func() {
		p := make([]byte, 4<<10)
		for range 1000 {
			if _, err := io.ReadFull(closed, p); err != nil {
				failed <- err
				return
			}
		}
		failed <- nil
	}()
	select {
	case err := <-failed:
		if err != errReadAfterClose {
			t.Fatalf("reading a closed buffer: %v, want %v", err, errReadAfterClose)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading a closed buffer hangs")
	}
	select {
	case <-closedAhead.exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the read-ahead goroutine runs 5 s after its buffer was closed")
	}
	dropped = nil
	for range 500 {
		runtime.GC()
		if !running(droppedAhead) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the read-ahead goroutine runs 5 s after its buffer was dropped")
}
