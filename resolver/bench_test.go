package resolver

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/listref"
)

// The concurrency benchmarks compare ways to let readers look maps up
// while one writer changes them (run them with make bench-resolver):
//
//	resolver  this package: a Resolver, Views published per batch
//	cow       an index.Maps whose copy-on-write Clone is published per batch
//	rwmutex   an index.Maps behind a sync.RWMutex
//	rebuild   a flat index.Snapshot rebuilt and published per batch
//	list      the list reference behind a sync.RWMutex
//
// ns/op is wall time per lookup over all readers; updates/s is the rate
// the writer reached (it applies its updates in 1 ms batches and falls
// behind when a batch costs more).

// store is one way to share maps between a writer and readers.
type store interface {
	find(a uint64) (index.Map, bool)
	update(m index.Map)
	publish()
}

type cowStore struct {
	w   *index.Maps
	cur atomic.Pointer[index.Maps]
}

func (s *cowStore) find(a uint64) (index.Map, bool) { return s.cur.Load().Find(a) }
func (s *cowStore) update(m index.Map)              { s.w.FixupOverlapAndInsert(m) }
func (s *cowStore) publish()                        { s.cur.Store(s.w.Clone()) }

type rwStore struct {
	mu sync.RWMutex
	w  *index.Maps
}

func (s *rwStore) find(a uint64) (index.Map, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.w.Find(a)
}

func (s *rwStore) update(m index.Map) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w.FixupOverlapAndInsert(m)
}

func (s *rwStore) publish() {}

type rebuildStore struct {
	w   *index.Maps
	cur atomic.Pointer[index.Snapshot]
}

func (s *rebuildStore) find(a uint64) (index.Map, bool) { return s.cur.Load().Find(a) }
func (s *rebuildStore) update(m index.Map)              { s.w.FixupOverlapAndInsert(m) }
func (s *rebuildStore) publish()                        { s.cur.Store(s.w.Snapshot()) }

type listStore struct {
	mu sync.RWMutex
	w  *listref.Maps
}

func (s *listStore) find(a uint64) (index.Map, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.w.Find(a)
}

func (s *listStore) update(m index.Map) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w.FixupOverlapAndInsert(m)
}

func (s *listStore) publish() {}

type resolverStore struct{ r *Resolver }

const benchPid = 1000

func (s resolverStore) find(a uint64) (index.Map, bool) {
	return s.r.View().Find(CPUModeUser, benchPid, benchPid, a)
}

func (s resolverStore) update(m index.Map) {
	s.r.Mmap(Mmap{CPUMode: CPUModeUser, Pid: benchPid, Tid: benchPid, Addr: m.Start, Len: m.Size(), Pgoff: m.Pgoff, Filename: m.DSO, Prot: 4})
}

func (s resolverStore) publish() { s.r.Publish() }

// benchMap is the i-th map of the layout: 4 KiB maps 8 KiB apart.
func benchMap(i int, gen int) index.Map {
	start := uint64(0x10000000) + uint64(i)<<13
	return index.Map{Start: start, End: start + 0x1000, Pgoff: uint64(gen) << 12, Mapping: index.MappingDSO, Kind: index.KindUser, DSO: "/usr/lib/libbench.so"}
}

func newStore(impl string, n int) store {
	var s store
	switch impl {
	case "resolver":
		s = resolverStore{New(Options{NoFiles: true})}
	case "cow":
		s = &cowStore{w: index.New()}
	case "rwmutex":
		s = &rwStore{w: index.New()}
	case "rebuild":
		s = &rebuildStore{w: index.New()}
	case "list":
		s = &listStore{w: &listref.Maps{}}
	}
	for i := range n {
		s.update(benchMap(i, 0))
	}
	s.publish()
	return s
}

var storeImpls = []string{"resolver", "cow", "rwmutex", "rebuild", "list"}

func BenchmarkConcurrentFind(b *testing.B) {
	readerCounts := slices.Compact([]int{1, 2, runtime.GOMAXPROCS(0)})
	for _, n := range []int{1_000, 10_000, 100_000} {
		for _, rate := range []int{0, 1_000, 100_000} {
			for _, readers := range readerCounts {
				for _, impl := range storeImpls {
					if impl == "list" && n > 10_000 {
						continue // minutes per run
					}
					name := fmt.Sprintf("n=%d/updates=%d/readers=%d/impl=%s", n, rate, readers, impl)
					b.Run(name, func(b *testing.B) { benchConcurrent(b, impl, n, rate, readers) })
				}
			}
		}
	}
}

func benchConcurrent(b *testing.B, impl string, n, rate, readers int) {
	s := newStore(impl, n)
	rng := rand.New(rand.NewPCG(1, 2))
	addrs := make([]uint64, 1<<14)
	for i := range addrs {
		addrs[i] = benchMap(rng.IntN(n), 0).Start + uint64(rng.IntN(0x2000))
	}
	var stop atomic.Bool
	var updates atomic.Int64
	writerDone := make(chan struct{})
	b.ReportAllocs()
	b.ResetTimer()
	go func() {
		defer close(writerDone)
		if rate == 0 {
			return
		}
		perBatch := max(1, rate/1000)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		wrng := rand.New(rand.NewPCG(3, 4))
		for gen := 1; !stop.Load(); gen++ {
			for range perBatch {
				s.update(benchMap(wrng.IntN(n), gen))
			}
			s.publish()
			updates.Add(int64(perBatch))
			<-tick.C
		}
	}()
	start := time.Now()
	var wg sync.WaitGroup
	var sink atomic.Int64
	for r := range readers {
		wg.Go(func() {
			hits := 0
			for i := r; i < b.N; i += readers {
				if _, ok := s.find(addrs[i&(len(addrs)-1)]); ok {
					hits++
				}
			}
			sink.Add(int64(hits))
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	stop.Store(true)
	<-writerDone
	b.StopTimer()
	if rate > 0 {
		b.ReportMetric(float64(updates.Load())/elapsed.Seconds(), "updates/s")
	}
}

// BenchmarkPublish times one update and the publication of the version
// it makes, with its memory: what a version costs the writer.
func BenchmarkPublish(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		for _, impl := range []string{"resolver", "cow", "rebuild", "list"} {
			if impl == "list" && n > 10_000 {
				continue
			}
			b.Run(fmt.Sprintf("n=%d/impl=%s", n, impl), func(b *testing.B) {
				s := newStore(impl, n)
				rng := rand.New(rand.NewPCG(5, 6))
				pub := s.publish
				if ls, ok := s.(*listStore); ok { // the list's version is a copy
					pub = func() { _ = ls.w.Clone() }
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					s.update(benchMap(rng.IntN(n), i+1))
					pub()
				}
			})
		}
	}
}
