package attrib

import (
	"bytes"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
)

// lineChunk is how many lines writeLines formats at a time (about
// 100 KB of a table's); lineWorkers, on how many goroutines at most, each
// with up to two chunks in flight, so that its memory stays bounded on a
// host of many cores.
const (
	lineChunk   = 1024
	lineWorkers = 4
)

// writeLines writes n lines to w in order, line i formatted into b by
// line(b, i). Formatting a large table's rows was a fifth of its end, on
// one core while the others idled, so the lines are formatted in chunks
// of lineChunk on up to lineWorkers goroutines (GOMAXPROCS permitting),
// and the chunks written in order as they are done. line must only read
// what it shares. The first error from w ends the writing.
func writeLines(w io.Writer, n int, line func(b *bytes.Buffer, i int)) error {
	chunks := (n + lineChunk - 1) / lineChunk
	workers := min(runtime.GOMAXPROCS(0), chunks, lineWorkers)
	if workers <= 1 {
		var b bytes.Buffer
		for i := range n {
			line(&b, i)
			if b.Len() >= 64<<10 {
				if _, err := w.Write(b.Bytes()); err != nil {
					return err
				}
				b.Reset()
			}
		}
		_, err := w.Write(b.Bytes())
		return err
	}
	// A worker takes a free buffer, then claims the next chunk: chunks
	// are claimed in order, so the one written next is always claimed,
	// and the buffers bound the chunks in flight.
	free := make(chan *bytes.Buffer, 2*workers)
	for range cap(free) {
		free <- new(bytes.Buffer)
	}
	done := make([]chan *bytes.Buffer, chunks)
	for j := range done {
		done[j] = make(chan *bytes.Buffer, 1)
	}
	stop := make(chan struct{})
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				var b *bytes.Buffer
				select {
				case <-stop:
					return
				case b = <-free:
				}
				j := int(next.Add(1) - 1)
				if j >= chunks {
					return
				}
				b.Reset()
				for i := j * lineChunk; i < min(n, (j+1)*lineChunk); i++ {
					line(b, i)
				}
				done[j] <- b
			}
		})
	}
	var err error
	for j := range chunks {
		b := <-done[j]
		if _, err = w.Write(b.Bytes()); err != nil {
			break
		}
		free <- b
	}
	close(stop)
	wg.Wait()
	return err
}
