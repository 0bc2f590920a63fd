package perfdata

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bigRecords returns n records of an unknown type, each of the largest
// size a record can have (65,528 bytes, a multiple of 8): 33 of them are
// the first to reach perf's 2 MiB turn (32 fall 256 bytes short).
func bigRecords(n int) []byte {
	var b []byte
	for range n {
		b = append(b, rec(100, 0, make([]byte, 65528-8))...)
	}
	return b
}

// dirReader is a Reader over a directory's header file with data
// section hdata and data files with the given contents, read in the
// order given (openDir takes the directory's order).
func dirReader(t *testing.T, hdata []byte, files ...[]byte) *Reader {
	t.Helper()
	r := builtReader(t, []attrSpec{{sampleType: SampleFormatIP}}, hdata)
	r.streams = []stream{{path: "data", in: r.in, pos: r.pos, end: r.end}}
	for i, f := range files {
		r.streams = append(r.streams, stream{path: fmt.Sprintf("data.%d", i), in: plainDataBuffer(bytes.NewReader(f), int64(len(f))), end: int64(len(f))})
	}
	return r
}

// runs returns the files the Reader's records came from, as runs of
// "file:count".
func runs(t *testing.T, r *Reader) []string {
	t.Helper()
	var out []string
	last, n := "", 0
	for r.Next() {
		f := r.streams[r.cur].path
		if f != last && n > 0 {
			out = append(out, fmt.Sprintf("%s:%d", last, n))
			n = 0
		}
		last = f
		n++
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return append(out, fmt.Sprintf("%s:%d", last, n))
}

// The files of a directory are read in turns of 2 MiB of records, a
// file leaving the turns when it ends, as perf 6.1's
// __perf_session__process_dir_events reads them.
func TestDirTurns(t *testing.T) {
	tests := []struct {
		name  string
		hdata []byte
		files [][]byte
		want  []string
	}{
		{"header then turns", bigRecords(2), [][]byte{bigRecords(40), bigRecords(70)},
			[]string{"data:2", "data.0:33", "data.1:33", "data.0:7", "data.1:37"}},
		{"long header", bigRecords(34), [][]byte{bigRecords(1)},
			[]string{"data:33", "data.0:1", "data:1"}},
		{"empty header", nil, [][]byte{bigRecords(33), bigRecords(33), bigRecords(34)},
			[]string{"data.0:33", "data.1:33", "data.2:34"}},
		{"small records", rec(100, 0, nil), [][]byte{rec(100, 0, nil), rec(100, 0, nil)},
			[]string{"data:1", "data.0:1", "data.1:1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := runs(t, dirReader(t, tc.hdata, tc.files...))
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("turns %v, want %v", got, tc.want)
			}
		})
	}
}

// An error in a data file names that file and the offset in it.
func TestDirErrorNamesFile(t *testing.T) {
	bad := append(bigRecords(1), rec(100, 0, make([]byte, 8))[:12]...)
	r := dirReader(t, rec(100, 0, nil), rec(100, 0, nil), bad)
	for r.Next() {
	}
	var fe *FormatError
	if err := r.Err(); !errors.As(err, &fe) || fe.File != "data.1" || fe.Off != 65528 {
		t.Fatalf("error %v, want one at offset 65528 of data.1", err)
	}
}

// withDirFormat appends a DIR_FORMAT feature of the given version to a
// file buildFile laid out.
func withDirFormat(file []byte, version uint64) []byte {
	le.PutUint64(file[72:], 1<<FeatDirFormat)
	sec := uint64(len(file) + 16)
	file = le.AppendUint64(file, sec)
	file = le.AppendUint64(file, 8)
	return le.AppendUint64(file, version)
}

func TestOpenDir(t *testing.T) {
	attrs := []attrSpec{{sampleType: SampleFormatIP}}
	header := buildFile(attrs, rec(100, 0, nil))
	write := func(t *testing.T, dir string, files map[string][]byte) {
		t.Helper()
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	count := func(t *testing.T, dir string) (int, []string) {
		t.Helper()
		r, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		n := 0
		for r.Next() {
			n++
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		return n, r.Files()
	}

	t.Run("single file", func(t *testing.T) {
		// perf record --kcore: DIR_FORMAT absent, data.N files ignored.
		dir := t.TempDir()
		write(t, dir, map[string][]byte{"data": header, "data.0": rec(100, 0, nil)})
		if n, files := count(t, dir); n != 1 || len(files) != 1 {
			t.Errorf("%d records from %v, want 1 from the header file", n, files)
		}
	})
	t.Run("version 1", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, map[string][]byte{
			"data": withDirFormat(bytes.Clone(header), 1), "data.0": bigRecords(2), "data.1": nil,
			"data.x": rec(100, 0, nil), "other": rec(100, 0, nil),
		})
		if err := os.Mkdir(filepath.Join(dir, "data.dir"), 0o755); err != nil {
			t.Fatal(err)
		}
		// data.1 is empty and left out; data.dir is no regular file.
		n, files := count(t, dir)
		if n != 4 || len(files) != 3 || files[0] != filepath.Join(dir, "data") {
			t.Errorf("%d records from %v, want 4 from data, data.0 and data.x", n, files)
		}
	})
	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			files map[string][]byte
			want  string
		}{
			{"version 2", map[string][]byte{"data": withDirFormat(bytes.Clone(header), 2), "data.0": rec(100, 0, nil)}, "version 2"},
			{"no data files", map[string][]byte{"data": withDirFormat(bytes.Clone(header), 1)}, "without any data.* file"},
			{"no header", map[string][]byte{"data.0": rec(100, 0, nil)}, "no such file"},
		} {
			dir := t.TempDir()
			write(t, dir, tc.files)
			if r, err := Open(dir); err == nil || !strings.Contains(err.Error(), tc.want) {
				if r != nil {
					r.Close()
				}
				t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
			}
		}
		// The header file alone: perf 6.1 reads nothing from it.
		file := filepath.Join(t.TempDir(), "data")
		write(t, filepath.Dir(file), map[string][]byte{"data": withDirFormat(bytes.Clone(header), 1)})
		if _, err := Open(file); err == nil || !strings.Contains(err.Error(), "open the directory") {
			t.Errorf("header file alone: error %v", err)
		}
	})
}
