package attrib

import (
	"cmp"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/kmapindex/kmapindex/ingest/machine"
	"github.com/kmapindex/kmapindex/ingest/symbols"
	"github.com/kmapindex/kmapindex/ingest/unwind"
)

// prefetch reads the files of the DSOs a recording's build-id header
// lists on goroutines of its own, while the recording is decoded and the
// kernel's symbols are read: their symbol tables, and for a recording
// with user stacks the inline records addr2line would read. perf record
// lists there the DSOs its samples hit, so these are files the
// attributor is about to need; it used to read each at the DSO's first
// sample, and wait (the tables of a 2.3 M-sample system-wide recording
// where a Go compiler and python ran took 0.14 s of CPU a run; a
// --call-graph dwarf script waited 0.13 s for libc's inline records in
// a traced run). What is read depends only on the files, so reading
// early gives what the attributor would have read itself.
type prefetch struct {
	mu    sync.Mutex
	queue []*prefetchJob // in header order
	next  int            // the first job no worker took
	jobs  map[string]*prefetchJob
	wg    sync.WaitGroup
}

// prefetchJob is one file read. Its state changes under the prefetch's
// mutex; v is written before done is closed.
type prefetchJob struct {
	read  func() any
	state jobState
	done  chan struct{}
	v     any
}

type jobState uint8

const (
	jobQueued  jobState = iota
	jobRunning          // a worker reads it
	jobDone
	jobClaimed // the attributor reads it itself: no worker started it
)

// prefetchStarted, when set (by tests), is given each prefetch Run
// starts.
var prefetchStarted func(*prefetch)

// prefetchWorkers is how many goroutines read: the cores the decoder and
// the attributor leave, one at least.
func prefetchWorkers() int { return min(max(runtime.GOMAXPROCS(0)-2, 1), 4) }

// prefetchedInlines is the inline records of a DSO's symbol source.
type prefetchedInlines struct {
	symsrc string
	in     *unwind.Inlines
}

// startPrefetch starts reading, in the order names lists them, each
// named DSO's symbol table and, with inlines, its inline records, as
// the symbolizer looks for them: ids maps names to their build ids, the
// build-id cache is debugDir and perf's --symfs is symfs. Only file
// paths are read: kernel, vdso and perf map DSOs are the symbolizer's.
//
// Inline records come first, the largest file's first: libc's take
// longer to read (inflating its debug sections) than the kernel's
// symbols, and the attributor waited for them (a 26k-sample DWARF script:
// 30 ms); a table the attributor needs before a worker reads it, it
// reads itself.
func startPrefetch(names []string, ids map[string][]byte, debugDir, symfs string, inlines bool, sections *unwind.SectionCache) *prefetch {
	p := &prefetch{jobs: make(map[string]*prefetchJob)}
	paths := slices.DeleteFunc(slices.Clone(names), func(dso string) bool {
		return !strings.HasPrefix(dso, "/") || strings.HasPrefix(dso, machine.PerfMapPrefix)
	})
	if inlines {
		size := make(map[string]int64, len(paths))
		for _, dso := range paths {
			if fi, err := os.Stat(symfs + dso); err == nil { // as dsoCandidates names it
				size[dso] = fi.Size()
			}
		}
		bySize := slices.Clone(paths)
		slices.SortStableFunc(bySize, func(a, b string) int { return cmp.Compare(size[b], size[a]) })
		for _, dso := range bySize {
			id := ids[dso]
			p.add(inlinesKey(dso, id), func() any { return readInlines(debugDir, symfs, dso, id, sections) })
		}
	}
	for _, dso := range paths {
		id := ids[dso]
		p.add(tableKey(dso, id), func() any { return loadFileTable(debugDir, symfs, dso, id) })
	}
	for range min(prefetchWorkers(), len(p.queue)) {
		p.wg.Go(p.work)
	}
	return p
}

func tableKey(dso string, id []byte) string   { return "table\x00" + dso + "\x00" + string(id) }
func inlinesKey(dso string, id []byte) string { return "inlines\x00" + dso + "\x00" + string(id) }

// readInlines reads the inline records of the symbol source of the first
// candidate file with build id id; the attributor uses them only if its
// unwind found the same symbol source.
func readInlines(debugDir, symfs, dso string, id []byte, sections *unwind.SectionCache) prefetchedInlines {
	_, symsrc, ok := symbolFiles(debugDir, symfs, dso, id)
	if !ok {
		return prefetchedInlines{}
	}
	in, _ := unwind.OpenInlines(symsrc, sections)
	return prefetchedInlines{symsrc, in}
}

func (p *prefetch) add(key string, read func() any) {
	if p.jobs[key] != nil {
		return
	}
	j := &prefetchJob{read: read, done: make(chan struct{})}
	p.jobs[key] = j
	p.queue = append(p.queue, j)
}

// work reads queued jobs until none is left.
func (p *prefetch) work() {
	for {
		p.mu.Lock()
		for p.next < len(p.queue) && p.queue[p.next].state != jobQueued {
			p.next++
		}
		if p.next == len(p.queue) {
			p.mu.Unlock()
			return
		}
		j := p.queue[p.next]
		j.state = jobRunning
		p.next++
		p.mu.Unlock()

		j.v = j.read()
		p.mu.Lock()
		j.state = jobDone
		p.mu.Unlock()
		close(j.done)
	}
}

// take returns what the job of key read, waiting for a worker that is
// reading it; ok is false when the caller must read it: no such job, or
// no worker started it, and none will now.
func (p *prefetch) take(key string) (v any, ok bool) {
	if p == nil {
		return nil, false
	}
	p.mu.Lock()
	j := p.jobs[key]
	if j == nil {
		p.mu.Unlock()
		return nil, false
	}
	if j.state == jobQueued {
		j.state = jobClaimed
	}
	state := j.state
	p.mu.Unlock()
	if state == jobClaimed {
		return nil, false
	}
	<-j.done
	return j.v, true
}

// table returns the symbol table of dso with build id id if a worker
// read it (see take).
func (p *prefetch) table(dso string, id []byte) (*symbols.Table, bool) {
	v, ok := p.take(tableKey(dso, id))
	if !ok {
		return nil, false
	}
	return v.(*symbols.Table), true
}

// inlines returns the inline records of dso with build id id if a worker
// read them from symsrc (see take).
func (p *prefetch) inlines(dso string, id []byte, symsrc string) (*unwind.Inlines, bool) {
	v, ok := p.take(inlinesKey(dso, id))
	if !ok || v.(prefetchedInlines).symsrc != symsrc {
		return nil, false
	}
	return v.(prefetchedInlines).in, true
}

// stop ends the prefetch: no job is started after it, and it returns
// when the reads under way are done.
func (p *prefetch) stop() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.next = len(p.queue)
	p.mu.Unlock()
	p.wg.Wait()
}
