package attrib

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/machine"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/ingest/symbols"
)

// rowCacheKeySets are the sort keys the row cache is checked with: by
// key, with perf's tree (comm), with sym before dso, and sym without
// dso, where the cache stays off.
var rowCacheKeySets = [][]string{
	{SortComm, SortDSO, SortSym},
	{SortPid, SortDSO, SortSym},
	{SortComm},
	{SortComm, SortPid, SortCPU, SortDSO, SortSym},
	{SortCPU, SortSym, SortDSO},
	{SortComm, SortSym, SortDSO},
	{SortDSO},
	{SortComm, SortSym},
	{SortCPU, SortPid, SortDSO},
	{SortSym},
}

// runRows runs file with opts, the row cache on or off, and returns the
// table and the canonical form of the result.
func runRows(t *testing.T, file string, opts Options, off bool) (string, string) {
	t.Helper()
	defer func(was bool) { rowCacheOff = was }(rowCacheOff)
	rowCacheOff = off
	return runCached(t, file, opts, false)
}

// checkingAnswers has the row cache check each answer it gives from a
// tree against perf's search until the function it returns, which fails t
// if one differed, or none was checked.
func checkingAnswers(t *testing.T) func() {
	t.Helper()
	rowCacheChecks = answerChecks{on: true}
	return func() {
		t.Helper()
		c := rowCacheChecks
		rowCacheChecks = answerChecks{}
		if c.bad > 0 {
			t.Errorf("%d of the row cache's %d answers from a tree are not perf's search's", c.bad, c.done)
		}
		if c.done == 0 {
			t.Error("no answer of the row cache checked")
		}
	}
}

// Tables by sort keys, with and without the Children column, are the
// same with the row cache on every committed recording, and each of its
// answers from a tree is perf's search's.
func TestRowCacheChangesNothing(t *testing.T) {
	defer checkingAnswers(t)()
	ks, err := kallsyms.ReadFile(kallsymsSubset)
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range recordings(t) {
		for _, keys := range rowCacheKeySets {
			for _, children := range []bool{false, true} {
				opts := Options{SortKeys: keys, Kallsyms: ks, DebugDir: "-", Children: children}
				got, gotCanon := runRows(t, file, opts, false)
				want, wantCanon := runRows(t, file, opts, true)
				if got != want || gotCanon != wantCanon {
					t.Errorf("%s, -sort %s, children %v: the row cache changed the table", filepath.Base(file), strings.Join(keys, ","), children)
				}
			}
		}
	}
}

// A recording of two events with call graphs: each event's tables by
// sort keys are the same with the row cache and the answers kept beside
// the callchain cache, which are the event's (a frame's entry in one
// event's tree is no entry of the other's).
func TestRowCacheTwoEvents(t *testing.T) {
	defer checkingAnswers(t)()
	ks, err := kallsyms.ReadFile(kallsymsSubset)
	if err != nil {
		t.Fatal(err)
	}
	for _, keys := range rowCacheKeySets {
		opts := Options{SortKeys: keys, Kallsyms: ks, DebugDir: "-", NoFiles: true, Children: true}
		got, gotCanon := runRows(t, "testdata/twoevents-g.data", opts, false)
		want, wantCanon := runRows(t, "testdata/twoevents-g.data", opts, true)
		if got != want || gotCanon != wantCanon {
			t.Errorf("-sort %s: with the row cache:\n%s\nwithout:\n%s", strings.Join(keys, ","), got, want)
		}
		if strings.Count(want, "# Samples: ") != 2 {
			t.Fatalf("-sort %s: not two events' tables:\n%s", strings.Join(keys, ","), want)
		}
	}
}

// Threads sampled under their first names, then renamed in place by
// their first COMM to names that sort anywhere among the others' (and
// equal to others', which makes perf's tree keep two entries of one
// key), forks, and kernel samples at a hundred symbols on two CPUs, so
// that entries keep being made after the renames: the tables by sort
// keys are the same with the row cache, which must see every rename that
// moves an entry out of its place in perf's tree. The samples' callchains
// hold kernel and user addresses and junk without a map, for the
// children tables: a quarter of the threads' junk lies where perf's tree
// orders it no more (addrSpan.wide), the others' where it does, so that
// renames move threads between groups of each kind (noMapGroup). Each
// answer of the cache from a tree is perf's search's, and some are for
// entries without a map.
func TestRowCacheFollowsRenames(t *testing.T) {
	defer checkingAnswers(t)()
	defer func() {
		if rowCacheChecks.noMap == 0 {
			t.Error("no answer of the row cache for an entry without a map")
		}
	}()
	ks, err := kallsyms.ReadFile(kallsymsSubset)
	if err != nil {
		t.Fatal(err)
	}
	ips := kernelTextAddrs(t)
	// Kernel objects too, which callchain entries fall in at addresses
	// of their own: a row in an object is named by its first entry's
	// address (objectName).
	var objects []uint64
	for i := range uint64(3) {
		a := 0xffffffff82300000 + i*0x100
		ks = append(ks, kallsyms.Symbol{Addr: a, Type: 'D', Name: fmt.Sprintf("object%d", i)})
		objects = append(objects, a)
	}
	names := []string{"a", "cc1", "gcc", "make", "zz", "sh", ":150", ":101"}
	const contextKernel, contextUser = 0xffffffffffffff80, 0xfffffffffffffe00 // PERF_CONTEXT_KERNEL, _USER
	junk := []uint64{0x10, 0xc484000000000000, 0x7fffffffffffff00, 0x4000000000000000}
	narrowJunk := []uint64{0x10, 0x7fffffffff00, 0x55d5c4e12345, 0x1000}
	userBases := []uint64{0x400000, 0x7ffffffffff00000, 0xc484000000001000}
	defer func(bits uint) { chainCacheBits = bits }(chainCacheBits)
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 11))
		path, w, done, u, k := kernelRecording(t)
		w.WriteMmap(&perfdata.Mmap{Info: u, Pid: 100, Tid: 100, Addr: 0x400000, Len: 0x1000, Filename: "/bin/a", Prot: 5, SampleID: perfdata.SampleID{Time: 1}})
		// /bin/a mapped where its entries' addresses lie too far apart
		// for perf's tree to order them (addrSpan.wide), in two more
		// processes.
		for i, base := range userBases[1:] {
			w.WriteMmap(&perfdata.Mmap{Info: u, Pid: uint32(101 + i), Tid: uint32(101 + i), Addr: base, Len: 0x1000, Filename: "/bin/a", Prot: 5, SampleID: perfdata.SampleID{Time: 1}})
		}
		tm := uint64(10)
		for i := range 4000 {
			tm++
			pid := uint32(100 + rng.IntN(12))
			switch rng.IntN(60) {
			case 0, 1, 2:
				w.WriteComm(&perfdata.Comm{Pid: pid, Tid: pid, Comm: names[rng.IntN(len(names))], SampleID: perfdata.SampleID{Time: tm}})
			case 3:
				child := uint32(150 + rng.IntN(6))
				w.WriteFork(&perfdata.Fork{Pid: child, Ppid: pid, Tid: child, Ptid: pid, Time: tm, SampleID: perfdata.SampleID{Time: tm}})
			case 4:
				w.WriteExit(&perfdata.Exit{Pid: pid, Ppid: pid, Tid: pid, Ptid: pid, Time: tm, SampleID: perfdata.SampleID{Time: tm}})
				pid += 1000 // a new thread, unnamed
			case 5:
				w.WriteFinishedRound()
			}
			if rng.IntN(3) == 0 {
				pid = uint32(150 + rng.IntN(6))
			}
			s := &perfdata.Sample{Info: k, Pid: pid, Tid: pid, Time: tm, Period: 1, IP: ips[rng.IntN(len(ips))], CPU: uint32(rng.IntN(2))}
			if i%7 == 0 {
				s.Info, s.IP = u, 0x400010
			}
			if rng.IntN(2) == 0 {
				if s.Info == k {
					s.Callchain = []uint64{contextKernel, s.IP}
					for range rng.IntN(4) {
						s.Callchain = append(s.Callchain, ips[rng.IntN(len(ips))])
					}
					if rng.IntN(4) == 0 {
						s.Callchain = append(s.Callchain, objects[rng.IntN(len(objects))]+uint64(rng.IntN(0x100)))
					}
				}
				s.Callchain = append(s.Callchain, contextUser)
				if s.Info == u {
					s.Callchain = append(s.Callchain, s.IP)
				}
				for range rng.IntN(4) {
					s.Callchain = append(s.Callchain, userBases[rng.IntN(len(userBases))]+uint64(rng.IntN(8))*0x200)
				}
				if rng.IntN(3) == 0 {
					j := narrowJunk
					if pid%4 == 0 {
						j = junk
					}
					s.Callchain = append(s.Callchain, j[rng.IntN(len(j))])
				}
			}
			w.WriteSample(s)
		}
		done()
		// A third of the seeds again with four callchain slots: a chain's
		// frames share them, and their answers (frameAnswer) must not.
		sizes := []uint{15}
		if seed%3 == 0 {
			sizes = append(sizes, 2)
		}
		for _, bits := range sizes {
			chainCacheBits = bits
			for _, keys := range rowCacheKeySets {
				for _, children := range []bool{false, true} {
					opts := Options{SortKeys: keys, Kallsyms: ks, DebugDir: "-", NoFiles: true, Children: children}
					got, gotCanon := runRows(t, path, opts, false)
					want, wantCanon := runRows(t, path, opts, true)
					if got != want || gotCanon != wantCanon {
						t.Fatalf("seed %d, %d-bit callchain cache, -sort %s, children %v: with the row cache:\n%s\nwithout:\n%s", seed, bits, strings.Join(keys, ","), children, got, want)
					}
				}
			}
		}
	}
}

// Renames in place, the row cache on and off:
//   - a thread's samples counted in another thread's entry of the same
//     name go to an entry of their own once their thread is renamed in
//     place, though no entry holds the new name: the cache keys them by
//     their name at the sample (rowCache.nameOf);
//   - samples of a name counted in an entry that a rename in place then
//     gives another name go to an entry of their own: the answers leading
//     to a renamed entry are void, though the tree keeps its order.
//
// So too their callchains' entries in children tables.
func TestRowCacheRenamesInPlace(t *testing.T) {
	ks, err := kallsyms.ReadFile(kallsymsSubset)
	if err != nil {
		t.Fatal(err)
	}
	ips := kernelTextAddrs(t)
	const contextKernel = 0xffffffffffffff80 // PERF_CONTEXT_KERNEL
	type step struct {
		pid  uint32
		comm string // a COMM of pid's; "": a sample of pid
	}
	for _, tc := range []struct {
		name  string
		steps []step
		want  []string // rows' names
	}{
		{"thread renamed", []step{
			{200, ":300"},
			{200, ""}, // the entry of ":300"
			{300, ""}, // thread 300, unnamed (":300"), counted in it
			{300, ""},
			{300, "zz"},
			{300, ""}, // "zz": an entry of its own
			{300, ""},
		}, []string{"zz", ":300"}},
		{"entry renamed", []step{
			{300, ""}, // thread 300, unnamed (":300"): the entry of ":300"
			{200, ":300"},
			{200, ""}, // named ":300", counted in it
			{300, "zz"},
			{200, ""}, // the entry is "zz" now: ":300" gets an entry of its own
			{200, ""},
		}, []string{"zz", ":300"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, w, done, _, k := kernelRecording(t)
			tm := uint64(10)
			for _, s := range tc.steps {
				tm++
				if s.comm != "" {
					w.WriteComm(&perfdata.Comm{Pid: s.pid, Tid: s.pid, Comm: s.comm, SampleID: perfdata.SampleID{Time: tm}})
					continue
				}
				const ip = 0xffffffff81249030
				w.WriteSample(&perfdata.Sample{Info: k, Pid: s.pid, Tid: s.pid, Time: tm, Period: 1, IP: ip, Callchain: []uint64{contextKernel, ip, ips[3], ips[9]}})
			}
			done()
			for _, children := range []bool{false, true} {
				check := checkingAnswers(t)
				opts := Options{SortKeys: []string{SortComm, SortDSO, SortSym}, Kallsyms: ks, DebugDir: "-", NoFiles: true, Children: children}
				got, _ := runRows(t, path, opts, false)
				check()
				want, _ := runRows(t, path, opts, true)
				if got != want {
					t.Errorf("children %v: with the row cache:\n%s\nwithout:\n%s", children, got, want)
				}
				for _, name := range tc.want {
					if !strings.Contains(want, " "+name+" ") {
						t.Errorf("children %v: no row of %s:\n%s", children, name, want)
					}
				}
			}
		})
	}
}

// kernelTextAddrs returns the addresses of kallsymsSubset's text
// symbols.
func kernelTextAddrs(t *testing.T) []uint64 {
	t.Helper()
	ks, err := kallsyms.ReadFile(kallsymsSubset)
	if err != nil {
		t.Fatal(err)
	}
	var addrs []uint64
	for _, s := range ks {
		if s.Type == 'T' || s.Type == 't' {
			addrs = append(addrs, s.Addr)
		}
	}
	if len(addrs) < 50 {
		t.Fatalf("%d text symbols in %s", len(addrs), kallsymsSubset)
	}
	return addrs
}

// The cache exists for tables by keys and trees, strict where the
// comparison is no order, and answers for samples in a map whose table is
// final, and not once its tree's order may be broken.
func TestRowCacheKeyRefuses(t *testing.T) {
	rc := newRowCounter([]string{SortComm, SortDSO, SortSym}, false)
	if rc.cache == nil || rc.cache.strict {
		t.Fatal("no cache, or a strict one, for comm,dso,sym")
	}
	for _, keys := range [][]string{{SortComm, SortSym}, {SortSym}} {
		if c := newRowCounter(keys, false).cache; c == nil || !c.strict {
			t.Errorf("-sort %s: no strict cache, for a tree whose comparison is no order", strings.Join(keys, ","))
		}
	}
	if c := newRowCounter([]string{SortDSO, SortSym}, true).cache; c == nil {
		t.Error("no cache for a children table by dso,sym")
	}
	if c := newRowCounter([]string{SortPid, SortDSO}, true).cache; c != nil {
		t.Error("a cache for a children table without a tree")
	}
	st := &mapState{final: true}
	th := machine.New(mapset.BTree).SampleThread(7, 7)
	for _, tc := range []struct {
		h    rowHint
		off  bool
		want bool
	}{
		{rowHint{st: st, i: 3}, false, true},
		{rowHint{st: st, i: -1, addr: 0x40}, false, true}, // an address without a symbol
		{rowHint{i: 3}, false, false},
		{rowHint{st: &mapState{}, i: 3}, false, false},
		{rowHint{st: st, i: 3}, true, false},
	} {
		rc.cache.treeOff = tc.off
		if _, ok := rc.cache.key(tc.h, rc.threadKey(th, 0), 0); ok != tc.want {
			t.Errorf("key(%+v), tree off %v: %v, want %v", tc.h, tc.off, ok, tc.want)
		}
	}
}

// addrSpan is wide where _sort__addr_cmp stops being an order.
func TestAddrSpanWide(t *testing.T) {
	for _, tc := range []struct {
		addrs []uint64
		want  bool
	}{
		{nil, false},
		{[]uint64{5}, false},
		{[]uint64{0x1000, 0x7fffffffffffffff}, false},
		{[]uint64{0, 1 << 63}, true},
		{[]uint64{0x400000, 0xffffffff81000000}, false}, // -0x7f000000 as signed
		{[]uint64{0xffffffff81000000, 0xffffffffa0000000}, false},
		{[]uint64{0, 0x6000000000000000, 0xc000000000000000}, true}, // a cycle
		{[]uint64{0x7fffffffffffffff, 0x8000000000000000}, false},
		{[]uint64{0, 0x7fffffffffffffff, 0x8000000000000000}, true},
	} {
		var s addrSpan
		for _, a := range tc.addrs {
			s.add(a)
		}
		if s.wide() != tc.want {
			t.Errorf("%s: wide %v, want %v", fmt.Sprint(tc.addrs), s.wide(), tc.want)
		}
	}
}

// On random addresses about 0, 2^47, 2^63 and 2^64, a span that is not
// wide holds addresses _sort__addr_cmp orders: its comparison is
// transitive on every three of them.
func TestAddrSpanNarrowIsOrdered(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	around := []uint64{0, 1 << 47, 1 << 62, 1 << 63, 3 << 62, 0xffff800000000000}
	cmp := func(l, r uint64) int64 { return int64(r - l) } // _sort__addr_cmp's sign
	narrow := 0
	for range 20000 {
		var s addrSpan
		addrs := make([]uint64, 1+rng.IntN(5))
		for i := range addrs {
			addrs[i] = around[rng.IntN(len(around))] + uint64(rng.Int64N(1<<40)) - 1<<39
			s.add(addrs[i])
		}
		if s.wide() {
			continue
		}
		narrow++
		for _, a := range addrs {
			for _, b := range addrs {
				for _, c := range addrs {
					if cmp(a, b) > 0 && cmp(b, c) > 0 && cmp(a, c) <= 0 {
						t.Fatalf("%#x: not wide, but %#x < %#x < %#x and not %#x < %#x", addrs, a, b, c, a, c)
					}
				}
			}
		}
	}
	if narrow < 5000 {
		t.Errorf("%d narrow spans of 20000", narrow)
	}
}

// Two counters, one with the row cache and one without, fed the same
// samples and renames (threads renamed in place to names equal to
// others' or sorting anywhere, new entries all along) in maps of one DSO
// in several processes, one of them at two levels and with two tables,
// find the same row for every sample: by comm,dso,sym the same entry of
// perf's tree, by keys without a tree the same row. Half the seeds rename
// seldom, so that the cache answers most of their samples; some addresses
// of one DSO, without a symbol, lie where perf's tree orders them no more.
func TestRowCacheFindsWhatTheTreeFinds(t *testing.T) {
	defer checkingAnswers(t)()
	type side struct {
		m  *machine.Machine
		rc *rowCounter
	}
	tables := []*symbols.Table{{}, {}}
	type sampled struct {
		st    *mapState
		table int
	}
	names := []string{"a", "b", "cc1", "gcc", "make", "zz", ":7", ":9"}
	for _, keys := range [][]string{{SortComm, SortDSO, SortSym}, {SortPid, SortDSO, SortSym}, {SortSym, SortDSO}, {SortComm, SortSym, SortDSO}, {SortSym}, {SortComm, SortSym}} {
		for seed := range uint64(20) {
			rng := rand.New(rand.NewPCG(seed, 12))
			// A run's maps (their rowClass is the run's cache's).
			var maps []sampled
			for _, m := range []struct {
				dso    string
				kernel bool
				table  int
			}{
				{"[kernel.kallsyms]", true, 0}, {"[kernel.kallsyms]", true, 0},
				{"/lib/libc.so.6", false, 0}, {"/lib/libc.so.6", false, 0}, {"/lib/libc.so.6", false, 1}, {"/lib/libc.so.6", true, 0},
				{"/bin/cc1", false, 0}, {"/bin/cc1", false, 0}, {"/bin/cc1", false, 0},
			} {
				st := &mapState{key: stateKey{index.Map{DSO: m.dso}, m.kernel}, table: tables[m.table], final: true}
				maps = append(maps, sampled{st, m.table})
			}
			// Renames to any name soon break the tree's order, and the
			// cache goes off: half the seeds rename seldom.
			renameEvery := 100
			if seed%2 == 1 {
				renameEvery = 20000
			}
			var sides [2]side
			for i := range sides {
				m, rc := machine.New(mapset.BTree), newRowCounter(keys, false)
				if i == 1 {
					rc.cache = nil
				}
				m.OnCommRename = func(e *machine.CommEntry, old string) { rc.cache.renamed(rc, e, old) }
				sides[i] = side{m, rc}
			}
			for range 30000 {
				tid := uint32(1 + rng.IntN(20))
				if rng.IntN(renameEvery) == 0 {
					name := names[rng.IntN(len(names))]
					for _, s := range sides {
						s.m.Comm(tid, tid, name)
					}
					continue
				}
				if rng.IntN(300) == 0 {
					for _, s := range sides {
						s.m.Fork(tid+100, 1, tid+100, 1, 0) // unnamed children renamed later
					}
					continue
				}
				// A table's symbols lie apart from the other's: perf's
				// tree compares symbols by address.
				m, i := maps[rng.IntN(len(maps))], int32(rng.IntN(200))
				k := Key{DSO: m.st.key.m.DSO, Sym: fmt.Sprintf("s%d.%d", m.table, i), Addr: 0x1000 + uint64(m.table)<<20 + uint64(i)*16, Kernel: m.st.key.kernel}
				if rng.IntN(4) == 0 { // an address without a symbol
					i, k.Sym, k.Addr = -1, symbols.Unknown, 0x8000+uint64(rng.IntN(300))
					// Addresses _sort__addr_cmp orders in a cycle: in
					// half the seeds cc1's alone, in the others cc1's
					// with libc's, which matters when sym comes before
					// dso.
					high := []uint64{0x6000000000000000, 0xc000000000000000}[rng.IntN(2)]
					switch {
					case k.Kernel:
						k.Addr += 0xffffffff81000000
					case k.DSO == "/bin/cc1" && (seed%4 >= 2 || rng.IntN(2) == 0):
						k.Addr += high
					}
				}
				var got [2]int
				for j, s := range sides {
					th := s.m.SampleThread(tid, tid)
					_, r := s.rc.add(k, k.Addr+16, th, 0, s.rc.threadKey(th, 0), 0, false, Counts{1, 1}, rowHint{st: m.st, i: i, addr: k.Addr}, nil)
					got[j] = r.seq
				}
				if got[0] != got[1] {
					t.Fatalf("-sort %s, seed %d: row %d with the cache, %d without", strings.Join(keys, ","), seed, got[0], got[1])
				}
			}
		}
	}
}

// Where the comparison is no order (sym without dso), the cache's answers
// stand only while perf's tree is as it was: an entry without a symbol
// found for an address in another DSO takes that DSO, which moves it
// among the others' symbols (sort__sym_cmp compares DSOs first), so that
// searches through it may end elsewhere. A few symbols and addresses in
// three DSOs whose names sort apart, so that the tree stops growing and
// such changes are most of what happens to it.
func TestRowCacheStrictFollowsChanges(t *testing.T) {
	defer checkingAnswers(t)()
	table := &symbols.Table{}
	for _, keys := range [][]string{{SortSym}, {SortComm, SortSym}} {
		for seed := range uint64(20) {
			rng := rand.New(rand.NewPCG(seed, 13))
			var states []*mapState // a run's (their rowClass is the run's cache's)
			for _, dso := range []string{"/lib/aa", "/lib/mm", "/lib/zz"} {
				states = append(states, &mapState{key: stateKey{index.Map{DSO: dso}, false}, table: table, final: true})
			}
			var sides [2]*rowCounter
			for i := range sides {
				sides[i] = newRowCounter(keys, false)
			}
			sides[1].cache = nil
			m := machine.New(mapset.BTree)
			for range 20000 {
				st, i := states[rng.IntN(len(states))], int32(rng.IntN(20))
				k := Key{DSO: st.key.m.DSO, Sym: fmt.Sprintf("s%d", i), Addr: 0x1000 + uint64(i)*16}
				if rng.IntN(2) == 0 {
					i, k.Sym, k.Addr = -1, symbols.Unknown, 0x8000+uint64(rng.IntN(6))
				}
				tid := uint32(1 + rng.IntN(2))
				var got [2]int
				for j, rc := range sides {
					th := m.SampleThread(tid, tid)
					_, r := rc.add(k, k.Addr+16, th, 0, rc.threadKey(th, 0), 0, false, Counts{1, 1}, rowHint{st: st, i: i, addr: k.Addr}, nil)
					got[j] = r.seq
				}
				if got[0] != got[1] {
					t.Fatalf("-sort %s, seed %d: row %d with the cache, %d without", strings.Join(keys, ","), seed, got[0], got[1])
				}
			}
		}
	}
}

// Callchain entries without a map are cached by group (noMapGroup):
// threads named n1 and n2 hold junk addresses that perf's tree orders
// (addrSpan.wide is false for them), two unnamed threads junk it does
// not, and a third of the way through each unnamed thread takes one of
// the names in place (its first COMM), so that the name's group holds
// junk perf's tree orders no more from then on (regroup). Tables by
// comm-led keys are the same with the row cache on and off, each answer
// of the cache is perf's search's, and the cache answers entries without
// a map though the unnamed threads' groups are wide from the start.
func TestRowCacheNoMapGroups(t *testing.T) {
	defer checkingAnswers(t)()
	narrow := []uint64{0x10, 0x1000, 0x2000, 0x55d5c4e12345, 0x7fffffffff00, 0x7ffe00000000}
	wide := []uint64{0x10, 0x4000000000000000, 0x7fffffffffffff00, 0x8000000000000010, 0xc484000000000000, 0xfff0000000000000}
	const contextUser = 0xfffffffffffffe00 // PERF_CONTEXT_USER
	// The answers for entries without a map with the sym key.
	noMapAnswers := 0
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 13))
		path, w, done, u, _ := kernelRecording(t)
		pids := []uint32{100, 101, 200, 201}
		for _, pid := range pids {
			w.WriteMmap(&perfdata.Mmap{Info: u, Pid: pid, Tid: pid, Addr: 0x400000, Len: 0x1000, Filename: "/bin/a", Prot: 5, SampleID: perfdata.SampleID{Time: 1}})
		}
		w.WriteComm(&perfdata.Comm{Pid: 100, Tid: 100, Comm: "n1", SampleID: perfdata.SampleID{Time: 2}})
		w.WriteComm(&perfdata.Comm{Pid: 101, Tid: 101, Comm: "n2", SampleID: perfdata.SampleID{Time: 2}})
		const samples = 3000
		for i := range samples {
			tm := uint64(10 + i)
			if i == samples/3 {
				w.WriteComm(&perfdata.Comm{Pid: 200, Tid: 200, Comm: "n1", SampleID: perfdata.SampleID{Time: tm}})
				w.WriteComm(&perfdata.Comm{Pid: 201, Tid: 201, Comm: "n2", SampleID: perfdata.SampleID{Time: tm}})
			}
			pid := pids[rng.IntN(len(pids))]
			junk := narrow
			if pid >= 200 {
				junk = wide
			}
			s := &perfdata.Sample{Info: u, Pid: pid, Tid: pid, Time: tm, Period: 1, IP: 0x400010 + uint64(rng.IntN(4))*0x100, CPU: uint32(rng.IntN(2))}
			s.Callchain = []uint64{contextUser, s.IP}
			for range 1 + rng.IntN(3) {
				s.Callchain = append(s.Callchain, junk[rng.IntN(len(junk))]+uint64(rng.IntN(2)))
			}
			w.WriteSample(s)
		}
		done()
		for _, keys := range [][]string{{SortComm, SortDSO, SortSym}, {SortComm, SortCPU, SortDSO, SortSym}, {SortComm, SortDSO}} {
			opts := Options{SortKeys: keys, DebugDir: "-", NoFiles: true, Children: true}
			before := rowCacheChecks.noMap
			got, gotCanon := runRows(t, path, opts, false)
			if keys[len(keys)-1] == SortSym {
				noMapAnswers += rowCacheChecks.noMap - before
			}
			want, wantCanon := runRows(t, path, opts, true)
			if got != want || gotCanon != wantCanon {
				t.Fatalf("seed %d, -sort %s: with the row cache:\n%s\nwithout:\n%s", seed, strings.Join(keys, ","), got, want)
			}
		}
	}
	// Half the samples are the n1 and n2 threads', whose entries without
	// a map are answered from the second search on until the renames
	// (their groups widen then): 38 k answers in all, none if one group
	// held every thread's.
	if noMapAnswers < 20*1000 {
		t.Errorf("the row cache answered %d searches of entries without a map by the sym key, want 20,000 or more", noMapAnswers)
	}
}

// A rename in place moves a thread's entries without a map into its new
// name's group (regroup): the name whose group was narrow is refused once
// it holds the entries of a wide one, though no entry is made after the
// rename.
func TestRowCacheRegroups(t *testing.T) {
	m := machine.New(mapset.BTree)
	rc := newRowCounter([]string{SortComm, SortDSO, SortSym}, true)
	m.OnCommRename = func(e *machine.CommEntry, old string) { rc.cache.renamed(rc, e, old) }
	h := rc.tree(0)
	add := func(th *machine.Thread, addrs ...uint64) {
		for _, a := range addrs {
			id := h.find(rc.histEntry(Key{DSO: symbols.Unknown, Sym: symbols.Unknown, Addr: a}, false, 0, false, th, 0))
			rc.cache.made(h, id)
		}
	}
	unnamed := m.SampleThread(200, 200)
	add(unnamed, 0x10, 0x4000000000000000, 0x8000000000000010, 0xc484000000000000)
	m.Comm(100, 100, "n1")
	named := m.SampleThread(100, 100)
	add(named, 0x1000, 0x2000)
	if !rc.cache.refuses(noMapClass, rc.threadKey(unnamed, 0)) {
		t.Errorf("%s's wide group not refused", "thread 200")
	}
	if rc.cache.refuses(noMapClass, rc.threadKey(named, 0)) {
		t.Errorf("%s's narrow group refused", "n1")
	}
	m.Comm(200, 200, "n1") // its first: a rename in place
	if !rc.cache.refuses(noMapClass, rc.threadKey(named, 0)) {
		t.Errorf("%s's group not refused once it holds %s's entries", "n1", "thread 200")
	}
}
