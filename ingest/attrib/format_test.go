package attrib

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/google/pprof/profile"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/machine"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/ingest/symbols"
)

// formatRecordings are the recordings the format tests run on.
var formatRecordings = []string{"callchain.data", "system.data", "pipe.data"}

// runFormat attributes a recording of ../perfdata/testdata with the
// kallsyms subset.
func runFormat(t *testing.T, name string) *Result {
	t.Helper()
	return runFormatOpts(t, name, Options{})
}

// runFormatOpts attributes the recording name of ingest/perfdata with the
// committed kallsyms subset, no DSO cache and opts.
func runFormatOpts(t *testing.T, name string, opts Options) *Result {
	t.Helper()
	ks, err := kallsyms.ReadFile(kallsymsSubset)
	if err != nil {
		t.Fatal(err)
	}
	r, err := perfdata.Open("../perfdata/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	opts.Impl, opts.Kallsyms, opts.DebugDir = mapset.BTree, ks, "-"
	res, err := Run(r, opts)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func TestShortName(t *testing.T) {
	for _, tc := range []struct {
		dso    string
		kernel bool
		want   string
	}{
		{"/usr/lib/x86_64-linux-gnu/libc.so.6", false, "libc.so.6"},
		{"/tmp/perf-42.map", false, "[JIT] tid 42"},
		{"[kernel.kallsyms]", true, "[kernel.kallsyms]"},
		{"[vdso]", false, "[vdso]"},
		{"[unknown]", false, "[unknown]"},
		{"[nf_tables]", true, "[nf_tables]"},
		{"/lib/modules/3.8.11/kernel/drivers/net/wireless/ath/ath9k/ath9k.ko", true, "[ath9k]"},
		{"/lib/modules/3.8.11/build/vmlinux", true, "[kernel.vmlinux]"},
		{"/lib/modules/3.8.11/kernel/x.ko", false, "x.ko"},
		{"64/ld-2.17.so", false, "ld-2.17.so"}, // relative (perf 3.10), dso__set_basename
		{"//anon", false, "anon"},
	} {
		if got := ShortName(tc.dso, tc.kernel); got != tc.want {
			t.Errorf("ShortName(%q) = %q, want %q", tc.dso, got, tc.want)
		}
	}
}

// synthetic is a small result with every kind of row.
func synthetic() *Result {
	prog := index.Map{Start: 0x1000, End: 0x2000, Pgoff: 0x1000, Kind: index.KindUser, DSO: "/usr/bin/prog"}
	kern := index.Map{Start: 0xffffffff81000000, End: 0xffffffff82000000, Mapping: index.MappingIdentity, Kind: index.KindKernel, DSO: "[kernel.kallsyms]"}
	r := &Result{
		Samples: 8,
		Unknown: 1,
		ByMap: map[index.Map]*roaring.Bitmap{
			prog: roaring.BitmapOf(0, 1, 2, 3),
			kern: roaring.BitmapOf(4, 5, 6),
		},
		ByMapSym: map[MapSym]Counts{
			{Map: prog, Sym: "main"}:                        {3, 300},
			{Map: prog, Sym: "[unknown]", Addr: 0x1234}:     {1, 100},
			{Map: kern, Sym: "do_syscall_64", Kernel: true}: {3, 500},
			{Sym: "[unknown]", Kernel: true, Addr: 0x10}:    {1, 100},
		},
		BySym: map[Key]Counts{
			{DSO: "/usr/bin/prog", Sym: "main"}:                            {3, 300},
			{DSO: "/usr/bin/prog", Sym: "[unknown]", Addr: 0x1234}:         {1, 100},
			{DSO: "[kernel.kallsyms]", Sym: "do_syscall_64", Kernel: true}: {3, 500},
			{DSO: "[unknown]", Sym: "[unknown]", Kernel: true, Addr: 0x10}: {1, 100},
		},
		Period:  1000,
		Events:  []string{"cpu-clock"},
		ByEvent: []Counts{{8, 1000}},
	}
	return r
}

func TestWriteTableSynthetic(t *testing.T) {
	var b bytes.Buffer
	if err := synthetic().WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	want := `# Unknown: 1 of 8 samples had no map
#
#
# Total Lost Samples: 0
#
# Samples: 8  of event 'cpu-clock'
# Event count (approx.): 1000
#
# Overhead       Samples  Shared Object      Symbol
# ........  ............  .................  ......................
#
    50.00%             3  [kernel.kallsyms]  [k] do_syscall_64
    30.00%             3  prog               [.] main
    10.00%             1  prog               [.] 0x0000000000001234
    10.00%             1  [unknown]          [k] 0x0000000000000010


`
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}

// parsedRow is one parsed data line of WriteTable.
type parsedRow struct {
	percent float64
	samples uint64
	dso     string
	level   string
	sym     string
}

func parseTable(t *testing.T, text string) (samples uint64, rows []parsedRow) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		var unknown uint64
		if _, err := fmt.Sscanf(line, "# Unknown: %d of %d samples had no map", &unknown, &samples); err == nil {
			continue
		}
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 5 || !strings.HasSuffix(f[0], "%") {
			t.Fatalf("table line %q", line)
		}
		p, err1 := strconv.ParseFloat(strings.TrimSuffix(f[0], "%"), 64)
		n, err2 := strconv.ParseUint(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("table line %q: %v %v", line, err1, err2)
		}
		rows = append(rows, parsedRow{p, n, f[2], f[3], strings.Join(f[4:], " ")})
	}
	return samples, rows
}

func TestWriteTable(t *testing.T) {
	for _, name := range formatRecordings {
		t.Run(name, func(t *testing.T) {
			res := runFormat(t, name)
			var b bytes.Buffer
			if err := res.WriteTable(&b); err != nil {
				t.Fatal(err)
			}
			samples, rows := parseTable(t, b.String())
			if samples != res.Samples || samples == 0 {
				t.Errorf("header says %d samples, result %d", samples, res.Samples)
			}
			n, unit := convertUnit(res.Samples)
			if want := fmt.Sprintf("# Samples: %d%c of event", n, unit); !strings.Contains(b.String(), want) {
				t.Errorf("no %q line", want)
			}
			if len(rows) != len(res.BySym) {
				t.Errorf("%d rows, %d (dso, sym) keys", len(rows), len(res.BySym))
			}
			var count uint64
			var pct float64
			for i, row := range rows {
				count += row.samples
				pct += row.percent
				if i > 0 && row.percent > rows[i-1].percent {
					t.Errorf("row %d: %.2f%% after %.2f%%", i, row.percent, rows[i-1].percent)
				}
				if row.level != "[k]" && row.level != "[.]" {
					t.Errorf("row %d: level %q", i, row.level)
				}
			}
			if count != res.Samples {
				t.Errorf("rows count %d samples, result %d", count, res.Samples)
			}
			if math.Abs(pct-100) > 0.005*float64(len(rows))+1e-9 {
				t.Errorf("percentages sum to %.2f", pct)
			}
		})
	}
}

func TestWriteJSON(t *testing.T) {
	for _, name := range formatRecordings {
		t.Run(name, func(t *testing.T) {
			res := runFormat(t, name)
			var b bytes.Buffer
			if err := res.WriteJSON(&b); err != nil {
				t.Fatal(err)
			}
			var rep JSONReport
			dec := json.NewDecoder(&b)
			dec.DisallowUnknownFields()
			if err := dec.Decode(&rep); err != nil {
				t.Fatal(err)
			}
			if rep.Digest != res.Digest() || rep.Samples != res.Samples || rep.Unknown != res.Unknown {
				t.Errorf("digest %s samples %d unknown %d; want %s %d %d", rep.Digest, rep.Samples, rep.Unknown, res.Digest(), res.Samples, res.Unknown)
			}
			var symCount, mapCount uint64
			for _, s := range rep.Symbols {
				symCount += s.Samples
				var addr uint64
				if _, err := fmt.Sscanf(s.Addr, "0x%x", &addr); err != nil {
					t.Errorf("symbol %+v: addr: %v", s, err)
				}
				ev := slices.Index(res.Events, s.Event)
				if want := res.BySym[Key{DSO: s.DSO, Sym: s.Sym, Kernel: s.Kernel, Addr: addr, Event: ev}]; ev < 0 || want.Samples != s.Samples || want.Period != s.Period {
					t.Errorf("symbol %+v: result has %+v", s, want)
				}
			}
			byStart := make(map[string]index.Map)
			for mp := range res.ByMap {
				byStart[hexAddr(mp.Start)+"-"+hexAddr(mp.End)+" "+mp.DSO] = mp
			}
			for _, m := range rep.Maps {
				mapCount += m.Samples
				mp, ok := byStart[m.Start+"-"+m.End+" "+m.DSO]
				if !ok {
					t.Errorf("map %+v not in the result", m)
					continue
				}
				data, _ := res.ByMap[mp].ToBytes()
				sum := sha256.Sum256(data)
				if m.SampleSetSHA256 != hex.EncodeToString(sum[:]) || m.Kind != mp.Kind.String() || m.Pgoff != hexAddr(mp.Pgoff) {
					t.Errorf("map %+v: want %s, kind %s", m, hex.EncodeToString(sum[:]), mp.Kind)
				}
			}
			if len(rep.Maps) != len(res.ByMap) || symCount != res.Samples || mapCount != res.Samples-res.Unknown {
				t.Errorf("%d maps (result %d), symbol samples %d, map samples %d; %d samples, %d unknown",
					len(rep.Maps), len(res.ByMap), symCount, mapCount, res.Samples, res.Unknown)
			}
		})
	}
}

// The profile holds every sample once, valued by count and period; its
// leaf functions count what the table's self column does; every frame
// is a Location at its real address in its map.
func TestPprof(t *testing.T) {
	for _, name := range formatRecordings {
		t.Run(name, func(t *testing.T) {
			res := runFormatOpts(t, name, Options{Stacks: true})
			var b bytes.Buffer
			if err := res.WritePprof(&b); err != nil {
				t.Fatal(err)
			}
			p, err := profile.Parse(&b)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.CheckValid(); err != nil {
				t.Fatal(err)
			}
			if len(p.SampleType) != 2 || p.SampleType[0].Type != "samples" || p.SampleType[1].Type != res.Events[res.Stacks[0].Event] {
				t.Errorf("sample types %v", p.SampleType)
			}
			var total, period int64
			leaf := make(map[[2]string]int64)
			for _, s := range p.Sample {
				total += s.Value[0]
				period += s.Value[1]
				ev := 0
				if names := s.Label["event"]; len(names) == 1 {
					ev = slices.Index(res.Events, names[0])
				}
				wantCPU := 0
				if res.SampleTypes[ev]&perfdata.SampleFormatCPU != 0 {
					wantCPU = 1
				}
				if len(s.Label["comm"]) != 1 || len(s.Label["pid"]) != 1 || len(s.Label["tid"]) != 1 || len(s.Label["cpu"]) != wantCPU {
					t.Fatalf("labels %v %v", s.Label, s.NumLabel)
				}
				for _, loc := range s.Location {
					if loc.Mapping != nil && (loc.Address < loc.Mapping.Start || loc.Address >= loc.Mapping.Limit) {
						t.Fatalf("location at %#x outside its mapping %#x-%#x", loc.Address, loc.Mapping.Start, loc.Mapping.Limit)
					}
				}
				dso, fn := symbols.Unknown, symbols.Unknown
				if loc := s.Location[0]; loc.Mapping != nil {
					dso = loc.Mapping.File
				}
				if l := s.Location[0].Line; len(l) > 0 {
					fn = l[0].Function.Name
				}
				leaf[[2]string{dso, fn}] += s.Value[0]
			}
			if uint64(total) != res.Samples || uint64(period) != res.Period {
				t.Errorf("profile: %d samples, period %d; result %d, %d", total, period, res.Samples, res.Period)
			}
			want := make(map[[2]string]int64)
			for k, n := range res.BySym {
				want[[2]string{k.DSO, k.Sym}] += int64(n.Samples)
			}
			for k, n := range want {
				if leaf[k] != n {
					t.Errorf("%v: profile leaves %d, table %d", k, leaf[k], n)
				}
			}
		})
	}
}

// A profile of several events sampled has a count and a period column
// per event, in event order: each sample valued in its event's columns
// alone, each event's columns totalling its samples and period.
func TestPprofEvents(t *testing.T) {
	res := runFormatOpts(t, "multi.data", Options{Stacks: true})
	if len(res.Events) != 2 || res.ByEvent[0].Samples == 0 || res.ByEvent[1].Samples == 0 {
		t.Fatalf("events %q, counts %v: the test wants two events sampled", res.Events, res.ByEvent)
	}
	p, err := res.Pprof()
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, st := range p.SampleType {
		types = append(types, st.Type+"/"+st.Unit)
	}
	want := []string{"cpu-clock_samples/count", "cpu-clock/nanoseconds", "task-clock_samples/count", "task-clock/nanoseconds"}
	if !slices.Equal(types, want) || p.DefaultSampleType != "cpu-clock" {
		t.Fatalf("sample types %q, default %q; want %q, cpu-clock", types, p.DefaultSampleType, want)
	}
	totals := make([]int64, 4)
	for _, s := range p.Sample {
		ev := slices.Index(res.Events, s.Label["event"][0])
		for i, v := range s.Value {
			if v != 0 && i/2 != ev {
				t.Fatalf("a sample of %s valued %v", res.Events[ev], s.Value)
			}
			totals[i] += v
		}
	}
	for ev := range 2 {
		if c := res.ByEvent[ev]; totals[2*ev] != int64(c.Samples) || totals[2*ev+1] != int64(c.Period) {
			t.Errorf("%s: profile %d samples, period %d; table %d, %d", res.Events[ev], totals[2*ev], totals[2*ev+1], c.Samples, c.Period)
		}
	}
}

// A hand-made stack set becomes the profile expected, frame for frame.
func TestPprofSynthetic(t *testing.T) {
	r := synthetic()
	prog := index.Map{Start: 0x1000, End: 0x2000, Pgoff: 0x1000, Kind: index.KindUser, DSO: "/usr/bin/prog"}
	r.BuildIDs = map[string]string{"/usr/bin/prog": "00112233"}
	r.SampleTypes = []perfdata.SampleFormat{perfdata.SampleFormatCPU}
	r.Stacks = []Stack{
		{Pid: 7, Tid: 8, Comm: "prog", CPU: 1, Frames: []Frame{{0x1010, prog, "leaf"}, {0x1500, prog, "main"}}, Counts: Counts{2, 200}},
		{Pid: 7, Tid: 7, Comm: "prog", Frames: []Frame{{0x1234, prog, symbols.Unknown}, {0x99, index.Map{}, symbols.Unknown}}, Counts: Counts{1, 100}},
	}
	p, err := r.Pprof()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Sample) != 2 || len(p.Mapping) != 1 || len(p.Location) != 4 || len(p.Function) != 2 {
		t.Fatalf("%d samples, %d mappings, %d locations, %d functions", len(p.Sample), len(p.Mapping), len(p.Location), len(p.Function))
	}
	m := p.Mapping[0]
	if m.Start != 0x1000 || m.Limit != 0x2000 || m.Offset != 0x1000 || m.File != "/usr/bin/prog" || m.BuildID != "00112233" {
		t.Errorf("mapping %+v", m)
	}
	s := p.Sample[0]
	if s.Value[0] != 2 || s.Value[1] != 200 || s.Label["comm"][0] != "prog" || s.Label["tid"][0] != "8" || s.Label["cpu"][0] != "1" {
		t.Errorf("sample %v %v %v", s.Value, s.Label, s.NumLabel)
	}
	if s.Location[0].Address != 0x1010 || s.Location[0].Line[0].Function.Name != "leaf" || s.Location[1].Line[0].Function.Name != "main" {
		t.Errorf("stack %v", s.Location)
	}
	if u := p.Sample[1].Location; len(u[0].Line) != 0 || u[1].Mapping != nil || u[1].Address != 0x99 {
		t.Errorf("unresolved frames %v", u)
	}
	if p.SampleType[1].Type != "cpu-clock" || p.SampleType[1].Unit != "nanoseconds" {
		t.Errorf("sample types %v", p.SampleType)
	}
}

// Folding follows stackcollapse-perf.pl: outermost first, the comm's
// spaces as underscores, unresolved frames by DSO base name, names tidied,
// lines in byte order, counts by period.
func TestWriteFoldedSynthetic(t *testing.T) {
	prog := index.Map{Start: 0x1000, End: 0x2000, Kind: index.KindUser, DSO: "/usr/bin/prog"}
	r := &Result{Events: []string{"cycles"}, PrintsPeriod: []bool{true}, Stacks: []Stack{
		{Comm: "my prog", Frames: []Frame{{0x1010, prog, "f(int)"}, {0x1500, prog, "main"}}, Counts: Counts{2, 200}},
		{Comm: "my prog", Frames: []Frame{{0x1234, prog, symbols.Unknown}, {0x99, index.Map{}, symbols.Unknown}}, Counts: Counts{1, 100}},
		{Comm: "my prog", Tid: 9, Frames: []Frame{{0x1010, prog, "f(int)"}, {0x1500, prog, "main"}}, Counts: Counts{1, 50}},
		{Comm: "java", Frames: []Frame{{0x1, prog, "Lorg/x/Y;.run(I)V"}, {0x2, prog, "(anonymous)"}, {0x3, prog, `a;b"c'`}}, Counts: Counts{1, 7}},
	}}
	var b bytes.Buffer
	if err := r.WriteFolded(&b); err != nil {
		t.Fatal(err)
	}
	want := "java;a:bc;org/x/Y:.run 7\nmy_prog;[unknown];[prog] 100\nmy_prog;main;f 250\n"
	if b.String() != want {
		t.Errorf("folded:\n%s\nwant:\n%s", b.String(), want)
	}
	// A tracepoint's lines in perf script have no period: stackcollapse
	// counts its samples.
	r.PrintsPeriod[0] = false
	b.Reset()
	if err := r.WriteFolded(&b); err != nil {
		t.Fatal(err)
	}
	want = "java;a:bc;org/x/Y:.run 1\nmy_prog;[unknown];[prog] 1\nmy_prog;main;f 3\n"
	if b.String() != want {
		t.Errorf("folded, a tracepoint's:\n%s\nwant:\n%s", b.String(), want)
	}
}

// The folded stacks of a recording total its period, and their leaves
// the table's self counts.
func TestWriteFoldedTotals(t *testing.T) {
	for _, name := range formatRecordings {
		t.Run(name, func(t *testing.T) {
			res := runFormatOpts(t, name, Options{Stacks: true})
			var b bytes.Buffer
			if err := res.WriteFolded(&b); err != nil {
				t.Fatal(err)
			}
			var total uint64
			for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
				i := strings.LastIndexByte(line, ' ')
				n, err := strconv.ParseUint(line[i+1:], 10, 64)
				if err != nil {
					t.Fatalf("line %q: %v", line, err)
				}
				total += n
			}
			want := res.ByEvent[res.Stacks[0].Event]
			if !res.PrintsPeriod[res.Stacks[0].Event] {
				want.Period = want.Samples
			}
			if n := want.Period; total != n {
				t.Errorf("folded total %d, event period %d", total, n)
			}
		})
	}
}

func TestAppendScriptLine(t *testing.T) {
	for _, tc := range []struct {
		lead     byte
		addr     uint64
		sym, dso string
	}{{' ', 0, "a", "b"}, {'\t', 0xffffffff81000000, "[unknown]", "[kernel.kallsyms]"}, {' ', 0x7f, "x y", "/lib/z.so"}, {' ', ^uint64(0), "s", "d"}} {
		want := fmt.Sprintf("%c%16x %s (%s)\n", tc.lead, tc.addr, tc.sym, tc.dso)
		if got := string(appendScriptLine(nil, tc.lead, tc.addr, tc.sym, tc.dso)); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

// Folded stacks equal FlameGraph's stackcollapse-perf.pl on perf
// script's output (testdata/README.md says how the golden was made).
func TestWriteFoldedGolden(t *testing.T) {
	res := runFormatOpts(t, "callchain.data", Options{Stacks: true})
	var b bytes.Buffer
	if err := res.WriteFolded(&b); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/callchain.folded")
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("folded differs from stackcollapse-perf.pl's:\n%s\nwant:\n%s", b.String(), want)
	}
}

// NoCounts keeps the script lines and the totals, and no counts.
func TestNoCounts(t *testing.T) {
	var with, without bytes.Buffer
	full := runFormatOpts(t, "callchain.data", Options{Script: &with})
	bare := runFormatOpts(t, "callchain.data", Options{Script: &without, NoCounts: true})
	if with.String() != without.String() || with.Len() == 0 {
		t.Error("script output differs with NoCounts")
	}
	if bare.Samples != full.Samples || bare.Period != full.Period || len(bare.BySym) != 0 || len(bare.ByMap) != 0 || len(full.BySym) == 0 {
		t.Errorf("NoCounts: %d samples (want %d), %d symbol and %d map counts (want none)", bare.Samples, full.Samples, len(bare.BySym), len(bare.ByMap))
	}
}

// NoMapSymCounts leaves ByMapSym empty and changes nothing else: the
// counts by (dso, symbol), by event and by map, the hidden rows, the
// tables, with and without children, and the JSON form.
func TestNoMapSymCounts(t *testing.T) {
	for _, name := range []string{"system.data", "multi.data", "ksym.data", "pipe.data"} {
		full := runFormatOpts(t, name, Options{})
		bare := runFormatOpts(t, name, Options{NoMapSymCounts: true})
		if len(bare.ByMapSym) != 0 || len(full.ByMapSym) == 0 {
			t.Fatalf("%s: %d counts by map and symbol with NoMapSymCounts, %d without", name, len(bare.ByMapSym), len(full.ByMapSym))
		}
		if !reflect.DeepEqual(full.BySym, bare.BySym) || !reflect.DeepEqual(full.ByEvent, bare.ByEvent) ||
			!reflect.DeepEqual(full.ByMap, bare.ByMap) || !reflect.DeepEqual(full.hidden, bare.hidden) {
			t.Errorf("%s: counts by symbol, event or map, or hidden rows, differ with NoMapSymCounts", name)
		}
	}
	for _, children := range []bool{false, true} {
		full := runFormatOpts(t, "callchain.data", Options{Children: children})
		bare := runFormatOpts(t, "callchain.data", Options{Children: children, NoMapSymCounts: true})
		if len(bare.ByMapSym) != 0 || len(full.ByMapSym) == 0 {
			t.Fatalf("children %v: %d counts by map and symbol with NoMapSymCounts, %d without", children, len(bare.ByMapSym), len(full.ByMapSym))
		}
		var a, b bytes.Buffer
		if err := full.WriteTable(&a); err != nil {
			t.Fatal(err)
		}
		if err := bare.WriteTable(&b); err != nil {
			t.Fatal(err)
		}
		if a.String() != b.String() || a.Len() == 0 {
			t.Errorf("children %v: the table differs with NoMapSymCounts", children)
		}
		ja, err := full.JSON()
		if err != nil {
			t.Fatal(err)
		}
		jb, err := bare.JSON()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(ja, jb) {
			t.Errorf("children %v: the JSON report differs with NoMapSymCounts", children)
		}
	}
}

// KernelLoaded is called once when the kernel's symbols load (at the
// first kernel sample), however many kernel samples follow.
func TestKernelLoadedHook(t *testing.T) {
	for _, tc := range []struct {
		name string
		want int
	}{
		{"system.data", 1},
		{"ksym.data", 1},
	} {
		n := 0
		res := runFormatOpts(t, tc.name, Options{KernelLoaded: func() { n++ }})
		if n != tc.want {
			t.Errorf("%s: KernelLoaded called %d times, want %d", tc.name, n, tc.want)
		}
		var kernel bool
		for k := range res.BySym {
			kernel = kernel || k.Kernel
		}
		if !kernel {
			t.Errorf("%s: no kernel samples to load the kernel for", tc.name)
		}
	}
}

// TestAppendPercent checks appendPercent against strconv.AppendFloat:
// shares of random counts (as share computes them), values at and near
// the ties of the last digit, and values out of the fast path's range.
func TestAppendPercent(t *testing.T) {
	check := func(x float64) {
		t.Helper()
		if got, want := string(appendPercent(nil, x)), strconv.FormatFloat(x, 'f', 2, 64); got != want {
			t.Fatalf("appendPercent(%v) = %s, want %s", x, got, want)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200000 {
		total := 1 + rng.Uint64N(1<<uint(1+rng.IntN(50)))
		check(share(Counts{Period: rng.Uint64N(total + 1)}, Counts{Period: total}))
	}
	for i := range 100000 {
		tie := float64(i)/100 + 0.005
		for _, x := range []float64{tie, math.Nextafter(tie, 0), math.Nextafter(tie, 1e9), float64(i) / 100, float64(i)/100 + 0.00499999} {
			check(x)
		}
	}
	for _, x := range []float64{0, 100, 99.995, 0.125, 0.375, 1 << 40, 1e300, math.Inf(1), math.NaN(), math.Copysign(0, -1), -1.5, math.SmallestNonzeroFloat64} {
		check(x)
	}
}

// BenchmarkAppendPercent compares appendPercent with the AppendFloat it
// stands in for, on shares as a table writes them.
func BenchmarkAppendPercent(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	xs := make([]float64, 4096)
	for i := range xs {
		xs[i] = share(Counts{Period: rng.Uint64N(1000)}, Counts{Period: 1000 + rng.Uint64N(1<<20)})
	}
	var buf [32]byte
	b.Run("appendPercent", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			appendPercent(buf[:0], xs[i%len(xs)])
		}
	})
	b.Run("AppendFloat", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			strconv.AppendFloat(buf[:0], xs[i%len(xs)], 'f', 2, 64)
		}
	})
}

// cutPad leaves what fmt's "%-*.*s" writes, multibyte and invalid
// UTF-8 included.
func TestCutPad(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	alphabet := []string{"a", "Z", " ", "é", "日", "\xff", "\xe6\x97", ":"}
	for range 5000 {
		var s strings.Builder
		for range rng.IntN(12) {
			s.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		width := rng.IntN(10)
		var b bytes.Buffer
		b.WriteString("é ") // what came before is kept
		b.WriteString(s.String())
		cutPad(&b, len("é "), width)
		if want := fmt.Sprintf("é %-*.*s", width, width, s.String()); b.String() != want {
			t.Fatalf("cutPad(%d) of %q = %q, want %q", width, s.String(), b.String(), want)
		}
	}
}

// A small recording reads kallsyms only when a kernel sample needs it:
// perf record lists the kernel in the build-id header of user-only
// recordings too (ro_sample-5.6: 13 cycles:u samples), and reading it
// early there held the list for nothing. A large one, or a pipe, reads
// it from the start.
func TestKallsymsReadWhenNeeded(t *testing.T) {
	ks, err := kallsyms.ReadFile(kallsymsSubset)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file  string
		loads int
	}{
		{"../../cmd/kbench/testdata/foreign/perf.data.ro_sample-5.6", 0},
		{"../perfdata/testdata/system.data", 1},
		{"../perfdata/testdata/ksym.data", 1},
	} {
		r, err := perfdata.Open(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		if machine.KernelEntry(kernelBuildIDs(r.Features())) < 0 {
			t.Fatalf("%s: the header does not list the kernel: no early read to leave", tc.file)
		}
		loads := 0
		_, err = Run(r, Options{DebugDir: "-", LoadKallsyms: func() (*kallsyms.List, error) {
			loads++
			return kallsyms.NewList(ks), nil
		}})
		r.Close()
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if loads != tc.loads {
			t.Errorf("%s: kallsyms read %d times, want %d", tc.file, loads, tc.loads)
		}
	}
	for _, tc := range []struct {
		size  uint64
		early bool
	}{
		{0, true}, // a pipe: its size is not known
		{1, false},
		{earlyKallsymsMinData - 1, false},
		{earlyKallsymsMinData, true},
		{1 << 30, true},
	} {
		if got := readsKallsymsEarly(tc.size); got != tc.early {
			t.Errorf("readsKallsymsEarly(%d) = %v, want %v", tc.size, got, tc.early)
		}
	}
}

// A table's sample count goes through perf's convert_unit: past 1000 it
// is divided, truncated, and given a unit.
func TestConvertUnit(t *testing.T) {
	for _, tc := range []struct {
		n, want uint64
		unit    byte
	}{
		{0, 0, ' '}, {439, 439, ' '}, {1000, 1000, ' '}, {1001, 1, 'K'}, {6880, 6, 'K'},
		{1000999, 1000, 'K'}, {1001000, 1, 'M'}, {2487026, 2, 'M'}, {1001000000, 1, 'G'},
		{1 << 62, 4611686018, 'G'}, // no unit past G
	} {
		if n, unit := convertUnit(tc.n); n != tc.want || unit != tc.unit {
			t.Errorf("convertUnit(%d) = %d%c, want %d%c", tc.n, n, unit, tc.want, tc.unit)
		}
	}
}
