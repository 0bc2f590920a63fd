package kmodsec

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

// FuzzDecode checks that Decode never panics and that whatever it accepts
// re-encodes to the same bytes, except for the never-written ones, and
// decodes again to an equal record.
func FuzzDecode(f *testing.F) {
	for _, v := range []string{vecT1, vecT2, vecT3} {
		raw, _ := parseVec(f, v)
		f.Add(raw, false, int8(InferIDHdrSize))
		f.Add(raw, false, int8(0))
		f.Add(raw, false, int8(16))
	}
	withID := recT3
	withID.SampleID = []byte{1, 2, 3, 4, 5, 6, 7, 8}
	f.Add(Encode(withID, binary.BigEndian, DefaultType, 8), true, int8(8))
	f.Add(Encode(recT1, binary.BigEndian, DefaultType, 0), true, int8(InferIDHdrSize))
	f.Add(compressed2(binary.LittleEndian, append(perfdata.ZstdMagic[:], 9, 9, 9)), false, int8(InferIDHdrSize))
	f.Fuzz(func(t *testing.T, raw []byte, big bool, idHdr int8) {
		var order binary.ByteOrder = binary.LittleEndian
		if big {
			order = binary.BigEndian
		}
		LooksLikeKmodSecMap(raw, order)
		rec, err := Decode(raw, order, int(idHdr))
		if err != nil {
			return
		}
		n := len(rec.SampleID)
		if idHdr >= 0 && n != int(idHdr) {
			t.Fatalf("SampleID has %d bytes, id_hdr_size %d", n, idHdr)
		}
		typ := order.Uint32(raw)
		b, err := Append(nil, rec, order, typ, n)
		if err != nil {
			t.Fatalf("decoded record does not encode: %v (%+v)", err, rec)
		}
		if len(b) != len(raw) {
			t.Fatalf("re-encoded %d bytes, decoded %d", len(b), len(raw))
		}
		// Decode ignores the padding at 12, the gap byte and everything
		// between the path's NUL and the trailer; the trailer is carried
		// through, stale bytes and all.
		gap := DataOffset + len(rec.Section) + 1
		pathEnd := gap + 1 + len(rec.Path) + 1
		for i := range raw {
			if (i >= 12 && i < 16) || i == gap || (i >= pathEnd && i < len(raw)-n) {
				continue
			}
			if b[i] != raw[i] {
				t.Fatalf("byte %d: re-encoded %#02x, input %#02x", i, b[i], raw[i])
			}
		}
		again, err := Decode(b, order, n)
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if !reflect.DeepEqual(again, rec) {
			t.Fatalf("re-decoded %+v, want %+v", again, rec)
		}
		if !bytes.Equal(Encode(again, order, typ, n), b) {
			t.Fatal("second encoding differs")
		}
	})
}
