package perfdata

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/internal/perftest"
)

// recordings are the committed real recordings (see testdata/README.md).
var recordings = []string{
	"sleep", "busy", "system", "callchain", "samplecpu", "hifreq",
	"multi", "zstd", "pipe", "pipezstd", "ksym",
}

// dumpLine is one record line of perf report -D.
type dumpLine struct {
	off   int64
	size  int
	name  string
	rest  string
	chain []uint64
}

var dumpRE = regexp.MustCompile(`^(?:\d+ )?\d+ 0x([0-9a-f]+) \[0x([0-9a-f]+)\]: PERF_RECORD_([A-Z0-9_]+)(.*)$`)

func readDump(t *testing.T, path string) []dumpLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []dumpLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if m := dumpRE.FindStringSubmatch(line); m != nil {
			off, _ := strconv.ParseInt(m[1], 16, 64)
			size, _ := strconv.ParseInt(m[2], 16, 64)
			out = append(out, dumpLine{off: off, size: int(size), name: m[3], rest: m[4]})
			continue
		}
		if strings.HasPrefix(line, ".....") && len(out) > 0 {
			f := strings.Fields(line)
			v, err := strconv.ParseUint(f[len(f)-1], 16, 64)
			if err != nil {
				t.Fatalf("%s: bad callchain line %q", path, line)
			}
			last := &out[len(out)-1]
			last.chain = append(last.chain, v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// perfText formats a record the way perf report -D prints the rest of its
// line (for the types whose text this package can reproduce).
func perfText(rec Record) (string, bool) {
	hex0 := func(v uint64) string { // perf's %#PRIx64: 0 has no 0x
		if v == 0 {
			return "0"
		}
		return fmt.Sprintf("%#x", v)
	}
	switch r := rec.(type) {
	case *Sample:
		return fmt.Sprintf("(IP, %#x): %d/%d: %#x period: %d addr: %s", r.Misc, r.Pid, r.Tid, r.IP, r.Period, hex0(r.Addr)), true
	case *Mmap:
		if r.Type == RecordMmap {
			x := "r"
			if r.Misc&MiscMmapData == 0 {
				x = "x"
			}
			return fmt.Sprintf(" %d/%d: [%#x(%#x) @ %#x]: %s %s", int32(r.Pid), int32(r.Tid), r.Addr, r.Len, r.Pgoff, x, r.Filename), true
		}
		return "", false
	case *Comm:
		exec := ""
		if r.Exec() {
			exec = " exec"
		}
		return fmt.Sprintf("%s: %s:%d/%d", exec, r.Comm, r.Pid, r.Tid), true
	case *Fork:
		return fmt.Sprintf("(%d:%d):(%d:%d)", r.Pid, r.Tid, r.Ppid, r.Ptid), true
	case *Exit:
		return fmt.Sprintf("(%d:%d):(%d:%d)", r.Pid, r.Tid, r.Ppid, r.Ptid), true
	case *Ksymbol:
		return fmt.Sprintf(" addr %x len %d type %d flags %#x name %s", r.Addr, r.Len, r.KsymType, r.Flags, r.Name), true
	case *BPFEvent:
		return fmt.Sprintf(" type %d, flags %d, id %d", r.EventType, r.Flags, r.ID), true
	case *IDIndex:
		return fmt.Sprintf(" nr: %d", len(r.Entries)), true
	}
	return "", false
}

// perfName maps a record type to the name perf report -D prints.
func perfName(t RecordType) string {
	if t == RecordHeaderFeature {
		return "FEATURE"
	}
	return t.String()
}

type gotRecord struct {
	off   int64
	size  int
	name  string
	text  string
	ok    bool
	chain []uint64
	// sample fields
	sample             bool
	pid, tid, cpu      uint32
	time, ip           uint64
	hasCPU, compressed bool
}

func readRecords(t *testing.T, r *Reader) []gotRecord {
	t.Helper()
	var out []gotRecord
	var base int64 // perf report -D offsets count from the end of a pipe header
	if r.Header().Pipe {
		base = pipeHeaderSize
	}
	for r.Next() {
		rec := r.Record()
		in := rec.RecordInfo()
		g := gotRecord{off: in.Offset - base, size: int(in.Size), name: perfName(in.Type), compressed: in.Compressed}
		g.text, g.ok = perfText(rec)
		if s, ok := rec.(*Sample); ok {
			g.sample, g.pid, g.tid, g.time, g.ip, g.cpu = true, s.Pid, s.Tid, s.Time, s.IP, s.CPU
			g.hasCPU = s.Attr.SampleType&SampleFormatCPU != 0
			g.chain = slices.Clone(s.Callchain)
		}
		out = append(out, g)
	}
	if err := r.Err(); err != nil {
		t.Fatalf("reading: %v", err)
	}
	return out
}

// checkAgainstDump compares the records with perf report -D's dump: every
// record perf prints (it does not print HEADER_ATTR) must be there with
// the same offset, size, type and text, and callchain.
func checkAgainstDump(t *testing.T, got []gotRecord, dump []dumpLine) (matched, total int) {
	t.Helper()
	type key struct {
		off  int64
		size int
		name string
	}
	byKey := map[key][]dumpLine{}
	for _, d := range dump {
		k := key{d.off, d.size, d.name}
		byKey[k] = append(byKey[k], d)
	}
	n := 0
	for _, g := range got {
		if g.name == "HEADER_ATTR" {
			continue
		}
		n++
		k := key{g.off, g.size, g.name}
		ds := byKey[k]
		if len(ds) == 0 {
			t.Errorf("record %s at %#x size %#x: not in perf's dump", g.name, g.off, g.size)
			continue
		}
		d := ds[0]
		byKey[k] = ds[1:]
		bad := false
		if g.ok && !strings.HasPrefix(d.rest, g.text) {
			t.Errorf("record %s at %#x: perf printed %q, we have %q", g.name, g.off, d.rest, g.text)
			bad = true
		}
		if g.sample && !slices.Equal(g.chain, d.chain) {
			t.Errorf("SAMPLE at %#x: callchain %x, perf %x", g.off, g.chain, d.chain)
			bad = true
		}
		if g.sample {
			total++
			if !bad {
				matched++
			}
		}
	}
	if n != len(dump) {
		t.Errorf("%d records (without HEADER_ATTR), perf dumped %d", n, len(dump))
	}
	return matched, total
}

var scriptRE = regexp.MustCompile(`^\s*(\d+)/(\d+)\s+(?:\[(\d+)\]\s+)?(\d+)\.(\d{9}):\s+([0-9a-f]+)\s*$`)

// checkAgainstScript compares the samples with perf script's output, which
// is ordered by time: ours, in file order, are stably sorted by time first.
func checkAgainstScript(t *testing.T, got []gotRecord, path string) (matched, total int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if line == "" {
			continue
		}
		m := scriptRE.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("%s: cannot parse %q", path, line)
		}
		ip, _ := strconv.ParseUint(m[6], 16, 64)
		cpu := ""
		if m[3] != "" {
			c, _ := strconv.Atoi(m[3])
			cpu = strconv.Itoa(c)
		}
		want = append(want, fmt.Sprintf("%s/%s cpu %s time %s%s ip %#x", m[1], m[2], cpu, strings.TrimLeft(m[4], "0"), m[5], ip))
	}
	var samples []gotRecord
	for _, g := range got {
		if g.sample {
			samples = append(samples, g)
		}
	}
	slices.SortStableFunc(samples, func(a, b gotRecord) int {
		switch {
		case a.time < b.time:
			return -1
		case a.time > b.time:
			return 1
		}
		return 0
	})
	var have []string
	for _, s := range samples {
		cpu := ""
		if s.hasCPU {
			cpu = strconv.Itoa(int(s.cpu))
		}
		have = append(have, fmt.Sprintf("%d/%d cpu %s time %d ip %#x", s.pid, s.tid, cpu, s.time, s.ip))
	}
	for i := range min(len(want), len(have)) {
		if want[i] == have[i] {
			matched++
		} else if matched+10 > i {
			t.Errorf("sample %d: perf script %q, we have %q", i, want[i], have[i])
		}
	}
	if len(want) != len(have) {
		t.Errorf("perf script printed %d samples, we have %d", len(want), len(have))
	}
	return matched, len(want)
}

func TestRecordings(t *testing.T) {
	for _, name := range recordings {
		t.Run(name, func(t *testing.T) {
			data := filepath.Join("testdata", name+".data")
			r, err := Open(data)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got := readRecords(t, r)
			if err := r.FeaturesErr(); err != nil {
				t.Errorf("features: %v", err)
			}
			dm, dt := checkAgainstDump(t, got, readDump(t, filepath.Join("testdata", name+".dump")))
			sm, st := checkAgainstScript(t, got, filepath.Join("testdata", name+".script"))
			if dt == 0 || st == 0 {
				t.Errorf("no samples")
			}
			t.Logf("%s: perf report -D samples matched %d/%d; perf script samples matched %d/%d; %d records", name, dm, dt, sm, st, len(got))

			// The same through the stream API.
			f, err := os.Open(data)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			sr, err := NewReader(bufio.NewReader(f))
			if err != nil {
				t.Fatal(err)
			}
			got2 := readRecords(t, sr)
			if !slices.EqualFunc(got, got2, func(a, b gotRecord) bool { return fmt.Sprint(a) == fmt.Sprint(b) }) {
				t.Errorf("stream reader: %d records differ from the file reader's %d", len(got2), len(got))
			}
			if fmt.Sprint(sr.Features()) != fmt.Sprint(r.Features()) && !r.Header().Pipe {
				// Sections map order is irrelevant; compare key fields.
				a, b := sr.Features(), r.Features()
				if a.Hostname != b.Hostname || a.OSRelease != b.OSRelease || len(a.BuildIDs) != len(b.BuildIDs) || !slices.Equal(a.Cmdline, b.Cmdline) {
					t.Errorf("stream reader features differ: %+v vs %+v", a, b)
				}
			}
		})
	}
}

// TestLive records a fresh file with the installed perf and compares.
func TestLive(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	perf, err := exec.LookPath("perf")
	if err != nil {
		t.Skip("perf is not installed")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "live.data")
	if err := perftest.Record(data, []string{"-g", "-e", "cpu-clock"}, "sh", "-c", "i=0; while [ $i -lt 5000 ]; do i=$((i+1)); done"); err != nil {
		t.Skip(err)
	}
	script, err := exec.Command(perf, "script", "-i", data, "--ns", "-F", "pid,tid,time,ip", "--hide-call-graph").Output()
	if err != nil {
		t.Skipf("perf script failed: %v", err)
	}
	dump, err := exec.Command(perf, "report", "-D", "-i", data).Output()
	if err != nil {
		t.Skipf("perf report -D failed: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "live.script"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "live.dump"), dump, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(data)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := readRecords(t, r)
	dm, dt := checkAgainstDump(t, got, readDump(t, filepath.Join(dir, "live.dump")))
	sm, st := checkAgainstScript(t, got, filepath.Join(dir, "live.script"))
	t.Logf("live: perf report -D samples matched %d/%d; perf script %d/%d", dm, dt, sm, st)
}

// EVENT_DESC names the events of a recording by sample id.
func TestEventDesc(t *testing.T) {
	r, err := Open("testdata/multi.data")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f := r.Features()
	if len(f.Events) != 2 || f.Events[0].Name != "cpu-clock" || f.Events[1].Name != "task-clock" {
		t.Fatalf("events %+v", f.Events)
	}
	for i, a := range r.Attrs() {
		if len(a.IDs) == 0 || f.EventName(a.IDs[0]) != f.Events[i].Name {
			t.Errorf("attr %d ids %v: name %q", i, a.IDs, f.EventName(a.IDs[0]))
		}
	}
	if f.EventName(^uint64(0)) != "" {
		t.Error("an unknown id has a name")
	}
}

// SAMPLE_TIME gives the first and last samples' times, which perf report
// --header-only prints in microseconds ("time of first sample :
// 524.918257"); a section too short for them is an error naming the
// offset of the field cut short.
func TestSampleTime(t *testing.T) {
	r, err := Open("testdata/callchain.data")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if f := r.Features(); f.FirstSampleTime/1000 != 524_918_257 || f.LastSampleTime/1000 != 524_970_093 {
		t.Errorf("sample times %d, %d; want 524.918257 s, 524.970093 s", f.FirstSampleTime, f.LastSampleTime)
	}
	var f Features
	err = f.parse(FeatSampleTime, make([]byte, 12), binary.LittleEndian, 0x200)
	if err == nil || !strings.Contains(err.Error(), "0x208") {
		t.Errorf("12 bytes of sample times: %v", err)
	}
}

// GROUP_DESC gives each group's name, leader index and size; a count
// that cannot fit is an error naming the section's offset.
func TestGroupDesc(t *testing.T) {
	le := binary.LittleEndian
	str := func(b []byte, s string) []byte {
		n := (len(s) + 1 + 7) &^ 7 // perf pads strings to 8 bytes
		b = le.AppendUint32(b, uint32(n))
		return append(b, append([]byte(s), make([]byte, n-len(s))...)...)
	}
	b := le.AppendUint32(nil, 2)
	b = le.AppendUint32(le.AppendUint32(str(b, "{anon_group}"), 0), 2)
	b = le.AppendUint32(le.AppendUint32(str(b, "mine"), 3), 3)
	var f Features
	if err := f.parse(FeatGroupDesc, b, le, 0x100); err != nil {
		t.Fatal(err)
	}
	want := []GroupDesc{{"{anon_group}", 0, 2}, {"mine", 3, 3}}
	if !slices.Equal(f.Groups, want) {
		t.Errorf("groups %+v, want %+v", f.Groups, want)
	}
	err := f.parse(FeatGroupDesc, le.AppendUint32(nil, 1000), le, 0x100)
	if err == nil || !strings.Contains(err.Error(), "0x100") {
		t.Errorf("1000 groups in 4 bytes: %v", err)
	}
}
