package perfdata

import (
	"encoding/binary"
	"fmt"
)

// Decoder decodes single records outside a perf.data file: the records
// the kernel writes to a perf_event ring buffer for events opened with
// one attribute, in the machine's byte order. It uses the Reader's
// decoding, so a record decodes exactly as it would from a recording.
// A Decoder is not safe for concurrent use.
type Decoder struct {
	r Reader
}

// NewDecoder returns a Decoder for records of events opened with attr
// (its SampleType, Flags and ReadFormat decide the layout), in byte
// order bo. The Decoder keeps a copy of attr; the Attr of decoded
// samples and sample_id trailers points to that copy.
func NewDecoder(attr *Attr, bo binary.ByteOrder) *Decoder {
	d := &Decoder{}
	if bo == binary.NativeEndian { // the fast sample path wants LittleEndian itself
		if binary.NativeEndian.Uint16([]byte{1, 0}) == 1 {
			bo = binary.LittleEndian
		} else {
			bo = binary.BigEndian
		}
	}
	d.r.setByteOrder(bo)
	d.r.idToAttr = make(map[uint64]*Attr)
	d.r.stats.ByType = make(map[RecordType]uint64)
	a := *attr
	a.IDs = append([]uint64(nil), attr.IDs...)
	d.r.addAttr(&a)
	return d
}

// Decode decodes rec, one whole record (header included, header.size
// equal to len(rec)). The record returned, and the slices and strings it
// holds, are reused by the next call to Decode. Types the decoder does
// not know come back as *Unknown.
func (d *Decoder) Decode(rec []byte) (Record, error) {
	if len(rec) < 8 {
		return nil, fmt.Errorf("perfdata: decoder: %d-byte record is shorter than its header", len(rec))
	}
	bo := d.r.bo
	info := Info{Type: RecordType(bo.Uint32(rec)), Misc: bo.Uint16(rec[4:]), Size: bo.Uint16(rec[6:])}
	if int(info.Size) != len(rec) {
		return nil, fmt.Errorf("perfdata: decoder: %s record of %d bytes with header.size %d", info.Type, len(rec), info.Size)
	}
	return d.r.decode(rec, info)
}
