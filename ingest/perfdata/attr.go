package perfdata

import (
	"encoding/binary"
	"math/bits"
)

// Attribute sizes (PERF_ATTR_SIZE_VER*).
const (
	attrSizeVer0 = 64
	attrSizeMax  = 4096 // far above any ABI version; larger sizes are rejected
	attrSizeKnow = 136  // bytes of perf_event_attr this package decodes (VER8)
)

// Attr is a perf_event_attr with the ids of the events that use it.
type Attr struct {
	Type             uint32
	Size             uint32 // as recorded (0 in old files means 64)
	Config           uint64
	SamplePeriod     uint64 // sample_freq when Flags has AttrFreq
	SampleType       SampleFormat
	ReadFormat       ReadFormat
	Flags            AttrFlags
	WakeupEvents     uint32
	BPType           uint32
	Config1          uint64
	Config2          uint64
	BranchSampleType uint64
	SampleRegsUser   uint64
	SampleStackUser  uint32
	ClockID          int32
	SampleRegsIntr   uint64
	AuxWatermark     uint32
	SampleMaxStack   uint16
	AuxSampleSize    uint32
	SigData          uint64
	Config3          uint64

	// IDs are the sample ids of the events opened with this attr.
	IDs []uint64
	// Index is the position of the attr in the file (or pipe).
	Index int
}

// SampleIDAll reports whether non-SAMPLE records carry a sample_id trailer.
func (a *Attr) SampleIDAll() bool { return a.Flags&AttrSampleIDAll != 0 }

// Perf61AttrSize is the largest perf_event_attr the installed perf 6.1
// reads: sizeof(struct perf_event_attr) in its build, 128 bytes
// (PERF_ATTR_SIZE_VER7) for Debian's, built with the system's uapi
// headers. read_attr (util/header.c) refuses a recording with a larger
// one, "file uses a more recent and unsupported ABI (N bytes extra)", as
// perf builds with newer kernel headers write (sig_data, in Linux 5.13's:
// 136 bytes; config3: 144), whatever their version. The Reader reads such
// attrs, taking the fields it knows.
const Perf61AttrSize = 128

// IDHdrSize returns the size of the sample_id trailer of non-SAMPLE kernel
// records (0 unless sample_id_all is set), as perf's perf_evsel__calc_id_pos.
func (a *Attr) IDHdrSize() int {
	if !a.SampleIDAll() {
		return 0
	}
	return idHdrSize(a.SampleType)
}

func idHdrSize(t SampleFormat) int {
	n := 0
	for _, b := range []SampleFormat{SampleFormatTID, SampleFormatTime, SampleFormatID, SampleFormatStreamID, SampleFormatCPU, SampleFormatIdentifier} {
		if t&b != 0 {
			n += 8
		}
	}
	return n
}

// decodeAttr decodes a perf_event_attr of size bytes from b (which holds
// at least size bytes). Unknown tails are ignored and missing ones read as
// zero.
func decodeAttr(b []byte, bo binary.ByteOrder, off int64) (*Attr, error) {
	if len(b) < 8 {
		return nil, formatError(off, "attr at file offset %#x: %d bytes, need at least 8", off, len(b))
	}
	size := bo.Uint32(b[4:])
	n := int(size)
	if size == 0 {
		n = attrSizeVer0
	}
	if n < attrSizeVer0 || n > attrSizeMax {
		return nil, formatError(off, "attr at file offset %#x: size %d out of range [%d, %d]", off, size, attrSizeVer0, attrSizeMax)
	}
	if n > len(b) {
		return nil, formatError(off, "attr at file offset %#x: size %d exceeds the %d bytes available", off, size, len(b))
	}
	var buf [attrSizeKnow]byte
	copy(buf[:], b[:n]) // zero-extend an older, shorter attr
	a := &Attr{
		Type:             bo.Uint32(buf[0:]),
		Size:             size,
		Config:           bo.Uint64(buf[8:]),
		SamplePeriod:     bo.Uint64(buf[16:]),
		SampleType:       SampleFormat(bo.Uint64(buf[24:])),
		ReadFormat:       ReadFormat(bo.Uint64(buf[32:])),
		Flags:            AttrFlags(bo.Uint64(buf[40:])),
		WakeupEvents:     bo.Uint32(buf[48:]),
		BPType:           bo.Uint32(buf[52:]),
		Config1:          bo.Uint64(buf[56:]),
		Config2:          bo.Uint64(buf[64:]),
		BranchSampleType: bo.Uint64(buf[72:]),
		SampleRegsUser:   bo.Uint64(buf[80:]),
		SampleStackUser:  bo.Uint32(buf[88:]),
		ClockID:          int32(bo.Uint32(buf[92:])),
		SampleRegsIntr:   bo.Uint64(buf[96:]),
		AuxWatermark:     bo.Uint32(buf[104:]),
		SampleMaxStack:   bo.Uint16(buf[108:]),
		AuxSampleSize:    bo.Uint32(buf[112:]),
		SigData:          bo.Uint64(buf[120:]),
		Config3:          bo.Uint64(buf[128:]),
	}
	if bo == binary.ByteOrder(binary.BigEndian) {
		// A big-endian compiler allocates bit fields from the most
		// significant bit; perf's swap_bitfield undoes that.
		a.Flags = AttrFlags(bits.Reverse64(uint64(a.Flags)))
	}
	return a, nil
}
