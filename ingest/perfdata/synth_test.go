package perfdata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

var le = binary.LittleEndian

type attrSpec struct {
	sampleType SampleFormat
	readFormat ReadFormat
	flags      AttrFlags
	branchType uint64
	regsUser   uint64
	regsIntr   uint64
	ids        []uint64
	size       int // attr.size; 0 means 128
}

func (a attrSpec) bytes() []byte {
	n := a.size
	if n == 0 {
		n = 128
	}
	b := make([]byte, max(n, 136))
	le.PutUint32(b[0:], 1)
	le.PutUint32(b[4:], uint32(n))
	le.PutUint64(b[24:], uint64(a.sampleType))
	le.PutUint64(b[32:], uint64(a.readFormat))
	le.PutUint64(b[40:], uint64(a.flags))
	le.PutUint64(b[72:], a.branchType)
	le.PutUint64(b[80:], a.regsUser)
	le.PutUint64(b[96:], a.regsIntr)
	return b[:n]
}

// buildFile lays out a little-endian file-mode recording with the given
// attrs (all of the same attr.size) and data section, and no features.
func buildFile(attrs []attrSpec, data []byte) []byte {
	asz := len(attrs[0].bytes())
	var ids []byte
	idOff := make([]int, len(attrs))
	for i, a := range attrs {
		idOff[i] = fileHeaderSize + len(ids)
		for _, id := range a.ids {
			ids = le.AppendUint64(ids, id)
		}
	}
	attrOff := fileHeaderSize + len(ids)
	dataOff := attrOff + len(attrs)*(asz+16)
	b := make([]byte, fileHeaderSize)
	le.PutUint64(b[0:], magicLE)
	le.PutUint64(b[8:], fileHeaderSize)
	le.PutUint64(b[16:], uint64(asz+16))
	le.PutUint64(b[24:], uint64(attrOff))
	le.PutUint64(b[32:], uint64(len(attrs)*(asz+16)))
	le.PutUint64(b[40:], uint64(dataOff))
	le.PutUint64(b[48:], uint64(len(data)))
	b = append(b, ids...)
	for i, a := range attrs {
		b = append(b, a.bytes()...)
		b = le.AppendUint64(b, uint64(idOff[i]))
		b = le.AppendUint64(b, uint64(8*len(a.ids)))
	}
	return append(b, data...)
}

// builtReader opens the recording buildFile lays out.
func builtReader(t *testing.T, attrs []attrSpec, data []byte) *Reader {
	t.Helper()
	file := buildFile(attrs, data)
	r, err := NewFileReader(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// rec builds a record of type typ with body (padded to 8 unless raw).
func rec(typ RecordType, misc uint16, body []byte) []byte {
	b := le.AppendUint32(nil, uint32(typ))
	b = le.AppendUint16(b, misc)
	b = le.AppendUint16(b, uint16(8+len(body)))
	return append(b, body...)
}

type u64s []uint64

func (v u64s) bytes() []byte {
	var b []byte
	for _, x := range v {
		b = le.AppendUint64(b, x)
	}
	return b
}

func pair(a, b uint32) uint64 { return uint64(a) | uint64(b)<<32 }

func TestSampleLayouts(t *testing.T) {
	all := SampleFormatIdentifier | SampleFormatIP | SampleFormatTID | SampleFormatTime | SampleFormatAddr |
		SampleFormatID | SampleFormatStreamID | SampleFormatCPU | SampleFormatPeriod | SampleFormatRead |
		SampleFormatCallchain | SampleFormatRaw | SampleFormatBranchStack | SampleFormatRegsUser |
		SampleFormatStackUser | SampleFormatWeight | SampleFormatDataSrc | SampleFormatTransaction |
		SampleFormatRegsIntr | SampleFormatPhysAddr | SampleFormatCgroup | SampleFormatDataPageSize |
		SampleFormatCodePageSize | SampleFormatAux
	tests := []struct {
		name string
		attr attrSpec
		body []byte
		want Sample
	}{
		{
			name: "ip tid time period (perf default)",
			attr: attrSpec{sampleType: 0x107},
			body: u64s{0x7ff33bb0f8c8, pair(8306, 8306), 414172352989, 250000}.bytes(),
			want: Sample{IP: 0x7ff33bb0f8c8, Pid: 8306, Tid: 8306, Time: 414172352989, Period: 250000},
		},
		{
			name: "every field, group read",
			attr: attrSpec{sampleType: all, readFormat: ReadGroup | ReadID | ReadLost | ReadTotalTimeEnabled | ReadTotalTimeRunning,
				branchType: BranchHWIndex | BranchCounters, regsUser: 0b1011, regsIntr: 0b11, ids: []uint64{77}},
			body: bytes.Join([][]byte{
				u64s{77, 0x1000, pair(1, 2), 3, 0x2000, 77, 5, pair(1, 0), 9}.bytes(),
				u64s{2, 10, 11, 100, 77, 0, 200, 78, 1}.bytes(), // read: nr, enabled, running, {value, id, lost}×2
				u64s{3, 0xfffffffffffffe00, 0x1000, 0x1004}.bytes(),
				{4, 0, 0, 0, 'r', 'a', 'w', '!'},             // raw size 4 + data
				u64s{2, 9, 1, 2, 3, 4, 5, 6, 21, 22}.bytes(), // branch nr, hw_idx, 2 entries, 2 counters
				u64s{2, 11, 12, 13}.bytes(),                  // regs_user abi + 3 regs
				u64s{8}.bytes(), []byte("stackdat"), u64s{6}.bytes(),
				u64s{31, 32, 33}.bytes(),     // weight, data_src, transaction
				u64s{1, 41, 42}.bytes(),      // regs_intr
				u64s{51, 52, 53, 54}.bytes(), // phys, cgroup, data page, code page
				u64s{3}.bytes(), []byte("aux"),
			}, nil),
			want: Sample{Identifier: 77, IP: 0x1000, Pid: 1, Tid: 2, Time: 3, Addr: 0x2000, ID: 77, StreamID: 5, CPU: 1, Period: 9,
				Read:      ReadValues{TimeEnabled: 10, TimeRunning: 11, Values: []ReadValue{{100, 77, 0}, {200, 78, 1}}},
				Callchain: []uint64{0xfffffffffffffe00, 0x1000, 0x1004}, Raw: []byte("raw!"),
				BranchHWIndex: 9, Branches: []BranchEntry{{1, 2, 3}, {4, 5, 6}}, BranchCounters: []uint64{21, 22},
				RegsUserABI: 2, RegsUser: []uint64{11, 12, 13}, StackUser: []byte("stackdat"), StackUserDyn: 6,
				Weight: 31, DataSrc: 32, Transaction: 33, RegsIntrABI: 1, RegsIntr: []uint64{41, 42},
				PhysAddr: 51, Cgroup: 52, DataPageSize: 53, CodePageSize: 54, Aux: []byte("aux")},
		},
		{
			name: "single read, no regs abi, empty stack",
			attr: attrSpec{sampleType: SampleFormatRead | SampleFormatRegsUser | SampleFormatStackUser | SampleFormatWeightStruct,
				readFormat: ReadID | ReadTotalTimeRunning, regsUser: 0xff},
			body: u64s{5, 6, 7, 0, 0, 0x0000000200000001}.bytes(),
			want: Sample{Read: ReadValues{TimeRunning: 6, Values: []ReadValue{{Value: 5, ID: 7}}}, Weight: 0x0000000200000001},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := buildFile([]attrSpec{tc.attr}, rec(RecordSample, 2, tc.body))
			r, err := NewFileReader(bytes.NewReader(file), int64(len(file)))
			if err != nil {
				t.Fatal(err)
			}
			if !r.Next() {
				t.Fatalf("no record: %v", r.Err())
			}
			s := *r.Record().(*Sample)
			s.Info, s.Attr = Info{}, nil
			// BranchesAt is where the first entry lies in the file.
			if len(s.Branches) > 0 && (s.BranchesAt+8 > int64(len(file)) || binary.LittleEndian.Uint64(file[s.BranchesAt:]) != s.Branches[0].From) {
				t.Errorf("BranchesAt %#x is not where the first entry lies", s.BranchesAt)
			}
			s.BranchesAt = 0
			norm := func(s *Sample) {
				v := reflect.ValueOf(s).Elem()
				for i := 0; i < v.NumField(); i++ {
					if f := v.Field(i); f.Kind() == reflect.Slice && f.Len() == 0 {
						f.Set(reflect.Zero(f.Type()))
					}
				}
				if len(s.Read.Values) == 0 {
					s.Read.Values = nil
				}
			}
			norm(&s)
			norm(&tc.want)
			if !reflect.DeepEqual(s, tc.want) {
				t.Errorf("got  %+v\nwant %+v", s, tc.want)
			}
			// Every truncation is an error, never a panic or a guess.
			for n := 0; n < len(tc.body); n++ {
				file := buildFile([]attrSpec{tc.attr}, rec(RecordSample, 2, tc.body[:n]))
				r, err := NewFileReader(bytes.NewReader(file), int64(len(file)))
				if err != nil {
					t.Fatal(err)
				}
				if r.Next() {
					t.Fatalf("body cut to %d bytes: decoded %+v", n, r.Record())
				}
				if r.Err() == nil || !strings.Contains(r.Err().Error(), "file offset") {
					t.Fatalf("body cut to %d bytes: error %v", n, r.Err())
				}
			}
		})
	}
}

func TestRecordTypes(t *testing.T) {
	attr := attrSpec{sampleType: SampleFormatIdentifier | SampleFormatTID | SampleFormatTime | SampleFormatCPU,
		flags: AttrSampleIDAll, ids: []uint64{5}}
	attr2 := attr
	attr2.ids = []uint64{6}
	trailer := func(id uint64) []byte { return u64s{pair(10, 11), 12, pair(1, 0), id}.bytes() }
	name := func(s string, n int) []byte { return append([]byte(s), make([]byte, n-len(s))...) }
	var data []byte
	data = append(data, rec(RecordKsymbol, 1, bytes.Join([][]byte{
		u64s{0xffffffffc000064c}.bytes(), {16, 0, 0, 0, 1, 0, 1, 0}, name("bpf_prog_59f4a931744dcdc6_x", 32), trailer(6)}, nil))...)
	data = append(data, rec(RecordMmap2, 2|MiscMmapBuildID, bytes.Join([][]byte{
		u64s{pair(7, 8), 0x400000, 0x1000, 0}.bytes(), {3, 0, 0, 0}, name("\x01\x02\x03", 20), {5, 0, 0, 0, 2, 0, 0, 0}, name("/bin/x", 8), trailer(5)}, nil))...)
	data = append(data, rec(RecordBPFEvent, 0, bytes.Join([][]byte{{1, 0, 0, 0, 4, 0, 0, 0}, []byte("TAGTAG!!"), trailer(5)}, nil))...)
	data = append(data, rec(RecordLost, 0, append(u64s{5, 99}.bytes(), trailer(5)...))...)
	data = append(data, rec(RecordThrottle, 0, append(u64s{1, 5, 0}.bytes(), trailer(5)...))...)
	data = append(data, rec(RecordFinishedRound, 0, nil)...)
	data = append(data, rec(RecordAuxtrace, 0, u64s{16, 0, 0, 0, 0}.bytes())...)
	data = append(data, make([]byte, 16)...) // AUXTRACE payload outside the record
	data = append(data, rec(200, 0, []byte("user rec"))...)
	r := builtReader(t, []attrSpec{attr, attr2}, data)
	var got []string
	for r.Next() {
		switch x := r.Record().(type) {
		case *Ksymbol:
			if x.Name != "bpf_prog_59f4a931744dcdc6_x" || x.Flags != 1 || x.KsymType != 1 || x.Len != 16 || !x.Unregister() ||
				x.SampleID.Attr != r.Attrs()[1] || x.SampleID.Pid != 10 || x.SampleID.Tid != 11 || x.SampleID.Time != 12 || x.SampleID.CPU != 1 {
				t.Errorf("KSYMBOL %+v", *x)
			}
		case *Mmap:
			if !bytes.Equal(x.BuildID, []byte{1, 2, 3}) || x.Prot != 5 || x.Flags != 2 || x.Filename != "/bin/x" || x.Pid != 7 || x.Tid != 8 {
				t.Errorf("MMAP2 %+v", *x)
			}
		case *BPFEvent:
			if x.EventType != 1 || x.ID != 4 || string(x.Tag[:]) != "TAGTAG!!" {
				t.Errorf("BPF_EVENT %+v", *x)
			}
		case *Lost:
			if x.ID != 5 || x.Lost != 99 {
				t.Errorf("LOST %+v", *x)
			}
		case *Unknown:
			raw := r.Raw()
			if x.Type == 200 && (string(x.Data) != "user rec" || raw.IDHdrSize != 32 || raw.ByteOrder != binary.ByteOrder(le) || len(raw.Data) != 16) {
				t.Errorf("user record %+v raw %+v", *x, raw)
			}
		}
		got = append(got, r.Record().RecordInfo().Type.String())
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	want := "KSYMBOL MMAP2 BPF_EVENT LOST THROTTLE FINISHED_ROUND RECORD_71 RECORD_200"
	if strings.Join(got, " ") != strings.ReplaceAll(want, "RECORD_71", "AUXTRACE") {
		t.Errorf("records %v", got)
	}
	if st := r.Stats(); st.SkippedBytes != 16 || st.Unknown != 2 {
		t.Errorf("stats %+v", st)
	}
}

// TestKmodSecMapRaw reads the KMOD_SEC_MAP test vector T2 (§4.4) as a raw
// record of type 83, which must not be mistaken for COMPRESSED2.
func TestKmodSecMapRaw(t *testing.T) {
	body := bytes.Join([][]byte{
		{0xff, 0xff, 0xff, 0xff, 0xaa, 0xaa, 0xaa, 0xaa},
		u64s{0xffffffffc0e5a000, 0x5c3, 0x1c040}.bytes(),
		{0x0e, 0, 0x36, 0}, []byte(".noinstr.text\x00\xaa/lib/modules/6.2.0-rc1/kernel/arch/x86/kvm/kvm-amd.ko\x00"),
		{0xaa, 0xaa, 0xaa}, make([]byte, 16), {0xaa, 0xaa, 0xaa, 0xaa},
	}, nil)
	attr := attrSpec{sampleType: SampleFormatTID | SampleFormatTime, flags: AttrSampleIDAll}
	file := buildFile([]attrSpec{attr}, rec(83, 1, body))
	if len(body)+8 != 136 {
		t.Fatalf("vector size %d", len(body)+8)
	}
	for _, opts := range [][]Option{nil, {WithoutCompressed2()}} {
		r, err := NewFileReader(bytes.NewReader(file), int64(len(file)), opts...)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Next() {
			t.Fatal(r.Err())
		}
		raw := r.Raw()
		if raw.Type != 83 || raw.Size != 136 || raw.Misc != 1 || raw.IDHdrSize != 16 || len(raw.Data) != 136 || raw.Offset == 0 {
			t.Errorf("raw %+v", raw)
		}
		if _, err := r.ParseSampleID(raw); err != nil {
			t.Error(err)
		}
	}
}

// TestCompressedSpanning splits one zstd stream over COMPRESSED and
// COMPRESSED2 records at arbitrary byte boundaries, with records spanning
// them.
func TestCompressedSpanning(t *testing.T) {
	var inner []byte
	for i := 0; i < 300; i++ {
		inner = append(inner, rec(RecordSample, 2, u64s{uint64(i), pair(1, 2), uint64(i) * 10, 1}.bytes())...)
		inner = append(inner, rec(RecordComm, 0, append(u64s{pair(1, 2)}.bytes(), []byte("comm\x00\x00\x00\x00")...))...)
	}
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	z := enc.EncodeAll(inner, nil)
	for _, split := range []int{7, 100, 1000, len(z)} {
		var data []byte
		var compressed, compressed2 uint64
		for i, p := 0, 0; p < len(z); i++ {
			n := min(split, len(z)-p)
			chunk := z[p : p+n]
			p += n
			compressed++
			if i%2 == 0 {
				data = append(data, rec(RecordCompressed, 0, chunk)...)
			} else {
				compressed2++
				pad := (8 - (16+len(chunk))%8) % 8
				data = append(data, rec(RecordCompressed2, 0, append(append(le.AppendUint64(nil, uint64(len(chunk))), chunk...), make([]byte, pad)...))...)
			}
		}
		data = append(data, rec(RecordFinishedRound, 0, nil)...)
		file := buildFile([]attrSpec{{sampleType: 0x107}}, data)
		r, err := NewFileReader(bytes.NewReader(file), int64(len(file)))
		if err != nil {
			t.Fatal(err)
		}
		samples, comms, rounds := 0, 0, 0
		for r.Next() {
			switch x := r.Record().(type) {
			case *Sample:
				if x.IP != uint64(samples) || x.Time != uint64(samples)*10 || !x.Compressed {
					t.Fatalf("split %d: sample %d = %+v", split, samples, *x)
				}
				samples++
			case *Comm:
				comms++
			case *FinishedRound:
				rounds++
			}
		}
		if r.Err() != nil || samples != 300 || comms != 300 || rounds != 1 {
			t.Errorf("split %d: %d samples %d comms %d rounds, err %v", split, samples, comms, rounds, r.Err())
		}
		if st := r.Stats(); st.Compressed != compressed || st.Compressed2 != compressed2 {
			t.Errorf("split %d: stats count %d compressed records, %d COMPRESSED2; want %d, %d", split, st.Compressed, st.Compressed2, compressed, compressed2)
		}
	}
}

func TestMalformed(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("testdata", "sleep.data"))
	if err != nil {
		t.Fatal(err)
	}
	mod := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "file header"},
		{"bad magic", mod(func(b []byte) []byte { b[0] = 'X'; return b }), "bad magic"},
		{"header size", mod(func(b []byte) []byte { b[8] = 99; return b }), "header size"},
		{"attr_size 0", mod(func(b []byte) []byte { le.PutUint64(b[16:], 0); return b }), "attr_size"},
		{"attr_size absurd", mod(func(b []byte) []byte { le.PutUint64(b[16:], 1<<40); return b }), "attr_size"},
		{"attrs past EOF", mod(func(b []byte) []byte { le.PutUint64(b[24:], 1<<20); return b }), "past the end"},
		{"data past EOF", mod(func(b []byte) []byte { le.PutUint64(b[48:], 1<<20); return b }), "past the end"},
		{"record size 0", mod(func(b []byte) []byte { le.PutUint16(b[0x108+6:], 0); return b }), "smaller than its 8-byte header"},
		{"record past data", mod(func(b []byte) []byte { le.PutUint16(b[0x108+6:], 0xfff8); return b }), "runs past the end"},
		{"truncated data", good[:0x300], "past the end"},
		{"truncated features", good[:len(good)-100], "past the end"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewFileReader(bytes.NewReader(tc.b), int64(len(tc.b)))
			if err == nil {
				for r.Next() {
				}
				err = r.Err()
				if err == nil {
					err = r.FeaturesErr()
				}
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FormatError", err)
			}
			if want, ok := malformedOffsets[tc.name]; ok && fe.Off != want {
				t.Errorf("offset %#x, want %#x", fe.Off, want)
			}
		})
	}
}

// malformedOffsets are the file offsets TestMalformed's errors must
// carry, where the fault is at a fixed place.
var malformedOffsets = map[string]int64{
	"bad magic": 0, "header size": 8, "attr_size 0": 0x10, "attr_size absurd": 0x10,
	"record size 0": 0x108, "record past data": 0x108,
}

// A pipe-mode stream that ends inside a record ends there, as perf's
// pipe reader does (a cut body: "unexpected end of event stream"; a cut
// header: silently), with every record before it read and the cut
// record's offset and size in Stats.
func TestStreamCutShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "pipe.data"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for r.Next() {
		n++
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	// A 64-byte COMM record cut after 18 bytes: its header and 10 more.
	cut := append(slices.Clone(b), rec(RecordComm, 0, make([]byte, 56))[:18]...)
	for _, tc := range []struct {
		name    string
		data    []byte
		records int
		cut, at uint64
	}{
		{"body", cut, n, 18, uint64(len(b))},
		{"header", append(slices.Clone(b), 1, 2, 3), n, 3, uint64(len(b))},
		{"whole", b, n, 0, 0},
	} {
		r, err := NewReader(bytes.NewReader(tc.data))
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for r.Next() {
			got++
		}
		st := r.Stats()
		if r.Err() != nil || got != tc.records || st.CutShort != tc.cut || (tc.cut != 0 && uint64(st.CutShortAt) != tc.at) {
			t.Errorf("%s: %d records (want %d), err %v, cut short %d at %#x (want %d at %#x)", tc.name, got, tc.records, r.Err(), st.CutShort, st.CutShortAt, tc.cut, tc.at)
		}
	}
}

// Decompression is bounded: one COMPRESSED record may not expand past the
// recording's mmap size (4 MiB without the COMPRESSED feature), and all
// output stays within zstdRatio times the compressed input plus 1 MiB,
// so a file of small bombs stops instead of running for minutes.
func TestCompressedBombs(t *testing.T) {
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	// Valid records (COMMs) that compress extremely well.
	comm := rec(RecordComm, 0, append(u64s{pair(1, 2)}.bytes(), []byte("comm\x00\x00\x00\x00")...))
	records := func(n int) []byte { return bytes.Repeat(comm, n) }
	run := func(data []byte) (int, error) {
		file := buildFile([]attrSpec{{sampleType: 0x107}}, data)
		r, err := NewFileReader(bytes.NewReader(file), int64(len(file)))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for r.Next() {
			n++
		}
		return n, r.Err()
	}
	// One record expanding to 8 MiB: refused once it passes the
	// per-record bound (4 MiB), if the ratio bound has not come first.
	big := enc.EncodeAll(records(8<<20/len(comm)), nil)
	n, err := run(rec(RecordCompressed, 0, big))
	if err == nil || !strings.Contains(err.Error(), "compressed record at file offset") || n*len(comm) > zstdMaxOut+zstdChunk {
		t.Errorf("one 8 MiB record: %d records, err %v", n, err)
	}
	// Above the ratio's slack, a record still may not pass its mmap size.
	var padded []byte
	for range 64 {
		padded = append(padded, rec(RecordCompressed, 0, enc.EncodeAll(records(16), nil))...)
	}
	padded = append(padded, rec(RecordCompressed, 0, enc.EncodeAll(records(6<<20/len(comm)), nil))...)
	tooMuch := fmt.Sprintf("more than %dx", zstdRatio)
	if _, err := run(padded); err == nil || !strings.Contains(err.Error(), "from one record") && !strings.Contains(err.Error(), tooMuch) {
		t.Errorf("6 MiB record: err %v", err)
	}
	// Many records of 1 MiB each, every one within the per-record bound:
	// refused once the output passes zstdRatio times the input.
	small := enc.EncodeAll(records(1<<20/len(comm)), nil)
	var data []byte
	for range 200 {
		data = append(data, rec(RecordCompressed, 0, small)...)
	}
	n, err = run(data)
	limit := zstdRatio*200*len(small) + 1<<20
	if err == nil || !strings.Contains(err.Error(), tooMuch) || n*len(comm) > limit+4<<20 {
		t.Errorf("200 x 1 MiB: %d records (%d bytes), err %v; want an error within %d bytes", n, n*len(comm), err, limit)
	}
	// A plausible ratio is accepted, past the slack too: 20 MiB of
	// records that compress about 900x (their pids vary).
	if n, err := run(rec(RecordCompressed, 0, enc.EncodeAll(records(1000), nil))); err != nil || n != 1000 {
		t.Errorf("1000 records: %d, err %v", n, err)
	}
	var varied []byte
	for i := range 16 {
		var recs []byte
		for j := range 1 << 20 / len(comm) {
			recs = append(recs, rec(RecordComm, 0, append(u64s{pair(uint32(i*j%977), 2)}.bytes(), []byte("comm\x00\x00\x00\x00")...))...)
		}
		varied = append(varied, rec(RecordCompressed, 0, enc.EncodeAll(recs, nil))...)
	}
	if n, err := run(varied); err != nil || n != 16*(1<<20/len(comm)) {
		t.Errorf("16 MiB at %d bytes compressed: %d records, err %v", len(varied), n, err)
	} else if ratio := 16 << 20 / len(varied); ratio < 64 {
		t.Errorf("the varied records compress only %dx: not past the old bound", ratio)
	}
}

// A bad feature section stops the features at it, as perf's processing
// in bit order does, and keeps those before it.
func TestBadFeatureKeepsEarlierOnes(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("testdata", "sleep.data"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewFileReader(bytes.NewReader(good), int64(len(good)))
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
	}
	f := r.Features()
	if r.FeaturesErr() != nil || f.Hostname == "" || len(f.Events) == 0 {
		t.Fatalf("the good file: %v, hostname %q, %d events", r.FeaturesErr(), f.Hostname, len(f.Events))
	}
	// Point the EVENT_DESC section (bit 12, after HOSTNAME's bit 2) past
	// the end of the file.
	i := 0
	for x := Feature(0); x < FeatEventDesc; x++ {
		if r.Header().HasFeature(x) {
			i++
		}
	}
	bad := bytes.Clone(good)
	entry := int(r.Header().Data.Offset+r.Header().Data.Size) + 16*i
	le.PutUint64(bad[entry:], uint64(len(bad))+4096)
	r, err = NewFileReader(bytes.NewReader(bad), int64(len(bad)))
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
	}
	f = r.Features()
	if err := r.FeaturesErr(); err == nil || !strings.Contains(err.Error(), "feature 12") {
		t.Errorf("error %v, want one naming feature 12", err)
	}
	if f.Hostname == "" || len(f.Events) != 0 {
		t.Errorf("hostname %q kept (want kept), %d events (want none)", f.Hostname, len(f.Events))
	}
}

// Open names the file in a FormatError.
func TestFormatErrorNamesFile(t *testing.T) {
	name := filepath.Join(t.TempDir(), "bad.data")
	if err := os.WriteFile(name, []byte("PERFILE2 but nothing more"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(name)
	var fe *FormatError
	if !errors.As(err, &fe) || fe.File != name || !strings.HasSuffix(err.Error(), "(file "+name+")") {
		t.Errorf("Open: %v", err)
	}
}

// TestTrailerOfItsOwnAttr: attrs may differ in their sample_id trailer
// (a tracepoint samples CPU, the dummy event perf adds does not) as long
// as the id sits at one place from the end: each record's trailer is
// laid out by the attr its id names, from the record's end, as perf's
// perf_evsel__parse_id_sample reads it, and its body ends there.
func TestTrailerOfItsOwnAttr(t *testing.T) {
	tp := attrSpec{sampleType: SampleFormatIdentifier | SampleFormatTID | SampleFormatTime | SampleFormatCPU,
		flags: AttrSampleIDAll, ids: []uint64{5}}
	dummy := attrSpec{sampleType: SampleFormatIdentifier | SampleFormatTID | SampleFormatTime,
		flags: AttrSampleIDAll, ids: []uint64{6}}
	var data []byte
	// EXIT of the dummy: pid, ppid, tid, ptid, time, then a 24-byte trailer.
	data = append(data, rec(RecordExit, 0, append(u64s{pair(7, 1), pair(7, 1), 100}.bytes(), u64s{pair(7, 7), 200, 6}.bytes()...))...)
	// COMM of the tracepoint: its 32-byte trailer holds the CPU.
	data = append(data, rec(RecordComm, 0, bytes.Join([][]byte{u64s{pair(8, 8)}.bytes(), []byte("worker\x00\x00"), u64s{pair(8, 8), 300, pair(3, 0), 5}.bytes()}, nil))...)
	// COMM of the dummy, whose name fills what the other's trailer would.
	data = append(data, rec(RecordComm, 0, bytes.Join([][]byte{u64s{pair(9, 9)}.bytes(), []byte("a-long-name-xx\x00\x00"), u64s{pair(9, 9), 400, 6}.bytes()}, nil))...)
	r := builtReader(t, []attrSpec{tp, dummy}, data)
	var got []string
	for r.Next() {
		switch x := r.Record().(type) {
		case *Exit:
			got = append(got, fmt.Sprintf("EXIT pid %d time %d attr %d sid time %d", x.Pid, x.Time, x.SampleID.Attr.Index, x.SampleID.Time))
		case *Comm:
			got = append(got, fmt.Sprintf("COMM %q attr %d sid time %d cpu %d", x.Comm, x.SampleID.Attr.Index, x.SampleID.Time, x.SampleID.CPU))
		}
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	want := []string{
		"EXIT pid 7 time 100 attr 1 sid time 200",
		`COMM "worker" attr 0 sid time 300 cpu 3`,
		`COMM "a-long-name-xx" attr 1 sid time 400 cpu 0`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
