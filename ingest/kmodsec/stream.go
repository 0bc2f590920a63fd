package kmodsec

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

// IsPerfData reports whether b starts with a perf.data file magic
// ("PERFILE2" in either byte order).
func IsPerfData(b []byte) bool {
	return len(b) >= 8 && (string(b[:8]) == perfdata.Magic || string(b[:8]) == perfdata.MagicSwapped)
}

// ReadStream reads a bare record stream, such as a corpus's kmodsec.data:
// perf records back to back, all in the writer's byte order, with no file
// header. The order is detected from the first record, whose header.type
// must equal typ in exactly one order (little-endian is tried first); it
// is returned, and is binary.LittleEndian for an empty stream.
//
// Records of type typ are decoded with their trailer size inferred
// (InferIDHdrSize); records of other types, and type-typ records that carry
// a zstd frame (PERF_RECORD_COMPRESSED2 when typ is 83, see HasZstdFrame),
// are skipped. A malformed record, a record header smaller than 8 bytes or
// a truncated record ends the read with an error naming the record's
// index and stream offset. A perf.data file gives ErrPerfData.
func ReadStream(r io.Reader, typ uint32) ([]Record, binary.ByteOrder, error) {
	br := bufio.NewReader(r)
	var (
		order binary.ByteOrder
		recs  []Record
		off   int64
		hdr   [8]byte
		buf   []byte
	)
	for n := 0; ; n++ {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			if err == io.EOF {
				break
			}
			return recs, order, fmt.Errorf("kmodsec: record %d at stream offset %d: reading header: %w", n, off, unexpected(err))
		}
		if order == nil {
			if IsPerfData(hdr[:]) {
				return nil, nil, ErrPerfData
			}
			var err error
			if order, err = detectOrder(hdr[:], typ); err != nil {
				return nil, nil, err
			}
		}
		size := int(order.Uint16(hdr[offSize:]))
		if size < len(hdr) {
			return recs, order, fmt.Errorf("kmodsec: record %d at stream offset %d: header.size %d is smaller than the 8-byte header", n, off, size)
		}
		// size ≤ 65535, so buf stays small whatever the input says.
		buf = append(buf[:0], hdr[:]...)
		buf = append(buf, make([]byte, size-len(hdr))...)
		if _, err := io.ReadFull(br, buf[len(hdr):]); err != nil {
			return recs, order, fmt.Errorf("kmodsec: record %d at stream offset %d: header.size %d: %w", n, off, size, unexpected(err))
		}
		if order.Uint32(buf[offType:]) == typ && !HasZstdFrame(buf) {
			rec, err := Decode(buf, order, InferIDHdrSize)
			if err != nil {
				return recs, order, fmt.Errorf("record %d at stream offset %d: %w", n, off, err)
			}
			recs = append(recs, rec)
		}
		off += int64(size)
	}
	if order == nil {
		order = binary.LittleEndian
	}
	return recs, order, nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// detectOrder returns the byte order in which the 8-byte record header h
// has type typ.
func detectOrder(h []byte, typ uint32) (binary.ByteOrder, error) {
	le := binary.LittleEndian.Uint32(h)
	be := binary.BigEndian.Uint32(h)
	switch {
	case le == typ:
		return binary.LittleEndian, nil
	case be == typ:
		return binary.BigEndian, nil
	}
	return nil, fmt.Errorf("kmodsec: first record has type %d read little-endian, %d big-endian; neither is the record type %d", le, be, typ)
}

// WriteStream writes recs as a bare record stream of type-typ records in
// the given order, without sample_id trailers except each record's own
// SampleID, zero-padded to a multiple of 8 bytes.
func WriteStream(w io.Writer, recs []Record, order binary.ByteOrder, typ uint32) error {
	bw := bufio.NewWriter(w)
	var buf []byte
	for i, rec := range recs {
		var err error
		buf, err = Append(buf[:0], rec, order, typ, align8(len(rec.SampleID)))
		if err != nil {
			return fmt.Errorf("record %d: %w", i, err)
		}
		if _, err := bw.Write(buf); err != nil {
			return fmt.Errorf("kmodsec: writing record %d: %w", i, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("kmodsec: writing records: %w", err)
	}
	return nil
}
