package kmodsec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

func TestStreamRoundTrip(t *testing.T) {
	withID := recT3
	withID.SampleID = []byte{1, 2, 3, 4, 5, 6, 7, 8}
	recs := []Record{recT1, recT3, withID}
	for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		for _, typ := range []uint32{DefaultType, 90} {
			var buf bytes.Buffer
			if err := WriteStream(&buf, recs, order, typ); err != nil {
				t.Fatal(err)
			}
			got, gotOrder, err := ReadStream(&buf, typ)
			if err != nil {
				t.Fatalf("%v type %d: %v", order, typ, err)
			}
			if gotOrder != order {
				t.Errorf("order = %v, want %v", gotOrder, order)
			}
			if !reflect.DeepEqual(got, recs) {
				t.Errorf("%v type %d: got %+v", order, typ, got)
			}
		}
	}
}

func TestReadStreamMixed(t *testing.T) {
	// KMOD_SEC_MAP records of type 83 interleaved with a COMPRESSED2
	// record (also type 83) and a FINISHED_ROUND (68): only the section
	// records come back.
	for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		var s []byte
		s = append(s, Encode(recT1, order, DefaultType, 0)...)
		s = append(s, compressed2(order, append(perfdata.ZstdMagic[:], 1, 2, 3, 4, 5))...)
		round := make([]byte, 8)
		order.PutUint32(round, 68)
		order.PutUint16(round[6:], 8)
		s = append(s, round...)
		s = append(s, Encode(recT3, order, DefaultType, 16)...)
		got, _, err := ReadStream(bytes.NewReader(s), DefaultType)
		if err != nil {
			t.Fatal(err)
		}
		t3 := recT3
		t3.SampleID = make([]byte, 16)
		if want := []Record{recT1, t3}; !reflect.DeepEqual(got, want) {
			t.Errorf("%v: got %+v", order, got)
		}
	}
}

func TestReadStreamErrors(t *testing.T) {
	t1 := Encode(recT1, binary.LittleEndian, DefaultType, 0)
	t3 := Encode(recT3, binary.LittleEndian, DefaultType, 0)
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	tests := []struct {
		name string
		in   []byte
		msg  string
	}{
		{"perf.data", []byte("PERFILE2\x68\x00\x00\x00\x00\x00\x00\x00"), "perf.data"},
		{"perf.data swapped", []byte("2ELIFREP"), "perf.data"},
		{"wrong type", Encode(recT1, binary.LittleEndian, 84, 0), "neither is the record type 83"},
		{"truncated header", cat(t1, t3[:5]), "record 1 at stream offset 120: reading header: unexpected EOF"},
		{"truncated record", cat(t1, t3[:50]), "record 1 at stream offset 120: header.size 72: unexpected EOF"},
		{"tiny size", cat(t1, patch(t3, 6, 4, 0)), "record 1 at stream offset 120: header.size 4 is smaller than the 8-byte header"},
		{"bad record", cat(t1, patch(t3, 40, 0, 0)), "record 1 at stream offset 120: kmodsec: offset 40 (0x28): sec_name_len is 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ReadStream(bytes.NewReader(tt.in), DefaultType)
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %v, want one containing %q", err, tt.msg)
			}
		})
	}
	if _, _, err := ReadStream(strings.NewReader("PERFILE2"), DefaultType); !errors.Is(err, ErrPerfData) {
		t.Errorf("perf.data: %v, want ErrPerfData", err)
	}
}

func TestReadStreamEmpty(t *testing.T) {
	recs, order, err := ReadStream(bytes.NewReader(nil), DefaultType)
	if err != nil || recs != nil || order != binary.LittleEndian {
		t.Errorf("ReadStream(empty) = %v, %v, %v", recs, order, err)
	}
}

func TestWriteStreamInvalid(t *testing.T) {
	err := WriteStream(new(bytes.Buffer), []Record{recT1, {Section: "a\x00", Path: "/m.ko"}}, binary.LittleEndian, DefaultType)
	if err == nil || !strings.Contains(err.Error(), "record 1") {
		t.Errorf("error %v, want one naming record 1", err)
	}
}
