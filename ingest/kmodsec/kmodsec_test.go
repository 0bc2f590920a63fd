package kmodsec

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

// Test vectors T1–T3 of perf-maps-semantics.md §4.4, as hex dumps; "aa"
// marks bytes the RFC's synthesiser never writes.
const (
	vecT1 = `
53 00 00 00 01 00 78 00 ff ff ff ff aa aa aa aa
00 a0 e5 c0 ff ff ff ff c3 05 00 00 00 00 00 00
40 c0 01 00 00 00 00 00 0e 00 36 00 2e 6e 6f 69
6e 73 74 72 2e 74 65 78 74 00 aa 2f 6c 69 62 2f
6d 6f 64 75 6c 65 73 2f 36 2e 32 2e 30 2d 72 63
31 2f 6b 65 72 6e 65 6c 2f 61 72 63 68 2f 78 38
36 2f 6b 76 6d 2f 6b 76 6d 2d 61 6d 64 2e 6b 6f
00 aa aa aa aa aa aa aa`
	// T2: T1 with id_hdr_size 16; the synthesiser zeroes 0x74–0x83 and
	// never writes 0x84–0x87.
	vecT2 = `
53 00 00 00 01 00 88 00 ff ff ff ff aa aa aa aa
00 a0 e5 c0 ff ff ff ff c3 05 00 00 00 00 00 00
40 c0 01 00 00 00 00 00 0e 00 36 00 2e 6e 6f 69
6e 73 74 72 2e 74 65 78 74 00 aa 2f 6c 69 62 2f
6d 6f 64 75 6c 65 73 2f 36 2e 32 2e 30 2d 72 63
31 2f 6b 65 72 6e 65 6c 2f 61 72 63 68 2f 78 38
36 2f 6b 76 6d 2f 6b 76 6d 2d 61 6d 64 2e 6b 6f
00 aa aa aa 00 00 00 00 00 00 00 00 00 00 00 00
00 00 00 00 aa aa aa aa`
	// T3: ".text.unlikely" (14), "/k/m.ko" (7): size 24, header.size 72,
	// path at 0x3c. pid, start, len and pgoff are free in §4.4; these are
	// chosen here.
	vecT3 = `
53 00 00 00 01 00 48 00 ff ff ff ff aa aa aa aa
00 10 00 c0 ff ff ff ff 80 00 00 00 00 00 00 00
c0 02 00 00 00 00 00 00 0f 00 08 00 2e 74 65 78
74 2e 75 6e 6c 69 6b 65 6c 79 00 aa 2f 6b 2f 6d
2e 6b 6f 00 aa aa aa aa`
)

const kvmAmdPath = "/lib/modules/6.2.0-rc1/kernel/arch/x86/kvm/kvm-amd.ko"

var (
	recT1 = Record{Misc: 1, Pid: -1, Start: 0xffffffffc0e5a000, Len: 0x5c3, Pgoff: 0x1c040,
		Section: ".noinstr.text", Path: kvmAmdPath}
	recT3 = Record{Misc: 1, Pid: -1, Start: 0xffffffffc0001000, Len: 0x80, Pgoff: 0x2c0,
		Section: ".text.unlikely", Path: "/k/m.ko"}
)

// parseVec returns the bytes of a hex dump, with the never-written "aa"
// bytes as 0xaa, and the mask of those positions.
func parseVec(t testing.TB, s string) (raw []byte, stale []bool) {
	t.Helper()
	for _, f := range strings.Fields(s) {
		b, err := hex.DecodeString(f)
		if err != nil || len(b) != 1 {
			t.Fatalf("bad hex byte %q", f)
		}
		raw = append(raw, b[0])
		stale = append(stale, f == "aa")
	}
	return raw, stale
}

// neverWritten returns the mask of bytes the RFC's synthesiser does not
// write in a record of this shape: the padding at 12, the gap byte, the
// bytes from the path's NUL to the zeroed trailer area, and the last 4
// bytes of the record.
func neverWritten(secLen, pathLen, idHdrSize int) []bool {
	size := align8(secLen + pathLen + 2)
	total := HeaderSize + size + idHdrSize
	m := make([]bool, total)
	for i := 12; i < 16; i++ {
		m[i] = true
	}
	m[DataOffset+secLen+1] = true
	for i := DataOffset + secLen + 2 + pathLen + 1; i < DataOffset+size; i++ {
		m[i] = true
	}
	for i := total - 4; i < total; i++ {
		m[i] = true
	}
	return m
}

func TestVectors(t *testing.T) {
	tests := []struct {
		name      string
		vec       string
		rec       Record
		idHdrSize int
		size      int
	}{
		{"T1", vecT1, recT1, 0, 120},
		{"T2", vecT2, recT1, 16, 136},
		{"T3", vecT3, recT3, 0, 72},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, stale := parseVec(t, tt.vec)
			if len(raw) != tt.size {
				t.Fatalf("vector has %d bytes, want %d", len(raw), tt.size)
			}
			// The "aa" bytes are exactly the ones the layout leaves unwritten.
			if want := neverWritten(len(tt.rec.Section), len(tt.rec.Path), tt.idHdrSize); !reflect.DeepEqual(stale, want) {
				t.Fatalf("never-written mask of the vector differs from the layout's:\n got %v\nwant %v", stale, want)
			}
			got := Encode(tt.rec, binary.LittleEndian, DefaultType, tt.idHdrSize)
			if len(got) != tt.size {
				t.Fatalf("Encode gave %d bytes, want %d", len(got), tt.size)
			}
			for i := range raw {
				want := raw[i]
				if stale[i] {
					want = 0 // Encode writes zeros where the RFC writes nothing
				}
				if got[i] != want {
					t.Errorf("byte %#x = %#02x, want %#02x", i, got[i], want)
				}
			}
			// Decoding the vector with stale 0xaa bytes gives the record:
			// no field depends on a never-written byte, except the raw
			// trailer's last 4 bytes.
			rec, err := Decode(raw, binary.LittleEndian, tt.idHdrSize)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.rec
			if tt.idHdrSize > 0 {
				want.SampleID = make([]byte, tt.idHdrSize)
				copy(want.SampleID[tt.idHdrSize-4:], []byte{0xaa, 0xaa, 0xaa, 0xaa})
			}
			if !reflect.DeepEqual(rec, want) {
				t.Errorf("Decode = %+v, want %+v", rec, want)
			}
			// Inferring the trailer size gives the same record.
			rec2, err := Decode(raw, binary.LittleEndian, InferIDHdrSize)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(rec2, want) {
				t.Errorf("Decode(InferIDHdrSize) = %+v, want %+v", rec2, want)
			}
			if !LooksLikeKmodSecMap(raw, binary.LittleEndian) {
				t.Error("LooksLikeKmodSecMap = false for a vector")
			}
		})
	}
}

func TestT3Offsets(t *testing.T) {
	b := Encode(recT3, binary.LittleEndian, DefaultType, 0)
	if got := binary.LittleEndian.Uint16(b[40:]); got != 0x0f {
		t.Errorf("sec_name_len = %#x, want 0xf", got)
	}
	if got := binary.LittleEndian.Uint16(b[42:]); got != 0x08 {
		t.Errorf("filename_len = %#x, want 0x8", got)
	}
	if got := string(b[0x3c : 0x3c+7]); got != "/k/m.ko" {
		t.Errorf("path at 0x3c = %q", got)
	}
}

func TestRoundTrip(t *testing.T) {
	recs := []Record{
		recT1,
		recT3,
		{Misc: 0, Pid: 4242, Start: 1, Len: 0, Pgoff: 0, Section: "", Path: ""},
		{Misc: 0xffff, Pid: -2, Start: ^uint64(0), Len: ^uint64(0), Pgoff: ^uint64(0),
			Section: ".data..read_mostly", Path: "/x/y/é-ü.ko.zst"},
		{Misc: 1, Pid: -1, Start: 0xffffffffc0000000, Len: 8, Pgoff: 0x40, Section: ".bss",
			Path: "/a.ko", SampleID: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}},
	}
	for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		for _, rec := range recs {
			idHdr := len(rec.SampleID)
			b := Encode(rec, order, 99, idHdr)
			if b == nil {
				t.Fatalf("%v: Encode(%+v) = nil", order, rec)
			}
			if got := order.Uint32(b); got != 99 {
				t.Errorf("%v: type = %d, want 99", order, got)
			}
			got, err := Decode(b, order, idHdr)
			if err != nil {
				t.Fatalf("%v: Decode: %v", order, err)
			}
			if !reflect.DeepEqual(got, rec) {
				t.Errorf("%v: round trip = %+v, want %+v", order, got, rec)
			}
			if again := Encode(got, order, 99, idHdr); !bytes.Equal(again, b) {
				t.Errorf("%v: re-encoding differs:\n%x\n%x", order, again, b)
			}
		}
	}
}

func TestBigEndianLayout(t *testing.T) {
	rec := recT1
	// A big-endian writer's pid=0x11223344, tid=0x55667788 trailer word.
	rec.SampleID = []byte{0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11}
	b := Encode(rec, binary.BigEndian, DefaultType, 8)
	want := map[int][]byte{
		0:   {0, 0, 0, 0x53},
		4:   {0, 1, 0, 0x80},
		8:   {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0},
		16:  {0xff, 0xff, 0xff, 0xff, 0xc0, 0xe5, 0xa0, 0x00},
		24:  {0, 0, 0, 0, 0, 0, 0x05, 0xc3},
		32:  {0, 0, 0, 0, 0, 0x01, 0xc0, 0x40},
		40:  {0, 0x0e, 0, 0x36},
		44:  []byte(".noinstr.text\x00"),
		59:  []byte(kvmAmdPath + "\x00"),
		120: {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88},
	}
	if len(b) != 128 {
		t.Fatalf("len = %d, want 128", len(b))
	}
	for off, w := range want {
		if got := b[off : off+len(w)]; !bytes.Equal(got, w) {
			t.Errorf("offset %d: % x, want % x", off, got, w)
		}
	}
	got, err := Decode(b, binary.BigEndian, 8)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rec) {
		t.Errorf("Decode = %+v, want %+v", got, rec)
	}
	// perf swaps the trailer as one u64: pid<<32 | tid.
	if w := binary.LittleEndian.Uint64(got.SampleID); w != 0x1122334455667788 {
		t.Errorf("trailer word = %#x", w)
	}
	// The same bytes read in the wrong order are rejected.
	if _, err := Decode(b, binary.LittleEndian, 8); err == nil {
		t.Error("big-endian record decoded as little-endian")
	}
	if LooksLikeKmodSecMap(b, binary.LittleEndian) {
		t.Error("LooksLikeKmodSecMap accepted the wrong byte order")
	}
}

// patch returns a copy of raw with b written at off.
func patch(raw []byte, off int, b ...byte) []byte {
	out := append([]byte(nil), raw...)
	copy(out[off:], b)
	return out
}

func TestDecodeErrors(t *testing.T) {
	t1, _ := parseVec(t, vecT1)
	t2, _ := parseVec(t, vecT2)
	tests := []struct {
		name      string
		raw       []byte
		idHdrSize int
		off       int // -1: not a DecodeError
		msg       string
	}{
		{"empty", nil, 0, 0, "shorter than the 8-byte header"},
		{"short header", t1[:7], 0, 0, "shorter than the 8-byte header"},
		{"size below fixed part", patch(t1[:40], 6, 40, 0), 0, 6, "smaller than the 48-byte fixed part"},
		{"truncated", t1[:100], 0, 6, "header.size 120 does not match the 100 bytes given"},
		{"trailing bytes", append(append([]byte(nil), t1...), 0, 0, 0, 0, 0, 0, 0, 0), 0, 6, "does not match the 128 bytes"},
		{"bad id_hdr_size", t1, 7, -1, "id_hdr_size 7"},
		{"negative id_hdr_size", t1, -8, -1, "id_hdr_size -8"},
		{"id_hdr_size too big", t1, 80, 6, "leaves no room"},
		{"sec_name_len 0", patch(t1, 40, 0, 0), 0, 40, "sec_name_len is 0"},
		{"sec_name_len past end", patch(t1, 40, 0x4d, 0), 0, 40, "sec_name_len 77 runs past"},
		{"sec_name_len huge", patch(t1, 40, 0xff, 0xff), 0, 40, "sec_name_len 65535 runs past"},
		{"filename_len 0", patch(t1, 42, 0, 0), 0, 42, "filename_len is 0"},
		{"filename_len past end", patch(t1, 42, 0x3e, 0), 0, 42, "filename_len 62 puts the path's NUL at offset 120, past the string area, which ends before offset 120"},
		{"filename_len into trailer", t2, 24, 42, "past the string area, which ends before offset 112"},
		{"name NUL missing", patch(t1, 57, 'x'), 0, 57, "section name is not NUL-terminated"},
		{"name shorter than stated", patch(t1, 40, 0x0d, 0), 0, 56, "section name is not NUL-terminated at the end its length field states (byte 0x74)"},
		{"NUL inside name", patch(t1, 48, 0), 0, 48, "NUL inside the section name"},
		{"path NUL missing", patch(t1, 112, 'x'), 0, 112, "path is not NUL-terminated"},
		{"NUL inside path", patch(t1, 70, 0), 0, 70, "NUL inside the path"},
		{"size mismatch", t2, 0, 6, "header.size 136 does not match 48 + ALIGN8(sec_name_len 14 + filename_len 54) + id_hdr_size 0 = 120"},
		{"size mismatch 8", t2, 8, 6, "id_hdr_size 8 = 128"},
		{"infer odd trailer", patch(append(append([]byte(nil), t1...), 0, 0, 0, 0), 6, 124), InferIDHdrSize, 6, "leaves 4 bytes"},
		{"filename_len shrunk", patch(t1, 42, 0x30, 0), 0, 106, "path is not NUL-terminated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(tt.raw, binary.LittleEndian, tt.idHdrSize)
			if err == nil {
				t.Fatal("Decode succeeded")
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not contain %q", err, tt.msg)
			}
			var de *DecodeError
			if tt.off < 0 {
				if errors.As(err, &de) {
					t.Errorf("error %q is a DecodeError", err)
				}
				return
			}
			if !errors.As(err, &de) {
				t.Fatalf("error %q is not a DecodeError", err)
			}
			if de.Offset != tt.off {
				t.Errorf("offset %d, want %d (%v)", de.Offset, tt.off, err)
			}
		})
	}
}

func TestEncodeInvalid(t *testing.T) {
	tests := []struct {
		name      string
		rec       Record
		idHdrSize int
		msg       string
	}{
		{"NUL in section", Record{Section: "a\x00b", Path: "/m.ko"}, 0, "section name"},
		{"NUL in path", Record{Section: ".data", Path: "/m\x00.ko"}, 0, "path"},
		{"too long", Record{Section: ".data", Path: "/" + strings.Repeat("x", 65490) + ".ko"}, 0, "more than header.size can hold"},
		{"odd id_hdr_size", Record{Section: ".data", Path: "/m.ko"}, 4, "id_hdr_size 4"},
		{"sample_id too long", Record{Section: ".data", Path: "/m.ko", SampleID: make([]byte, 16)}, 8, "longer than id_hdr_size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if b := Encode(tt.rec, binary.LittleEndian, DefaultType, tt.idHdrSize); b != nil {
				t.Errorf("Encode = %d bytes, want nil", len(b))
			}
			_, err := Append(nil, tt.rec, binary.LittleEndian, DefaultType, tt.idHdrSize)
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Append error %v, want one containing %q", err, tt.msg)
			}
		})
	}
	// The largest encodable record still decodes.
	rec := Record{Section: ".data", Path: "/" + strings.Repeat("x", MaxRecordSize-HeaderSize-len(".data")-len("/.ko")-2-7) + ".ko"}
	b := Encode(rec, binary.BigEndian, DefaultType, 0)
	if b == nil {
		t.Fatal("Encode of the largest record failed")
	}
	if got, err := Decode(b, binary.BigEndian, 0); err != nil || !reflect.DeepEqual(got, rec) {
		t.Errorf("Decode of the largest record: %v", err)
	}
}

func TestMap(t *testing.T) {
	got := recT1.Map()
	want := index.Map{Start: 0xffffffffc0e5a000, End: 0xffffffffc0e5a5c3, Pgoff: 0x1c040,
		Mapping: index.MappingDSO, Kind: index.KindModuleSection, DSO: "[kvm-amd].noinstr.text"}
	if got != want {
		t.Errorf("Map = %v, want %v", got, want)
	}
	if ip := got.MapIP(0xffffffffc0e5a010); ip != 0x1c050 {
		t.Errorf("MapIP = %#x", ip)
	}
}

func TestDSOName(t *testing.T) {
	tests := []struct {
		path, section, want, err string
	}{
		{kvmAmdPath, ".noinstr.text", "[kvm-amd].noinstr.text", ""},
		{"/k/m.ko", ".text.unlikely", "[m].text.unlikely", ""},
		{"/lib/modules/x/nf_tables.ko.zst", ".data", "[nf_tables].data", ""},
		{"ko/kvm-amd.ko", ".bss", "[kvm-amd].bss", ""},
		{"kvm-amd.ko", ".bss", "", "has no '/'"},
		{"/lib/modules/kvm-amd", ".bss", "", "does not name a .ko file"},
		{"/lib/x.ko/kvm-amd", ".bss", "", "does not name a .ko file"},
		{"/lib/.ko", ".bss", "", "empty module name"},
		{"", ".bss", "", "has no '/'"},
	}
	for _, tt := range tests {
		got, err := Record{Path: tt.path, Section: tt.section}.DSOName()
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("DSOName(%q) error %v, want %q", tt.path, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("DSOName(%q) = %q, %v; want %q", tt.path, got, err, tt.want)
		}
	}
	// Map falls back to the whole basename.
	if dso := (Record{Path: "weird", Section: ".data"}).Map().DSO; dso != "[weird].data" {
		t.Errorf("fallback DSO = %q", dso)
	}
}

// compressed2 returns a PERF_RECORD_COMPRESSED2 record: header, u64
// data_size, payload, zero padding to 8.
func compressed2(order binary.ByteOrder, payload []byte) []byte {
	size := align8(16 + len(payload))
	b := make([]byte, size)
	order.PutUint32(b, DefaultType)
	order.PutUint16(b[6:], uint16(size))
	order.PutUint64(b[8:], uint64(len(payload)))
	copy(b[16:], payload)
	return b
}

func TestLooksLikeKmodSecMap(t *testing.T) {
	t1, _ := parseVec(t, vecT1)
	frame := append(perfdata.ZstdMagic[:], bytes.Repeat([]byte{0x11, 0x22, 0x33}, 40)...)
	zstdStart := recT1
	zstdStart.Start = 0xffffffff_fd2fb528 // low half is the zstd magic
	badPath := recT1
	badPath.Path = "/lib/modules/kvm-amd"
	tests := []struct {
		name  string
		raw   []byte
		order binary.ByteOrder
		want  bool
	}{
		{"T1", t1, binary.LittleEndian, true},
		{"T1 big-endian", Encode(recT1, binary.BigEndian, DefaultType, 16), binary.BigEndian, true},
		{"T1 wrong order", t1, binary.BigEndian, false},
		{"COMPRESSED2 frame start", compressed2(binary.LittleEndian, frame), binary.LittleEndian, false},
		{"COMPRESSED2 big-endian", compressed2(binary.BigEndian, frame), binary.BigEndian, false},
		{"COMPRESSED (81) layout", patch(t1, 8, perfdata.ZstdMagic[:]...), binary.LittleEndian, false},
		{"magic at start (false negative, documented)", Encode(zstdStart, binary.LittleEndian, DefaultType, 0), binary.LittleEndian, false},
		{"path without .ko", Encode(badPath, binary.LittleEndian, DefaultType, 0), binary.LittleEndian, false},
		{"truncated", t1[:60], binary.LittleEndian, false},
		{"empty", nil, binary.LittleEndian, false},
	}
	for _, tt := range tests {
		if got := LooksLikeKmodSecMap(tt.raw, tt.order); got != tt.want {
			t.Errorf("%s: LooksLikeKmodSecMap = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestCompressed2ContinuationRejected checks the claim in
// LooksLikeKmodSecMap's doc: a COMPRESSED2 record whose payload is the
// middle of a zstd frame (random-looking bytes, no magic) is not taken for
// a KMOD_SEC_MAP record.
func TestCompressed2ContinuationRejected(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 20000; i++ {
		payload := make([]byte, 32+rng.Intn(400))
		rng.Read(payload)
		for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
			if raw := compressed2(order, payload); LooksLikeKmodSecMap(raw, order) {
				t.Fatalf("random COMPRESSED2 record taken for KMOD_SEC_MAP: %x", raw)
			}
		}
	}
}

func TestNeverReadsStaleBytes(t *testing.T) {
	// Fill every never-written byte with garbage, including NULs and '/':
	// the decoded record must not change (the trailer aside).
	raw := Encode(recT3, binary.LittleEndian, DefaultType, 8)
	mask := neverWritten(len(recT3.Section), len(recT3.Path), 8)
	for _, fill := range []byte{0x00, 0xaa, '/', 0xff} {
		b := append([]byte(nil), raw...)
		for i, m := range mask {
			if m {
				b[i] = fill
			}
		}
		got, err := Decode(b, binary.LittleEndian, 8)
		if err != nil {
			t.Fatalf("fill %#x: %v", fill, err)
		}
		got.SampleID = nil
		if !reflect.DeepEqual(got, recT3) {
			t.Errorf("fill %#x: %+v", fill, got)
		}
	}
}

// A KMOD_SEC_MAP at the proposal's type 83 whose bytes could pass for a
// COMPRESSED2 header (a small pid read as data_size, a start address
// whose low bytes are the zstd magic) is still read as a record, because
// the recording has features and none of them is COMPRESSED.
func TestFromPerfDataNotCompressed2(t *testing.T) {
	name := filepath.Join(t.TempDir(), "perf.data")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w, err := perfdata.NewWriter(f, perfdata.WriterOptions{Hostname: "h"})
	if err != nil {
		t.Fatal(err)
	}
	rec := Record{Misc: 1, Pid: 8, Start: 0xffffffc0fd2fb528, Len: 0x100, Pgoff: 0x40, Section: ".data", Path: "/k/m.ko"}
	raw := Encode(rec, binary.LittleEndian, DefaultType, w.Attr().IDHdrSize())
	if !HasZstdFrame(raw) {
		t.Fatal("test record does not look like COMPRESSED2")
	}
	if err := w.WriteRaw(raw); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r, err := perfdata.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	recs, err := FromPerfData(r, DefaultType)
	if err != nil || len(recs) != 1 || recs[0].Start != rec.Start || recs[0].Path != rec.Path || recs[0].Pid != 8 {
		t.Fatalf("FromPerfData = %+v, %v", recs, err)
	}
}
