package attrib

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/ingest/symbols"
	"github.com/kmapindex/kmapindex/internal/linediff"
	"github.com/kmapindex/kmapindex/internal/perftest"
)

// headerBuildID encodes a PERF_RECORD_HEADER_BUILD_ID as perf inject -b
// writes it into a pipe (for the host, pid -1): misc the cpumode, a 20-byte id without
// PERF_RECORD_MISC_BUILD_ID_SIZE, the file name padded to 64 bytes.
func headerBuildID(misc uint16, pid int32, id [20]byte, file string) []byte {
	le := binary.LittleEndian
	name := make([]byte, (len(file)+1+63)/64*64)
	copy(name, file)
	b := le.AppendUint32(nil, uint32(perfdata.RecordHeaderBuildID))
	b = le.AppendUint16(b, misc)
	b = le.AppendUint16(b, uint16(36+len(name)))
	b = le.AppendUint32(b, uint32(pid))
	b = append(append(b, id[:]...), 0, 0, 0, 0)
	return append(b, name...)
}

// dash is the file whose samples in pipe.data the build-id tests rename.
const dash = "/usr/bin/dash"

// pipeDash returns pipe.data, a function giving the script of a
// recording and its Result, and pipe.data's own script, whose dash
// samples must be symbolized (the machine the recording was made on).
func pipeDash(t *testing.T) (data []byte, script func([]byte) (string, *Result), plain string) {
	t.Helper()
	data, err := os.ReadFile("../perfdata/testdata/pipe.data")
	if err != nil {
		t.Fatal(err)
	}
	ks, err := kallsyms.ReadFile(kallsymsSubset)
	if err != nil {
		t.Fatal(err)
	}
	script = func(b []byte) (string, *Result) {
		r, err := perfdata.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		res, err := Run(r, Options{Kallsyms: ks, Script: &out, DebugDir: "-"})
		if err != nil {
			t.Fatal(err)
		}
		return out.String(), res
	}
	plain, _ = script(data)
	if !strings.Contains(plain, "("+dash+")") || strings.Count(plain, "[unknown] ("+dash+")") == strings.Count(plain, "("+dash+")") {
		t.Fatalf("pipe.data's %s samples are not symbolized: the test needs the machine it was recorded on", dash)
	}
	return data, script, plain
}

// dashUnknown returns script with every dash sample's symbol [unknown].
func dashUnknown(script string) string {
	var want strings.Builder
	for _, line := range strings.SplitAfter(script, "\n") {
		if strings.HasSuffix(line, " ("+dash+")\n") {
			f := strings.Fields(line)
			line = strings.Replace(line, " "+strings.Join(f[1:len(f)-1], " ")+" ", " [unknown] ", 1)
		}
		want.WriteString(line)
	}
	return want.String()
}

// checkPerfScript compares got with perf script on the recording b,
// when perf is installed.
func checkPerfScript(t *testing.T, b []byte, got string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "bid.data")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := perftest.Run(perftest.Options{NoBuildIDCache: true}, "script", "-F", "ip,sym,dso", "--kallsyms", kallsymsSubset, "-i", file)
	if err == perftest.ErrNotInstalled {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if d := linediff.First(got, out); d != "" {
		t.Errorf("differs from perf script: %s", d)
	}
}

// A HEADER_BUILD_ID record in a pipe-mode recording gives its file's DSO
// that build id as perf reads it, before the queued samples are delivered:
// a file on disk with another build id is then not used for symbols, so
// every sample in /usr/bin/dash prints [unknown], as with perf script,
// wherever the record is in the round (pipe.data has a single round).
// A record with cpumode 0 is ignored, as perf ignores it, and so is one
// for a guest machine (pid 0).
func TestPipeHeaderBuildID(t *testing.T) {
	data, script, plain := pipeDash(t)
	// The offsets of the first SAMPLE and of the FINISHED_ROUND record.
	firstSample, round := -1, -1
	for p := 16; p+8 <= len(data); p += int(binary.LittleEndian.Uint16(data[p+6:])) {
		switch perfdata.RecordType(binary.LittleEndian.Uint32(data[p:])) {
		case perfdata.RecordSample:
			if firstSample < 0 {
				firstSample = p
			}
		case perfdata.RecordFinishedRound:
			round = p
		}
	}
	if firstSample < 0 || round < 0 {
		t.Fatal("pipe.data: no sample or no FINISHED_ROUND")
	}
	bogus := [20]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}
	for _, tc := range []struct {
		name    string
		at      int
		misc    uint16
		pid     int32
		applied bool
	}{
		{"before the first sample", firstSample, uint16(perfdata.CPUModeUser), -1, true},
		{"after the last sample", round, uint16(perfdata.CPUModeUser), -1, true},
		{"cpumode 0", firstSample, 0, -1, false},
		{"guest machine", firstSample, uint16(perfdata.CPUModeUser), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := append(append(append([]byte(nil), data[:tc.at]...), headerBuildID(tc.misc, tc.pid, bogus, dash)...), data[tc.at:]...)
			got, res := script(b)
			want := plain
			if tc.applied {
				want = dashUnknown(plain)
			}
			if d := linediff.First(got, want); d != "" {
				t.Errorf("differs: %s", d)
			}
			if id, ok := res.BuildIDs[dash]; ok != tc.applied || ok && id != "0102030405060708090a0b0c0d0e0f1011121314" {
				t.Errorf("Result.BuildIDs[%s] = %q, %v", dash, id, ok)
			}
			checkPerfScript(t, b, got) // perf script reads the same file the same way
		})
	}
}

// withMmapBuildID returns a copy of the pipe-mode recording data whose
// MMAP2 records of file carry build id id instead of their inode fields,
// as perf record --buildid-mmap writes them.
func withMmapBuildID(t *testing.T, data []byte, file string, id []byte) []byte {
	t.Helper()
	b := bytes.Clone(data)
	le := binary.LittleEndian
	n := 0
	for p := 16; p+8 <= len(b); p += int(le.Uint16(b[p+6:])) {
		rec := b[p : p+int(le.Uint16(b[p+6:]))]
		if perfdata.RecordType(le.Uint32(rec)) != perfdata.RecordMmap2 || len(rec) < 72+len(file)+1 ||
			string(rec[72:72+len(file)+1]) != file+"\x00" {
			continue
		}
		le.PutUint16(rec[4:], le.Uint16(rec[4:])|perfdata.MiscMmapBuildID)
		union := rec[40:64] // maj, min, ino, ino_generation
		clear(union)
		union[0] = byte(len(id))
		copy(union[4:], id)
		n++
	}
	if n == 0 {
		t.Fatalf("no MMAP2 record of %s", file)
	}
	return b
}

// An MMAP2 record's build id (perf record --buildid-mmap) is its DSO's,
// as perf 6.1's map__new sets it: a file on disk with another build id
// is not used for symbols, so every sample in /usr/bin/dash prints
// [unknown], as with perf script; with the file's own build id nothing
// changes.
func TestMmapBuildID(t *testing.T) {
	data, script, plain := pipeDash(t)
	f, err := elf.Open(dash)
	if err != nil {
		t.Fatal(err)
	}
	own := symbols.BuildID(f)
	f.Close()
	if len(own) == 0 {
		t.Fatalf("%s: no build id", dash)
	}
	for _, tc := range []struct {
		name    string
		id      []byte
		unknown bool
	}{
		{"another file's", []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}, true},
		{"the file's own", own, false},
		// An all-zero one is none (build_id__is_defined): the file's.
		{"all zero", make([]byte, 20), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := withMmapBuildID(t, data, dash, tc.id)
			got, res := script(b)
			want := plain
			if tc.unknown {
				want = dashUnknown(plain)
			}
			if d := linediff.First(got, want); d != "" {
				t.Errorf("differs: %s", d)
			}
			zero := !slices.ContainsFunc(tc.id, func(b byte) bool { return b != 0 })
			if id := res.BuildIDs[dash]; (id == fmt.Sprintf("%x", tc.id)) == zero {
				t.Errorf("Result.BuildIDs[%s] = %q; the MMAP2's %x applied: %v", dash, id, tc.id, !zero)
			}
			checkPerfScript(t, b, got)
		})
	}
}
