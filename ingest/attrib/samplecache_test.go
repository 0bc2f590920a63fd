package attrib

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

// rowDSO matches a table row's DSO (a, b, c or a BPF program's).
var rowDSO = regexp.MustCompile(`(?m)\s(a|b|c|bpf_prog_[abc])\s+\[[.k]\]`)

// scriptDSO finds the DSO of a script line of those recordings.
var scriptDSO = regexp.MustCompile(`(?m)\((/bin/[abc]|bpf_prog_[abc])\)$`)

// tempRecording starts an x86_64 recording in a temporary file: its
// path, the writer, and the function that finishes it.
func tempRecording(t *testing.T, opts ...perfdata.WriterOptions) (string, *perfdata.Writer, func()) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "perf.data")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	o := perfdata.WriterOptions{Arch: "x86_64"}
	if len(opts) > 0 {
		o = opts[0]
	}
	w, err := perfdata.NewWriter(f, o)
	if err != nil {
		t.Fatal(err)
	}
	return path, w, func() {
		t.Helper()
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// kernelRecording starts a recording with callchains and a kernel map
// (tempRecording), and returns the sample headers of user and kernel mode.
func kernelRecording(t *testing.T) (path string, w *perfdata.Writer, done func(), u, k perfdata.Info) {
	t.Helper()
	path, w, done = tempRecording(t, perfdata.WriterOptions{Arch: "x86_64", Callchains: true})
	u = perfdata.Info{Misc: uint16(perfdata.CPUModeUser)}
	k = perfdata.Info{Misc: uint16(perfdata.CPUModeKernel)}
	w.WriteMmap(&perfdata.Mmap{Info: k, Pid: ^uint32(0), Tid: 0, Addr: 0xffffffff81000000, Len: 0x1000000, Pgoff: 0xffffffff81000000, Filename: "[kernel.kallsyms]_text"})
	return path, w, done, u, k
}

// runCached runs file with opts, the sample cache on or off, and returns
// the table (or script) output and the canonical form of the result.
func runCached(t *testing.T, file string, opts Options, cacheOff bool) (string, string) {
	t.Helper()
	defer func(off bool) { sampleCacheOff = off }(sampleCacheOff)
	sampleCacheOff = cacheOff
	r, err := perfdata.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var script bytes.Buffer
	if opts.Script != nil {
		opts.Script = &script
	}
	res, err := Run(r, opts)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Script != nil {
		return script.String(), res.Canonical()
	}
	var table bytes.Buffer
	if err := res.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	return table.String(), res.Canonical()
}

// The sample cache changes no output, on every committed recording, in
// every view that resolves samples.
func TestSampleCacheChangesNothing(t *testing.T) {
	viewsUnchanged(t, "the sample cache", func(off bool) func() {
		was := sampleCacheOff
		sampleCacheOff = off
		return func() { sampleCacheOff = was }
	})
}

// viewsUnchanged runs every committed recording in every view that
// resolves samples (table, children, sort by comm,pid,cpu,dso,sym,
// script), with what set(false) turns on and with what set(true) turns
// off, and fails where their outputs differ; set returns the undo.
func viewsUnchanged(t *testing.T, what string, set func(off bool) (undo func())) {
	t.Helper()
	ks, err := kallsyms.ReadFile(kallsymsSubset)
	if err != nil {
		t.Fatal(err)
	}
	views := map[string]Options{
		"table":    {},
		"flat":     {NoSampleSets: true, NoMapSymCounts: true}, // kbench report's table: countCached
		"children": {Children: true},
		"sort":     {SortKeys: []string{SortComm, SortPid, SortCPU, SortDSO, SortSym}},
		"script":   {Script: &bytes.Buffer{}, FetchInsn: true},
		// kbench report's script: scriptFromSlot
		"flat script": {Script: &bytes.Buffer{}, FetchInsn: true, NoCounts: true, NoSampleSets: true, NoMapSymCounts: true},
	}
	run := func(file string, opts Options, off bool) (string, string) {
		defer set(off)()
		return runCached(t, file, opts, sampleCacheOff)
	}
	printed := 0
	for _, file := range recordings(t) {
		for name, opts := range views {
			opts.Kallsyms, opts.DebugDir = ks, "-"
			gotOut, gotCanon := run(file, opts, false)
			wantOut, wantCanon := run(file, opts, true)
			if gotOut != wantOut || gotCanon != wantCanon {
				t.Errorf("%s, %s: %s changed the output", filepath.Base(file), name, what)
			}
			if gotOut != "" {
				printed++
			}
		}
	}
	if printed == 0 {
		t.Fatal("no view printed anything")
	}
}

// Samples at the same addresses while the maps change under them (a
// process remapping, a forked child remapping its copy, threads sharing
// the maps, BPF programs coming and going in the kernel) are counted in
// the maps of their time, the sample and callchain caches on or off; the
// callchains, of the same addresses, are printed in them.
func TestSampleCacheFollowsMapChanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	path, w, done, u, k := kernelRecording(t)
	dsos := []string{"/bin/a", "/bin/b", "/bin/c"}
	tm := uint64(10)
	for i := range 3000 {
		tm++
		pid := uint32(100 + rng.IntN(3))
		tid := pid + uint32(rng.IntN(2))*1000
		switch rng.IntN(40) {
		case 0:
			w.WriteMmap(&perfdata.Mmap{Info: u, Pid: pid, Tid: pid, Addr: 0x400000, Len: 0x1000, Filename: dsos[rng.IntN(len(dsos))], Prot: 5, SampleID: perfdata.SampleID{Time: tm}})
		case 1:
			child := uint32(200 + rng.IntN(3))
			w.WriteFork(&perfdata.Fork{Pid: child, Ppid: pid, Tid: child, Ptid: pid, Time: tm, SampleID: perfdata.SampleID{Time: tm}})
		case 2:
			w.WriteKsymbol(&perfdata.Ksymbol{Addr: 0xffffffffa0000000, Len: 0x100, KsymType: 1, Flags: uint16(rng.IntN(2)), Name: "bpf_prog_" + dsos[rng.IntN(len(dsos))][5:], SampleID: perfdata.SampleID{Time: tm}})
		case 3:
			w.WriteFinishedRound()
		}
		if rng.IntN(3) == 0 {
			pid = uint32(200 + rng.IntN(3))
			tid = pid
		}
		s := &perfdata.Sample{Info: u, Pid: pid, Tid: tid, Time: tm, Period: 1, IP: 0x400010 + uint64(rng.IntN(2))*8}
		if i%4 == 0 {
			s.Info, s.IP = k, 0xffffffffa0000010
		}
		s.Callchain = []uint64{contextKernel, 0xffffffffa0000010, contextUser, 0x400010, 0x400018}[rng.IntN(3):]
		w.WriteSample(s)
	}
	done()
	for _, opts := range []Options{{NoFiles: true, DebugDir: "-"}, {NoFiles: true, DebugDir: "-", SortKeys: []string{SortPid, SortDSO, SortSym}}, {NoFiles: true, DebugDir: "-", Script: &bytes.Buffer{}}, {NoFiles: true, DebugDir: "-", Children: true}} {
		got, gotCanon := runCached(t, path, opts, false)
		want, wantCanon := runCached(t, path, opts, true)
		if got != want || gotCanon != wantCanon {
			t.Errorf("sort %v, script %v, children %v: with the caches:\n%s\nwithout:\n%s", opts.SortKeys, opts.Script != nil, opts.Children, got, want)
		}
		seen := map[string]bool{}
		re := rowDSO
		if opts.Script != nil {
			re = scriptDSO
		}
		for _, m := range re.FindAllStringSubmatch(want, -1) {
			seen[m[1]] = true
		}
		if len(seen) < 6 {
			t.Errorf("sort %v: rows of %d of the 6 DSOs: the maps did not change under the samples\n%s", opts.SortKeys, len(seen), want)
		}
	}
}

// Samples at thousands of addresses without a symbol, more than the
// sample cache has slots, so that slots change hands all the time: the
// children table's entries each slot keeps for its sample (selfEntry) are
// the entries of the slot's sample, never a former one's, the cache on
// or off.
func TestSelfEntryFollowsSlots(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	path, w, done := tempRecording(t, perfdata.WriterOptions{Arch: "x86_64", Callchains: true})
	u := perfdata.Info{Misc: uint16(perfdata.CPUModeUser)}
	for pid := uint32(100); pid < 103; pid++ {
		w.WriteMmap(&perfdata.Mmap{Info: u, Pid: pid, Tid: pid, Addr: 0x400000, Len: 0x100000, Filename: fmt.Sprintf("/bin/%c", 'a'+pid-100), Prot: 5, SampleID: perfdata.SampleID{Time: 1}})
	}
	for i := range 20000 {
		pid := uint32(100 + rng.IntN(3))
		ip := 0x400000 + uint64(rng.IntN(3000))*16
		w.WriteSample(&perfdata.Sample{Info: u, Pid: pid, Tid: pid, Time: uint64(10 + i), Period: uint64(1 + rng.IntN(3)), IP: ip,
			Callchain: []uint64{contextUser, ip, 0x400000 + uint64(rng.IntN(3000))*16}})
		if i%500 == 0 {
			w.WriteFinishedRound()
		}
	}
	done()
	opts := Options{NoFiles: true, DebugDir: "-", Children: true}
	got, gotCanon := runCached(t, path, opts, false)
	want, wantCanon := runCached(t, path, opts, true)
	if got != want || gotCanon != wantCanon {
		t.Errorf("children table with the caches:\n%s\nwithout:\n%s", got, want)
	}
	if n := strings.Count(want, "\n"); n < 3000 {
		t.Errorf("%d lines: the samples' addresses did not make rows of their own", n)
	}
}

// frameTag tells apart every version, cpumode, event and map flag it
// packs, is never 0, and refuses what does not fit.
func TestFrameTag(t *testing.T) {
	seen := make(map[uint32]string)
	vers := []uint64{0, 1, 2, 1<<tagVerBits - 1}
	for _, ver := range vers {
		for mode := range uint8(1 << tagModeBits) {
			for _, event := range []int{0, 1, maxSlotEvent} {
				for _, inMap := range []bool{false, true} {
					tag, ok := frameTag(ver, mode, event, inMap)
					what := fmt.Sprint(ver, mode, event, inMap)
					if !ok || tag == 0 {
						t.Fatalf("%s: tag %#x, ok %v", what, tag, ok)
					}
					if other, dup := seen[tag]; dup {
						t.Fatalf("%s and %s share tag %#x", what, other, tag)
					}
					seen[tag] = what
				}
			}
		}
	}
	for _, c := range []struct {
		ver   uint64
		mode  uint8
		event int
	}{{1 << tagVerBits, 0, 0}, {0, 1 << tagModeBits, 0}, {0, 0, maxSlotEvent + 1}} {
		if _, ok := frameTag(c.ver, c.mode, c.event, false); ok {
			t.Errorf("frameTag(%d, %d, %d) fits", c.ver, c.mode, c.event)
		}
	}
}

// TestCacheBits checks the caches' sizes by recording size: the largest
// for a size not known (a pipe) or a large recording, more slots than
// one per 256 bytes between, 1 Ki slots at least.
func TestCacheBits(t *testing.T) {
	for _, tc := range []struct {
		size uint64
		max  uint
		want uint
	}{
		{0, chainCacheBits, chainCacheBits},
		{1, chainCacheBits, 10},
		{52 << 10, chainCacheBits, 10},
		{1 << 20, chainCacheBits, 13}, // 4 Ki of 256 bytes: more than 4 Ki slots
		{1<<20 - 1, chainCacheBits, 12},
		{1200 << 10, sampleCacheBits, 13},
		{8 << 20, sampleCacheBits, sampleCacheBits},
		{8<<20 - 1, sampleCacheBits, sampleCacheBits - 1},
		{118 << 20, chainCacheBits, chainCacheBits},
		{1 << 62, chainCacheBits, chainCacheBits},
	} {
		if got := cacheBits(tc.size, tc.max); got != tc.want {
			t.Errorf("cacheBits(%d, %d) = %d, want %d", tc.size, tc.max, got, tc.want)
		}
	}
}

// The sample cache has a slot a KiB of data, 1 Ki at least, 64 Ki from
// 32 MiB of data, and the most for a pipe (size 0).
func TestSampleSlotBits(t *testing.T) {
	for _, tc := range []struct {
		size uint64
		want uint
	}{
		{0, sampleCacheBits},
		{1, 10},
		{3, 10},
		{1<<20 - 1, 10},
		{1 << 20, 11}, // 1 Ki KiB: more than 1 Ki slots
		{4 << 20, 13}, // 4 Ki KiB: more than 4 Ki slots
		{4<<20 - 1, 12},
		{32<<20 - 1, sampleCacheBits - 1},
		{32 << 20, sampleCacheBits},
		{1 << 40, sampleCacheBits},
	} {
		if got := sampleSlotBits(tc.size); got != tc.want {
			t.Errorf("sampleSlotBits(%d) = %d, want %d", tc.size, got, tc.want)
		}
	}
}

// Callchains with context markers perf does not know (which empty the
// chain, and every entry its frames would have made) among known ones,
// at addresses in a map and outside every map, in user and kernel mode:
// the children tables (by dso,sym and by sort keys) are the same whether
// the decoder marks the chains it found no unknown marker in
// (sampleKnownMarkers) or the attributor looks at every chain itself.
func TestKnownMarkersChangeNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	path, w, done, u, k := kernelRecording(t)
	w.WriteMmap(&perfdata.Mmap{Info: u, Pid: 100, Tid: 100, Addr: 0x400000, Len: 0x1000, Filename: "/bin/a", Prot: 5, SampleID: perfdata.SampleID{Time: 1}})
	frames := []uint64{0x400010, 0x400020, 0x900010, 0x900020, 0xffffffff81000010, 0xffffffffa0000010}
	markers := []uint64{contextKernel, contextUser, contextGuestKernel, contextMax + 7}
	unknown := 0
	for i := range 3000 {
		s := &perfdata.Sample{Info: u, Pid: 100, Tid: 100, Time: uint64(10 + i), Period: 1, IP: frames[rng.IntN(2)]}
		if rng.IntN(3) == 0 {
			s.Info, s.IP = k, 0xffffffff81000010
		}
		odd := false
		for range rng.IntN(8) {
			ip := frames[rng.IntN(len(frames))]
			if rng.IntN(3) == 0 { // outside every map, many of them: some first met in an emptied chain
				ip = 0x900000 + 16*uint64(rng.IntN(500))
			}
			if rng.IntN(4) == 0 {
				ip = markers[rng.IntN(len(markers))]
				odd = odd || ip != contextHV && ip != contextKernel && ip != contextUser // every marker here is one
			}
			s.Callchain = append(s.Callchain, ip)
		}
		if odd {
			unknown++
		}
		w.WriteSample(s)
	}
	done()
	if unknown < 300 {
		t.Fatalf("only %d chains with an unknown marker", unknown)
	}
	defer func(off bool) { knownMarkersOff = off }(knownMarkersOff)
	for _, opts := range []Options{{NoFiles: true, DebugDir: "-", Children: true}, {NoFiles: true, DebugDir: "-", Children: true, SortKeys: []string{SortPid, SortDSO, SortSym}}} {
		knownMarkersOff = false
		got, gotCanon := runCached(t, path, opts, false)
		knownMarkersOff = true
		want, wantCanon := runCached(t, path, opts, false)
		if got != want || gotCanon != wantCanon {
			t.Errorf("sort %v: with the decoder's marks:\n%s\nwithout:\n%s", opts.SortKeys, got, want)
		}
	}
}

// FuzzSampleCache: the sample cache, and what kbench report's flat
// table and flat script take from its slots (countCached,
// scriptFromSlot), change neither the table, the script nor the result,
// of any recording.
func FuzzSampleCache(f *testing.F) {
	ks := fuzzSeeds(f, "sleep", "ksym", "pipe", "callchain", "system")
	f.Fuzz(func(t *testing.T, data []byte) {
		cacheOff := func(off bool) func() {
			was := sampleCacheOff
			sampleCacheOff = off
			return func() { sampleCacheOff = was }
		}
		opts := Options{Kallsyms: ks, DebugDir: "-", NoFiles: true, NoSampleSets: true, NoMapSymCounts: true}
		tableUnchanged(t, data, opts, "the sample cache", cacheOff)
		opts.Script, opts.NoCounts, opts.FetchInsn = io.Discard, true, true
		tableUnchanged(t, data, opts, "the sample cache (script)", cacheOff)
	})
}
