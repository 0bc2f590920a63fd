// Package kmodsec encodes and decodes PERF_RECORD_KMOD_SEC_MAP records, the
// record proposed in Ravi Bangoria's January 2023 RFC ("perf tool: Fix
// non-".text" symbol resolution for kernel modules", never merged) to carry
// where one section of a kernel module was loaded.
//
// # Layout
//
// The record is a C struct with natural alignment, in the byte order of the
// machine that wrote it:
//
//	off size field
//	  0   4  header.type (83 in the RFC; see DefaultType)
//	  4   2  header.misc (PERF_RECORD_MISC_KERNEL)
//	  6   2  header.size (bytes in the whole record)
//	  8   4  pid (machine pid, -1 for the host)
//	 12   4  implicit padding, never written
//	 16   8  start: section load address (/sys/module/M/sections/S)
//	 24   8  len: section size (sh_size)
//	 32   8  pgoff: section file offset in the .ko (sh_offset)
//	 40   2  sec_name_len: strlen(section)+1
//	 42   2  filename_len: strlen(path)+1
//	 44   …  section NUL, one gap byte, path NUL
//
// With size = ALIGN8(strlen(section)+strlen(path)+2), header.size is
// 48 + size + id_hdr_size; the last id_hdr_size bytes are the sample_id
// trailer, present although the type is a "user" type. The padding at 12,
// the gap byte, the bytes after the path and the last 4 bytes of the record
// are never written by the RFC's synthesiser and may hold stale data: this
// package never reads them except as part of the raw trailer, and Encode
// writes zeros there.
//
// Decode uses the two length fields only, never scans for NULs beyond them,
// and checks every length against header.size; its errors are
// *DecodeError values naming the byte offset at fault.
//
// # Type 83
//
// The RFC used record type 83, which mainline perf later gave to
// PERF_RECORD_COMPRESSED2. The type number is therefore a parameter
// everywhere, and LooksLikeKmodSecMap tells the two kinds apart when a
// stream carries both.
package kmodsec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

// DefaultType is the record type number the RFC proposed. Mainline perf
// assigned 83 to PERF_RECORD_COMPRESSED2 in 2025; files that current perf
// will read should use a private type number (≥ 87) instead.
const DefaultType = 83

// MiscKernel is PERF_RECORD_MISC_KERNEL, the header.misc the RFC's
// synthesiser writes.
const MiscKernel = 1

// HeaderSize is the size of the fixed part of the record (sizeof the C
// struct, including 4 bytes of tail padding; the strings start at
// DataOffset, inside that padding).
const HeaderSize = 48

// DataOffset is the offset of the section name.
const DataOffset = 44

// MaxRecordSize is the largest record header.size can describe.
const MaxRecordSize = 1<<16 - 1

// InferIDHdrSize, passed as idHdrSize to Decode, makes it take the trailer
// size from the record itself: header.size − 48 − ALIGN8(sec_name_len +
// filename_len).
const InferIDHdrSize = -1

// Byte offsets of the fixed fields.
const (
	offType        = 0
	offMisc        = 4
	offSize        = 6
	offPid         = 8
	offPad         = 12
	offStart       = 16
	offLen         = 24
	offPgoff       = 32
	offSecNameLen  = 40
	offFilenameLen = 42
)

// Record is one KMOD_SEC_MAP record: the section Section of the module file
// Path is loaded at [Start, Start+Len) and its bytes are at file offset
// Pgoff of Path.
type Record struct {
	Misc       uint16
	Pid        int32
	Start, Len uint64
	Pgoff      uint64
	Section    string
	Path       string
	// SampleID is the sample_id trailer (the last id_hdr_size bytes of the
	// record), nil when there is none. It holds the trailer's 64-bit words
	// in little-endian byte order whatever the record's order: Decode swaps
	// each word of a big-endian record as perf's swap_sample_id_all does,
	// and Encode swaps them back. As in perf, a parser that knows the
	// sample_type must still re-split the 32-bit pairs (pid/tid, cpu/res)
	// of a swapped trailer. The RFC never writes the last 4 bytes of the
	// record, so they may be stale.
	SampleID []byte
}

// DecodeError reports a malformed record: what was wrong at which byte
// offset of the record.
type DecodeError struct {
	Offset int
	Msg    string
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("kmodsec: offset %d (%#x): %s", e.Offset, e.Offset, e.Msg)
}

func errAt(off int, format string, args ...any) error {
	return &DecodeError{Offset: off, Msg: fmt.Sprintf(format, args...)}
}

func align8(n int) int { return (n + 7) &^ 7 }

// isLittle reports whether order is little-endian.
func isLittle(order binary.ByteOrder) bool {
	return order.Uint16([]byte{1, 0}) == 1
}

// RecordSize returns header.size of the record that Encode writes for
// section and path names of these lengths (without NULs) and a trailer of
// idHdrSize bytes.
func RecordSize(sectionLen, pathLen, idHdrSize int) int {
	return HeaderSize + align8(sectionLen+pathLen+2) + idHdrSize
}

// Decode decodes one record. raw must be exactly header.size bytes long.
// idHdrSize is the size of the sample_id trailer (a multiple of 8, as
// perf's id_hdr_size), or InferIDHdrSize. The header type is not checked.
//
// Decode trusts only the length fields: the section name is
// data[0:sec_name_len-1], the path data[sec_name_len+1:][:filename_len-1],
// and each must be followed by its NUL, contain no other NUL and end
// before the trailer; header.size must equal 48 + ALIGN8(sec_name_len +
// filename_len) + idHdrSize. Any violation is a *DecodeError.
func Decode(raw []byte, order binary.ByteOrder, idHdrSize int) (Record, error) {
	var rec Record
	if len(raw) < 8 {
		return rec, errAt(0, "record of %d bytes is shorter than the 8-byte header", len(raw))
	}
	size := int(order.Uint16(raw[offSize:]))
	if size < HeaderSize {
		return rec, errAt(offSize, "header.size %d is smaller than the %d-byte fixed part", size, HeaderSize)
	}
	if size != len(raw) {
		return rec, errAt(offSize, "header.size %d does not match the %d bytes given", size, len(raw))
	}
	if idHdrSize != InferIDHdrSize && (idHdrSize < 0 || idHdrSize%8 != 0) {
		return rec, fmt.Errorf("kmodsec: id_hdr_size %d is not a non-negative multiple of 8", idHdrSize)
	}
	if idHdrSize > size-HeaderSize {
		return rec, errAt(offSize, "header.size %d leaves no room for the 48-byte fixed part and a %d-byte sample_id trailer", size, idHdrSize)
	}
	// The strings must end before the trailer, or before the record end
	// when the trailer size is to be inferred.
	dataEnd := size
	if idHdrSize > 0 {
		dataEnd = size - idHdrSize
	}
	snl := int(order.Uint16(raw[offSecNameLen:]))
	fnl := int(order.Uint16(raw[offFilenameLen:]))
	if snl == 0 {
		return rec, errAt(offSecNameLen, "sec_name_len is 0; it must count the section name's NUL")
	}
	if DataOffset+snl > dataEnd {
		return rec, errAt(offSecNameLen, "sec_name_len %d runs past the string area, which ends before offset %d", snl, dataEnd)
	}
	if fnl == 0 {
		return rec, errAt(offFilenameLen, "filename_len is 0; it must count the path's NUL")
	}
	pathOff := DataOffset + snl + 1 // after the name's NUL and the gap byte
	if pathOff+fnl > dataEnd {
		return rec, errAt(offFilenameLen, "filename_len %d puts the path's NUL at offset %d, past the string area, which ends before offset %d", fnl, pathOff+fnl-1, dataEnd)
	}
	sec, err := cString(raw, DataOffset, snl, "section name")
	if err != nil {
		return rec, err
	}
	file, err := cString(raw, pathOff, fnl, "path")
	if err != nil {
		return rec, err
	}
	want := HeaderSize + align8(snl+fnl)
	if idHdrSize == InferIDHdrSize {
		idHdrSize = size - want
		if idHdrSize < 0 || idHdrSize%8 != 0 {
			return rec, errAt(offSize, "header.size %d minus 48 + ALIGN8(sec_name_len %d + filename_len %d) = %d leaves %d bytes, not a sample_id trailer (a multiple of 8)", size, snl, fnl, want, size-want)
		}
	} else if want+idHdrSize != size {
		return rec, errAt(offSize, "header.size %d does not match 48 + ALIGN8(sec_name_len %d + filename_len %d) + id_hdr_size %d = %d", size, snl, fnl, idHdrSize, want+idHdrSize)
	}
	rec = Record{
		Misc:    order.Uint16(raw[offMisc:]),
		Pid:     int32(order.Uint32(raw[offPid:])),
		Start:   order.Uint64(raw[offStart:]),
		Len:     order.Uint64(raw[offLen:]),
		Pgoff:   order.Uint64(raw[offPgoff:]),
		Section: sec,
		Path:    file,
	}
	if idHdrSize > 0 {
		rec.SampleID = swapTrailer(raw[size-idHdrSize:], order)
	}
	return rec, nil
}

// cString returns the n-1 bytes at raw[off:] after checking that a NUL
// follows them and that they contain none.
func cString(raw []byte, off, n int, what string) (string, error) {
	end := off + n - 1 // offset of the NUL
	if raw[end] != 0 {
		return "", errAt(end, "%s is not NUL-terminated at the end its length field states (byte %#02x)", what, raw[end])
	}
	s := raw[off:end]
	if i := strings.IndexByte(string(s), 0); i >= 0 {
		return "", errAt(off+i, "NUL inside the %s, before the end its length field states (offset %d)", what, end)
	}
	return string(s), nil
}

// swapTrailer returns a copy of the trailer t with its 64-bit words in
// little-endian order (Decode) or, applied to such a copy, in order
// (Encode): a byte reversal of each 8-byte word when order is big-endian.
func swapTrailer(t []byte, order binary.ByteOrder) []byte {
	out := append([]byte(nil), t...)
	if isLittle(order) {
		return out
	}
	for i := 0; i+8 <= len(out); i += 8 {
		w := out[i : i+8]
		for a, b := 0, 7; a < b; a, b = a+1, b-1 {
			w[a], w[b] = w[b], w[a]
		}
	}
	return out
}

// Check reports why rec cannot be encoded with an idHdrSize-byte trailer:
// a NUL inside a string, a record larger than header.size can describe, a
// bad idHdrSize, or a SampleID longer than idHdrSize.
func (rec Record) Check(idHdrSize int) error {
	if idHdrSize < 0 || idHdrSize%8 != 0 {
		return fmt.Errorf("kmodsec: id_hdr_size %d is not a non-negative multiple of 8", idHdrSize)
	}
	if strings.IndexByte(rec.Section, 0) >= 0 {
		return fmt.Errorf("kmodsec: section name %q contains a NUL", rec.Section)
	}
	if strings.IndexByte(rec.Path, 0) >= 0 {
		return fmt.Errorf("kmodsec: path %q contains a NUL", rec.Path)
	}
	if len(rec.Section) >= MaxRecordSize || len(rec.Path) >= MaxRecordSize {
		return fmt.Errorf("kmodsec: section name (%d bytes) or path (%d bytes) too long for a record", len(rec.Section), len(rec.Path))
	}
	if n := RecordSize(len(rec.Section), len(rec.Path), idHdrSize); n > MaxRecordSize {
		return fmt.Errorf("kmodsec: record for section %q of %s would be %d bytes, more than header.size can hold", rec.Section, rec.Path, n)
	}
	if len(rec.SampleID) > idHdrSize {
		return fmt.Errorf("kmodsec: sample_id of %d bytes is longer than id_hdr_size %d", len(rec.SampleID), idHdrSize)
	}
	return nil
}

// Append appends the encoding of rec (as Encode) to dst, or returns dst
// and the reason rec cannot be encoded (see Record.Check).
func Append(dst []byte, rec Record, order binary.ByteOrder, typ uint32, idHdrSize int) ([]byte, error) {
	if err := rec.Check(idHdrSize); err != nil {
		return dst, err
	}
	size := RecordSize(len(rec.Section), len(rec.Path), idHdrSize)
	base := len(dst)
	dst = append(dst, make([]byte, size)...)
	b := dst[base:]
	order.PutUint32(b[offType:], typ)
	order.PutUint16(b[offMisc:], rec.Misc)
	order.PutUint16(b[offSize:], uint16(size))
	order.PutUint32(b[offPid:], uint32(rec.Pid))
	order.PutUint64(b[offStart:], rec.Start)
	order.PutUint64(b[offLen:], rec.Len)
	order.PutUint64(b[offPgoff:], rec.Pgoff)
	order.PutUint16(b[offSecNameLen:], uint16(len(rec.Section)+1))
	order.PutUint16(b[offFilenameLen:], uint16(len(rec.Path)+1))
	copy(b[DataOffset:], rec.Section)
	copy(b[DataOffset+len(rec.Section)+2:], rec.Path)
	if idHdrSize > 0 {
		t := make([]byte, idHdrSize)
		copy(t, rec.SampleID)
		copy(b[size-idHdrSize:], swapTrailer(t, order))
	}
	return dst, nil
}

// Encode returns rec as a record of type typ in the given byte order with
// an idHdrSize-byte sample_id trailer (rec.SampleID, zero-extended), in
// exactly the RFC's layout with every never-written byte zero. It returns
// nil if rec cannot be encoded; Record.Check or Append say why. Every
// record Decode returns can be encoded.
func Encode(rec Record, order binary.ByteOrder, typ uint32, idHdrSize int) []byte {
	b, err := Append(nil, rec, order, typ, idHdrSize)
	if err != nil {
		return nil
	}
	return b
}

// ModuleName returns the module name the RFC's parser derives from a .ko
// path: the basename up to its first ".ko", keeping '-' (so
// ".../kvm-amd.ko" gives "kvm-amd", not /proc/modules' "kvm_amd"). Like the
// RFC, it requires the path to contain a '/' and the basename ".ko".
func ModuleName(p string) (string, error) {
	if !strings.Contains(p, "/") {
		return "", fmt.Errorf("kmodsec: module path %q has no '/'", p)
	}
	base := path.Base(p)
	i := strings.Index(base, ".ko")
	if i < 0 {
		return "", fmt.Errorf("kmodsec: module path %q does not name a .ko file", p)
	}
	if i == 0 {
		return "", fmt.Errorf("kmodsec: module path %q has an empty module name", p)
	}
	return base[:i], nil
}

// DSOName returns the section map's DSO name, "[" + ModuleName(Path) + "]"
// + Section, e.g. "[kvm-amd].noinstr.text".
func (rec Record) DSOName() (string, error) {
	name, err := ModuleName(rec.Path)
	if err != nil {
		return "", err
	}
	return "[" + name + "]" + rec.Section, nil
}

// Map returns the section map the record describes: [Start, Start+Len),
// pgoff Pgoff, DSO mapping, KindModuleSection, DSO DSOName. If the path
// fails DSOName's check, the DSO is built from the whole basename instead;
// callers that must reject such records (as the RFC's parser does) call
// DSOName first.
func (rec Record) Map() index.Map {
	dso, err := rec.DSOName()
	if err != nil {
		dso = "[" + path.Base(rec.Path) + "]" + rec.Section
	}
	return index.Map{
		Start:   rec.Start,
		End:     rec.Start + rec.Len,
		Pgoff:   rec.Pgoff,
		Mapping: index.MappingDSO,
		Kind:    index.KindModuleSection,
		DSO:     dso,
	}
}

// HasZstdFrame reports whether raw carries a zstd frame magic where a
// compressed record's payload starts: at offset 8 (PERF_RECORD_COMPRESSED,
// type 81, whose data follows the header) or at offset 16
// (PERF_RECORD_COMPRESSED2, type 83, whose data follows a u64 data_size).
// In a KMOD_SEC_MAP record those bytes are the pid and the low half of the
// start address.
func HasZstdFrame(raw []byte) bool {
	for _, off := range [...]int{8, 16} {
		if len(raw) >= off+4 && [4]byte(raw[off:off+4]) == perfdata.ZstdMagic {
			return true
		}
	}
	return false
}

// LooksLikeKmodSecMap reports whether raw (one whole record, header
// included) is a self-consistent KMOD_SEC_MAP record in the given byte
// order, to tell it from a PERF_RECORD_COMPRESSED2 record that shares type
// 83. It requires all of:
//
//   - no zstd frame magic (28 b5 2f fd) at offset 8 or 16 (HasZstdFrame);
//   - Decode with InferIDHdrSize succeeds: header.size equals len(raw) and
//     48 + ALIGN8(sec_name_len + filename_len) plus a multiple of 8, both
//     strings fit, NULs stand exactly where the lengths say and nowhere
//     inside the strings;
//   - the path passes the RFC parser's check (a '/' and a ".ko").
//
// A COMPRESSED2 record whose payload does not start a new zstd frame
// (perf splits one frame across records) passes all of this only if its
// compressed bytes happen to hold two length fields that land on two zero
// bytes exactly, with no other zero in between, and form a plausible .ko
// path: vanishingly unlikely for zstd output. The header type is not
// checked.
func LooksLikeKmodSecMap(raw []byte, order binary.ByteOrder) bool {
	if HasZstdFrame(raw) {
		return false
	}
	rec, err := Decode(raw, order, InferIDHdrSize)
	if err != nil {
		return false
	}
	_, err = rec.DSOName()
	return err == nil
}

// ErrPerfData is returned by ReadStream for a perf.data file, which is not
// a bare record stream.
var ErrPerfData = errors.New("kmodsec: input is a perf.data file, not a bare record stream")
