package attrib

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// testLine writes line i of the tests' tables: lines of different lengths,
// so that a chunk written out of order or twice shows.
func testLine(b *bytes.Buffer, i int) {
	fmt.Fprintf(b, "%d %s\n", i, strings.Repeat("x", i%7))
}

func TestWriteLinesInOrder(t *testing.T) {
	for _, procs := range []int{1, 2, 4, 16} {
		for _, n := range []int{0, 1, lineChunk - 1, lineChunk, lineChunk + 1, 3*lineChunk + 17, 20 * lineChunk} {
			t.Run(fmt.Sprintf("procs%d/n%d", procs, n), func(t *testing.T) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				var want bytes.Buffer
				for i := range n {
					testLine(&want, i)
				}
				var got bytes.Buffer
				if err := writeLines(&got, n, testLine); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes(), want.Bytes()) {
					t.Fatalf("%d lines: output of %d bytes differs from the %d written in order", n, got.Len(), want.Len())
				}
			})
		}
	}
}

// failAfterWrites fails every write after its first ok ones, and counts
// them.
type failAfterWrites struct {
	ok     int
	writes int
}

var errWrite = errors.New("disk full")

func (w *failAfterWrites) Write(p []byte) (int, error) {
	if w.writes++; w.writes > w.ok {
		return 0, errWrite
	}
	return len(p), nil
}

// A failing writer ends the writing with its error, on every path, and
// leaves no worker behind (the race detector and the leak of a blocked
// worker would show).
func TestWriteLinesError(t *testing.T) {
	for _, procs := range []int{1, 2, 4} {
		for _, ok := range []int{0, 1, 5} {
			t.Run(fmt.Sprintf("procs%d/ok%d", procs, ok), func(t *testing.T) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				before := runtime.NumGoroutine()
				w := &failAfterWrites{ok: ok}
				if err := writeLines(w, 40*lineChunk, testLine); !errors.Is(err, errWrite) {
					t.Fatalf("error %v, want %v", err, errWrite)
				}
				if w.writes != ok+1 {
					t.Errorf("%d writes, want none after the failing one", w.writes)
				}
				// writeLines waited for its workers; they may still be
				// on their way out.
				after := runtime.NumGoroutine()
				for end := time.Now().Add(time.Second); after > before && time.Now().Before(end); after = runtime.NumGoroutine() {
					time.Sleep(time.Millisecond)
				}
				if after > before {
					t.Errorf("%d goroutines after, %d before", after, before)
				}
			})
		}
	}
}
