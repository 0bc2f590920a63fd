package attrib

import (
	"io"
	"sync"
	"unsafe"
)

// scriptOut formats and writes perf script lines on a goroutine of its
// own: the attributor hands it lines in batches, and formatting them,
// about a third of the attributor's time on a recording with callchains,
// runs on the core the decoder leaves idle. Lines are written in the
// order they were added.
//
// A line carries its address and the number of its (symbol, DSO) pair
// (scriptNames), not the two strings: a batch holds no pointers, so the
// collector does not scan it, and it is 16 bytes a line to hand to the
// other core instead of 40.
type scriptOut struct {
	w     io.Writer
	names scriptNames
	// lastPair is the names' number of the last line added (add,
	// addPair), which a flat script's sample keeps for its slot.
	lastPair uint32
	batch    []scriptLine
	texts    []string         // the batch's text lines (leadText)
	full     chan scriptBatch // batches to write, in order
	free     chan []scriptLine
	done     chan struct{} // closed when the writer ends

	mu  sync.Mutex
	err error // the first write error
}

// scriptLine is one line of perf script output as appendScriptLine
// formats it: lead, address, and the pair of names; lead 0 is an empty
// line.
type scriptLine struct {
	addr uint64
	pair uint32
	lead byte
}

// scriptBatch is lines and the pairs and texts they may refer to.
type scriptBatch struct {
	lines []scriptLine
	pairs []*[pairChunk]namePair
	texts []string
}

// batchLines is how many lines the attributor gathers before it hands
// them over (a sample's lines go together, so a batch can hold more).
const batchLines = 4096

// scriptBatchesQueued is how many batches the attributor hands over
// before it waits for the writer. The free batches can be all of them
// (those queued, the one being written and the one being filled): with
// fewer kept, some were dropped and made again (14 more allocations
// for 330 k more samples: TestAttributionAllocatesNothingPerSample).
const scriptBatchesQueued = 4

func newScriptOut(w io.Writer) *scriptOut {
	s := &scriptOut{
		w:     w,
		batch: make([]scriptLine, 0, batchLines),
		full:  make(chan scriptBatch, scriptBatchesQueued),
		free:  make(chan []scriptLine, scriptBatchesQueued+2),
		done:  make(chan struct{}),
	}
	go s.write()
	return s
}

// scriptWriteBytes is how much formatted text the writer gathers before
// it writes.
const scriptWriteBytes = 64 << 10

// write formats and writes the batches until full is closed; after a
// write error it only recycles them.
func (s *scriptOut) write() {
	defer close(s.done)
	// Written every scriptWriteBytes: a batch's lines in one buffer
	// grew it to 0.7 MB, 1.5 MB of allocations on the way.
	buf := make([]byte, 0, scriptWriteBytes+1024)
	failed := false
	flush := func() {
		if _, err := s.w.Write(buf); err != nil {
			s.mu.Lock()
			s.err = err
			s.mu.Unlock()
			failed = true
		}
		buf = buf[:0]
	}
	for b := range s.full {
		for _, l := range b.lines {
			if failed {
				break
			}
			switch l.lead {
			case 0:
				buf = append(buf, '\n')
			case leadText:
				buf = append(buf, b.texts[l.pair]...)
			default:
				p := &b.pairs[l.pair/pairChunk][l.pair%pairChunk]
				buf = appendScriptLine(buf, l.lead, l.addr, p.sym, p.dso)
			}
			if len(buf) >= scriptWriteBytes {
				flush()
			}
		}
		if !failed && len(buf) > 0 {
			flush()
		}
		select {
		case s.free <- b.lines[:0]:
		default:
		}
	}
}

// add adds a line.
func (s *scriptOut) add(lead byte, addr uint64, sym, dso string) {
	s.addPair(lead, addr, s.names.pair(sym, dso))
}

// addPair adds a line of the names numbered pair (scriptNames.pair's
// answer).
func (s *scriptOut) addPair(lead byte, addr uint64, pair uint32) {
	s.lastPair = pair
	s.batch = append(s.batch, scriptLine{addr, pair, lead})
}

// leadText marks a line that is text of its own: its pair is the
// number of the batch's text (scriptBatch.texts), not of names, which
// keep every pair to the end.
const leadText = 1

// text adds t, lines with their newlines, as it is.
func (s *scriptOut) text(t string) {
	s.batch = append(s.batch, scriptLine{pair: uint32(len(s.texts)), lead: leadText})
	s.texts = append(s.texts, t)
}

// blank adds an empty line.
func (s *scriptOut) blank() { s.batch = append(s.batch, scriptLine{}) }

// mark returns the position a sample's lines start at, for drop.
func (s *scriptOut) mark() int { return len(s.batch) }

// drop removes the lines added since mark returned at.
func (s *scriptOut) drop(at int) { s.batch = s.batch[:at] }

// endSample ends a sample's lines: a full batch is handed over. It
// returns the writer's error, if it had one.
func (s *scriptOut) endSample() error {
	if len(s.batch) < batchLines {
		return nil
	}
	s.handOver()
	return s.writeErr()
}

// handOver sends the batch with the pairs numbered so far: a chunk's
// pairs never change once written, and the writer reads only those the
// batch's lines refer to, written before the send.
func (s *scriptOut) handOver() {
	s.full <- scriptBatch{s.batch, s.names.chunks, s.texts}
	s.texts = nil
	select {
	case s.batch = <-s.free:
	default:
		s.batch = make([]scriptLine, 0, batchLines)
	}
}

func (s *scriptOut) writeErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// close writes the lines left and waits for the writer: every line added
// is written (up to a write error) when it returns, with that error.
func (s *scriptOut) close() error {
	if len(s.batch) > 0 {
		s.handOver()
	}
	close(s.full)
	<-s.done
	return s.writeErr()
}

// scriptNames numbers (symbol, DSO) pairs in the order they come, in
// chunks that never move. A small cache keyed by the strings' data
// finds a pair's number without hashing the names: a line's strings come
// from symbol tables and maps, a few distinct ones over and over. (Only
// numbered pairs' strings are cached, and the chunks keep those alive, so
// an address in the cache always means the same string.)
type scriptNames struct {
	byName map[namePair]uint32
	chunks []*[pairChunk]namePair
	n      uint32
	cache  [1 << pairCacheBits]pairSlot
}

type namePair struct{ sym, dso string }

// pairSlot caches a pair's number by its strings' data and lengths.
type pairSlot struct {
	sym, dso   uintptr
	nsym, ndso uint32
	pair       uint32
	filled     bool
}

const (
	pairChunk     = 4096
	pairCacheBits = 12
)

// pair returns the number of (sym, dso).
func (sn *scriptNames) pair(sym, dso string) uint32 {
	ps, pd := uintptr(unsafe.Pointer(unsafe.StringData(sym))), uintptr(unsafe.Pointer(unsafe.StringData(dso)))
	slot := &sn.cache[((uint64(ps)^uint64(pd)<<7)*0x9e3779b97f4a7c15)>>(64-pairCacheBits)]
	if slot.filled && slot.sym == ps && slot.dso == pd && slot.nsym == uint32(len(sym)) && slot.ndso == uint32(len(dso)) {
		return slot.pair
	}
	k := namePair{sym, dso}
	id, ok := sn.byName[k]
	if !ok {
		if sn.byName == nil {
			sn.byName = make(map[namePair]uint32)
		}
		id = sn.n
		if id%pairChunk == 0 {
			sn.chunks = append(sn.chunks, new([pairChunk]namePair))
		}
		sn.chunks[id/pairChunk][id%pairChunk] = k
		sn.n++
		sn.byName[k] = id
	}
	// Keyed by the strings the chunk holds, which the pair's number
	// keeps alive (sym and dso may be other copies of them).
	p := &sn.chunks[id/pairChunk][id%pairChunk]
	ps, pd = uintptr(unsafe.Pointer(unsafe.StringData(p.sym))), uintptr(unsafe.Pointer(unsafe.StringData(p.dso)))
	*slot = pairSlot{sym: ps, dso: pd, nsym: uint32(len(p.sym)), ndso: uint32(len(p.dso)), pair: id, filled: true}
	return id
}
