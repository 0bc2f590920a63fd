package perfdata

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/internal/perftest"
)

// File-mode recordings whose attrs perf 6.1's perf_session__open refuses
// are refused, with the attr's offset; perf is asked too when installed.
func TestAttrsAgree(t *testing.T) {
	const (
		ipTID   = SampleFormatIP | SampleFormatTID
		withID  = ipTID | SampleFormatID
		ident   = ipTID | SampleFormatIdentifier
		all     = AttrSampleIDAll
		noFlags = AttrFlags(0)
	)
	tests := []struct {
		name  string
		attrs []attrSpec
		stat  bool
		want  string // "" for no error; else perf's message
	}{
		{"one attr without id", []attrSpec{{sampleType: ipTID}}, false, ""},
		{"same id place", []attrSpec{{sampleType: withID, ids: []uint64{1}}, {sampleType: withID | SampleFormatPeriod | SampleFormatCallchain, ids: []uint64{2}}}, false, ""},
		{"identifiers", []attrSpec{{sampleType: ident, ids: []uint64{1}}, {sampleType: ident | SampleFormatTime, ids: []uint64{2}}}, false, ""},
		{"id at another place", []attrSpec{{sampleType: withID, ids: []uint64{1}}, {sampleType: withID | SampleFormatTime, ids: []uint64{2}}}, false, "non matching sample_type"},
		{"id from the end elsewhere", []attrSpec{{sampleType: withID, flags: all, ids: []uint64{1}}, {sampleType: withID | SampleFormatStreamID, flags: all, ids: []uint64{2}}}, false, "non matching sample_type"},
		{"no ids", []attrSpec{{sampleType: ipTID}, {sampleType: ipTID}}, false, "non matching sample_type"},
		{"sample_id_all differs", []attrSpec{{sampleType: ident, flags: all, ids: []uint64{1}}, {sampleType: ident, flags: noFlags, ids: []uint64{2}}}, false, "non matching sample_id_all"},
		{"read without id", []attrSpec{{sampleType: ipTID | SampleFormatRead, readFormat: ReadTotalTimeEnabled}}, false, "non matching read_format"},
		{"read with id", []attrSpec{{sampleType: ipTID | SampleFormatRead, readFormat: ReadID}}, false, ""},
		{"perf stat record", []attrSpec{{sampleType: ipTID}, {sampleType: ipTID}}, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := buildFile(tc.attrs, nil)
			if tc.stat {
				le.PutUint64(file[72:], 1<<FeatStat)
				file = le.AppendUint64(file, uint64(len(file)+16)) // an empty STAT section
				file = le.AppendUint64(file, 0)
			}
			_, err := NewFileReader(bytes.NewReader(file), int64(len(file)))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "attr at file offset 0x")):
				t.Fatalf("error %v, want one at an attr saying %q", err, tc.want)
			}
			// The same attrs in a pipe: perf checks files only.
			if tc.want != "" {
				if _, err := NewReader(bytes.NewReader(pipeOf(tc.attrs))); err != nil {
					t.Errorf("pipe refused: %v", err)
				}
			}
			path := filepath.Join(t.TempDir(), "perf.data")
			if err := os.WriteFile(path, file, 0o644); err != nil {
				t.Fatal(err)
			}
			_, stderr, perr := perftest.Run(perftest.Options{}, "script", "-i", path)
			if perr == perftest.ErrNotInstalled {
				return
			}
			if tc.want != "" && !strings.Contains(stderr, tc.want) {
				t.Errorf("perf script: %v, stderr %q, want %q", perr, stderr, tc.want)
			}
			if tc.want == "" && strings.Contains(stderr, "non matching") {
				t.Errorf("perf refuses it: %q", stderr)
			}
		})
	}
}

// pipeOf lays out a little-endian pipe-mode recording of HEADER_ATTR
// records for attrs, and nothing else.
func pipeOf(attrs []attrSpec) []byte {
	b := le.AppendUint64(nil, magicLE)
	b = le.AppendUint64(b, pipeHeaderSize)
	for _, a := range attrs {
		body := a.bytes()
		for _, id := range a.ids {
			body = le.AppendUint64(body, id)
		}
		b = append(b, rec(RecordHeaderAttr, 0, body)...)
	}
	return b
}
