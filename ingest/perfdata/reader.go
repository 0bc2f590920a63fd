package perfdata

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"runtime/debug"
	"slices"
	"unsafe"

	"github.com/kmapindex/kmapindex/internal/filemap"
)

// Magic is the first 8 bytes of a perf.data file written in its reader's
// byte order; MagicSwapped those of one written in the other. MagicV1 is
// the legacy magic of perf before 2.6.38 (header version 1), the same bytes
// in either byte order.
const (
	Magic        = "PERFILE2"
	MagicSwapped = "2ELIFREP"
	MagicV1      = "PERFFILE"
)

// ZstdMagic is the first 4 bytes of a zstd frame, which a COMPRESSED
// record's payload starts with.
var ZstdMagic = [4]byte{0x28, 0xb5, 0x2f, 0xfd}

const (
	magicLE        = 0x32454c4946524550 // Magic read as a little-endian u64
	magicBE        = 0x50455246494c4532 // the same bytes read big-endian
	magicV1        = 0x454c494646524550 // MagicV1 read as a little-endian u64
	fileHeaderSize = 104
	pipeHeaderSize = 16
	maxPrefix      = 64 << 20 // bytes before the data section kept when streaming a file-mode recording
	maxSection     = 64 << 20 // largest feature or ids section decoded
)

// fileHeaderSizeV0 is the size of the previous file header, without the
// feature bitmap (offsetof(struct perf_file_header, adds_features)).
const fileHeaderSizeV0 = 72

// Section is a {offset, size} pair of the file header.
type Section struct {
	Offset, Size uint64
}

// FileHeader is the decoded perf_file_header (pipe mode: only Magic, Size
// and ByteOrder are meaningful).
type FileHeader struct {
	// Version is 1 for the legacy magic MagicV1, else 2.
	Version    int
	Pipe       bool
	ByteOrder  binary.ByteOrder
	Size       uint64
	AttrSize   uint64
	Attrs      Section
	Data       Section
	EventTypes Section
	Features   [featBits / 64]uint64 // feature bitmap
}

// HasFeature reports whether feature bit f is set.
func (h *FileHeader) HasFeature(f Feature) bool {
	if f < 0 || f >= featBits {
		return false
	}
	return h.Features[f/64]&(1<<(uint(f)%64)) != 0
}

// Stats counts what a Reader has seen so far.
type Stats struct {
	Records      uint64 // records delivered by Next
	Samples      uint64 // SAMPLE records
	Unknown      uint64 // records delivered as *Unknown
	Compressed   uint64 // COMPRESSED/COMPRESSED2 records consumed
	Compressed2  uint64 // of them COMPRESSED2 (perf 6.16 and later; perf 6.1 stops at one)
	Decompressed uint64 // bytes of records produced by decompression
	SkippedBytes uint64 // out-of-record payload of TRACING_DATA and AUXTRACE skipped
	// CutShort is how many bytes of a last record a pipe-mode stream
	// ends inside of (0: none) holds, from file offset CutShortAt: perf
	// stops there as at the end ("unexpected end of event stream" when
	// the header was whole) and reports what came before.
	CutShort   uint64
	CutShortAt int64
	ByType     map[RecordType]uint64 // records delivered, by type
}

// RawRecord is the undecoded current record.
type RawRecord struct {
	Type   RecordType
	Misc   uint16
	Size   uint16
	Offset int64 // see Info.Offset
	// Compressed is set for records decoded from COMPRESSED payloads.
	Compressed bool
	// Data is the whole record, header included, in the file's byte order.
	Data []byte
	// ByteOrder is the byte order of the recording.
	ByteOrder binary.ByteOrder
	// IDHdrSize is the sample_id trailer size of the first attr, which
	// the records of user types this package does not know are taken to
	// end with. A record of a kernel type other than SAMPLE ends with the
	// trailer of its own attr (the one its id names: Record's SampleID),
	// whose size attrs may differ in.
	IDHdrSize int
}

// Option configures a Reader.
type Option func(*Reader)

// WithoutCompressed2 makes record type 83 an ordinary record (delivered as
// *Unknown) instead of PERF_RECORD_COMPRESSED2, for recordings that use 83
// for something else (the KMOD_SEC_MAP proposal did). Without this option a
// type-83 record is taken as COMPRESSED2 only if its data_size fits the
// record and its payload starts a zstd frame or continues the current one.
func WithoutCompressed2() Option { return func(r *Reader) { r.noCompressed2 = true } }

// WithoutUnfinishedData reads a file-mode recording whose header gives a
// data size of 0 as perf 6.1 does: as no data at all
// (__perf_session__process_events reads no record). Without it, such a
// recording, which a perf record killed before it rewrote its header
// leaves, is read to the end of the file.
func WithoutUnfinishedData() Option { return func(r *Reader) { r.noUnfinished = true } }

// Mapped makes Open map the data section of a regular file instead of
// reading it through a buffer: records then stay valid until Close
// (RecordsStable), so that consumers can keep callchains and user stacks
// where they lie instead of copying them, at the cost of a page fault
// every few pages read. Without it Open reads through a buffer (chunks
// read ahead, for a large recording: dataBufferFor), which was faster end
// to end on the VMs kbench is measured on, where a fault is dear: kbench
// report 0.31 -> 0.25 s on a 918k-sample -a recording, 1.51 -> 1.11 s on
// the script of a 722 MB --call-graph dwarf one.
func Mapped() Option { return func(r *Reader) { r.mapped = true } }

// Reader reads the records of one perf.data recording. It is not safe for
// concurrent use.
type Reader struct {
	hdr      FileHeader
	bo       binary.ByteOrder
	big      bool // bo is big-endian (setByteOrder)
	attrs    []*Attr
	idToAttr map[uint64]*Attr
	// idDense mirrors idToAttr for the ids idBase to idBase+denseIDs-1,
	// idBase being the first id set: the per-sample lookup without
	// hashing. perf numbers ids from 1 since boot, so a recording's ids
	// lie close together but far from 0 (53,173 on a host up for a day,
	// whose 4 ids took a table of 53 k entries from 0).
	idDense   []*Attr
	idBase    uint64
	idPos0    int // idPos of the first attr's sample type
	lastFixed fixedAttrCache
	features  Features
	featErr   error
	ra        io.ReaderAt // file mode
	size      int64       // file size, -1 if unknown
	fwd       *forwardReaderAt
	closer    io.Closer
	featsRead bool

	noCompressed2 bool
	mapped        bool // Open maps a regular file's data (Mapped)
	noUnfinished  bool // WithoutUnfinishedData

	in     *dataBuffer
	pos    int64 // stream offset of the next byte of in (or of m)
	end    int64 // stream offset where the data ends, -1: at EOF
	recBuf []byte
	hdrBuf [8]byte

	// A regular file Open opened with Mapped has its data section mapped
	// instead of read through in (mmap_unix.go): m holds the file from offset mbase
	// (the page boundary at or before the data) to the end of the data,
	// or of the file as it was at Open; nil without a mapping. The
	// pages behind the reading are released as it advances (dropBehind),
	// so that the process keeps no more than a window of the file
	// resident.
	file      *os.File // the file to map, set by Open before init
	m         []byte
	mbase     int64
	dropAt    int64 // stream offset at which to release more
	closed    bool
	rawCopied bool // readRaw copied the record it returned into recBuf

	// The current record for Raw: its bytes, offset and whether it came
	// out of a compressed record.
	rawData       []byte
	rawOff        int64
	rawCompressed bool
	rec           Record
	err           error
	eof           bool
	z             *zstream

	stats Stats

	// reused record values
	sample        Sample
	sampleClean   bool           // sample's fields outside decodeSampleFast's are all zero
	layouts       []sampleLayout // of attrs, by Index (addAttr)
	chainBuf      []uint64       // the sample's copied callchain (see viewWords), reused
	byType        [256]uint64    // Stats.ByType for types below 256
	idHdrSize     int            // IDHdrSize, kept up to date by addAttr
	mmap          Mmap
	comm          Comm
	fork          Fork
	exit          Exit
	ksym          Ksymbol
	bpf           BPFEvent
	lost          Lost
	lostSamples   LostSamples
	throttle      Throttle
	finishedRound FinishedRound
	finishedInit  FinishedInit
	headerAttr    HeaderAttr
	buildID       BuildID
	feature       FeatureRecord
	idIndex       IDIndex
	unknown       Unknown

	// A perf.data directory (dir.go): its path, and when it has data
	// files, every file that holds records, streams[cur] being read.
	dir     string
	streams []stream
	cur     int
}

// Open opens the named perf.data file (file or pipe mode), or perf.data
// directory (perf record --threads or --kcore), whose files it reads as
// perf 6.1 does.
func Open(name string, opts ...Option) (*Reader, error) {
	f, fi, err := openStat(name)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		f.Close()
		return openDir(name, opts)
	}
	var r *Reader
	if fi.Mode().IsRegular() {
		r, err = newFileReader(f, fi.Size(), f, opts)
	} else {
		r, err = NewReader(f, opts...)
	}
	if err != nil {
		f.Close()
		return nil, namedError(err, name)
	}
	r.closer = f
	return r, nil
}

// openStat opens the named file and stats it.
func openStat(name string) (*os.File, os.FileInfo, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, fmt.Errorf("perfdata: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("perfdata: %w", err)
	}
	return f, fi, nil
}

// Close closes the file opened by Open and unmaps its data (see
// RecordsStable); for other Readers it does nothing. Next returns false
// after Close.
func (r *Reader) Close() error {
	var err error
	if r.in != nil {
		r.in.close()
	}
	if r.streams != nil {
		err = r.closeDir()
	}
	if r.m != nil {
		err = filemap.Unmap(r.m)
		r.m = nil
		r.closed = true
	}
	if r.closer != nil {
		if cerr := r.closer.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// NewFileReader returns a Reader over a recording of size bytes (file or pipe
// mode) that can be read at random offsets.
func NewFileReader(ra io.ReaderAt, size int64, opts ...Option) (*Reader, error) {
	return newFileReader(ra, size, nil, opts)
}

// newFileReader is NewFileReader; a non-nil file (ra itself, a regular
// file) has its data section mapped if it can be.
func newFileReader(ra io.ReaderAt, size int64, file *os.File, opts []Option) (*Reader, error) {
	r := &Reader{ra: ra, size: size, file: file}
	for _, o := range opts {
		o(r)
	}
	if err := r.init(); err != nil {
		return nil, err
	}
	return r, nil
}

// NewReader returns a Reader over a stream: a pipe-mode recording (perf
// record -o -), or a file-mode recording read front to back, in which case
// the attributes must precede the data section (perf always writes them
// there) and the features become available when the records are exhausted.
func NewReader(rd io.Reader, opts ...Option) (*Reader, error) {
	r := &Reader{size: -1}
	for _, o := range opts {
		o(r)
	}
	r.fwd = &forwardReaderAt{r: rd, keep: fileHeaderSize}
	r.ra = r.fwd
	if err := r.init(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Reader) readAt(b []byte, off int64, what string) error {
	if off < 0 || (r.size >= 0 && (off > r.size || int64(len(b)) > r.size-off)) {
		return formatError(off, "%s at file offset %#x (%d bytes) lies past the end of the %d-byte file", what, off, len(b), r.size)
	}
	n, err := r.ra.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return formatError(off, "reading %s at file offset %#x (%d bytes): %w", what, off, len(b), err)
}

// readChunked reads size bytes at off in pieces, so that a size field
// larger than the input fails before it is allocated.
func (r *Reader) readChunked(off, size int64, what string) ([]byte, error) {
	const chunk = 1 << 16
	var b []byte
	for done := int64(0); done < size; {
		n := min(size-done, chunk)
		b = append(b, make([]byte, n)...)
		if err := r.readAt(b[done:], off+done, what); err != nil {
			return nil, err
		}
		done += n
	}
	return b, nil
}

func (r *Reader) init() error {
	var h [fileHeaderSize]byte
	if err := r.readAt(h[:pipeHeaderSize], 0, "file header"); err != nil {
		return err
	}
	r.hdr.Version = 2
	switch binary.LittleEndian.Uint64(h[:]) {
	case magicLE:
		r.setByteOrder(binary.LittleEndian)
	case magicBE:
		r.setByteOrder(binary.BigEndian)
	case magicV1:
		r.hdr.Version = 1
	default:
		return formatError(0, "file offset 0: bad magic %q (want %s)", h[:8], Magic)
	}
	r.idToAttr = make(map[uint64]*Attr)
	r.stats.ByType = make(map[RecordType]uint64)
	r.recBuf = make([]byte, 0, 1<<16)
	if r.hdr.Version == 1 {
		// A legacy pipe header's size is 16 in the byte order of the
		// host that reads it (try_all_pipe_abis): perf on a little-endian
		// host reads little-endian legacy streams only, and one on a
		// big-endian host big-endian ones. Both are accepted here.
		switch {
		case binary.LittleEndian.Uint64(h[8:]) == pipeHeaderSize:
			r.setByteOrder(binary.LittleEndian)
		case binary.BigEndian.Uint64(h[8:]) == pipeHeaderSize:
			r.setByteOrder(binary.BigEndian)
		}
	}
	if r.bo != nil && r.bo.Uint64(h[8:]) == pipeHeaderSize {
		r.hdr.ByteOrder = r.bo
		r.hdr.Size = pipeHeaderSize
		r.hdr.Pipe = true
		r.features.Present = &r.hdr.Features
		r.startData(pipeHeaderSize, -1)
		return nil
	}
	// perf reads the whole 104-byte header whatever its size field says.
	if err := r.readAt(h[pipeHeaderSize:], pipeHeaderSize, "file header"); err != nil {
		return err
	}
	if r.hdr.Version == 1 {
		// The legacy header encodes its byte order in attr_size, which
		// must be the size of a perf_file_attr of ABI version 0 to 4 in
		// one order or the other (try_all_file_abis).
		bo, err := legacyByteOrder(h[16:24])
		if err != nil {
			return err
		}
		r.setByteOrder(bo)
	}
	r.hdr.ByteOrder = r.bo
	r.hdr.Size = r.bo.Uint64(h[8:])
	switch r.hdr.Size {
	case fileHeaderSize:
		for i := range r.hdr.Features {
			r.hdr.Features[i] = r.bo.Uint64(h[72+8*i:])
		}
	case fileHeaderSizeV0:
		// The previous format, without the feature bitmap: perf reads no
		// feature (perf_file_header__read clears adds_features).
	default:
		return formatError(8, "file offset 8: header size %d is neither %d (file mode, or %d without features) nor %d (pipe mode)",
			r.hdr.Size, fileHeaderSize, fileHeaderSizeV0, pipeHeaderSize)
	}
	r.hdr.AttrSize = r.bo.Uint64(h[16:])
	r.hdr.Attrs = Section{r.bo.Uint64(h[24:]), r.bo.Uint64(h[32:])}
	r.hdr.Data = Section{r.bo.Uint64(h[40:]), r.bo.Uint64(h[48:])}
	r.hdr.EventTypes = Section{r.bo.Uint64(h[56:]), r.bo.Uint64(h[64:])}
	r.features.Present = &r.hdr.Features
	if err := r.checkSection(r.hdr.Attrs, "attrs section", 24); err != nil {
		return err
	}
	if err := r.checkSection(r.hdr.Data, "data section", 40); err != nil {
		return err
	}
	if r.hdr.Data.Offset < r.hdr.Size {
		return formatError(r.hdr.Data.Offset, "file offset 0x28: data section offset %#x overlaps the header", r.hdr.Data.Offset)
	}
	if r.fwd != nil {
		if r.hdr.Data.Offset > maxPrefix {
			return formatError(r.hdr.Data.Offset, "file offset 0x28: data section offset %#x: more than %d bytes before the data cannot be streamed", r.hdr.Data.Offset, maxPrefix)
		}
		r.fwd.keep = int64(r.hdr.Data.Offset)
	}
	if err := r.readAttrs(); err != nil {
		return err
	}
	if err := r.checkAttrsAgree(); err != nil {
		return err
	}
	if r.hdr.HasFeature(FeatDirFormat) && r.dir == "" {
		// perf 6.1 asserts that a recording with DIR_FORMAT is a
		// directory (process_dir_format) and reads nothing.
		return formatError(-1, "the header file of a perf.data directory: open the directory (perf 6.1 reads nothing from the file alone)")
	}
	if r.fwd != nil {
		r.fwd.keep, r.fwd.prefix = 0, nil
	}
	end := int64(r.hdr.Data.Offset + r.hdr.Data.Size)
	if r.hdr.Data.Size == 0 && !r.noUnfinished {
		end = -1 // unfinished recording: read to the end of the file
	}
	if r.fwd == nil {
		r.readFeatures()
	}
	r.startData(int64(r.hdr.Data.Offset), end)
	return nil
}

// legacyAttrSizes are the attr_size values a legacy (MagicV1) file header
// may have: the sizes of perf_event_attr ABI versions 0 to 4 (64, 72, 80,
// 96 and 104 bytes) plus a 16-byte ids section (attr_file_abi_sizes).
var legacyAttrSizes = [...]uint64{64 + 16, 72 + 16, 80 + 16, 96 + 16, 104 + 16}

// legacyByteOrder returns the byte order of a legacy file header whose
// attr_size field is b: the one in which it is one of legacyAttrSizes,
// tried in that order, little-endian first for each (try_all_file_abis,
// as run on a little-endian host; the result is the same on a big-endian
// one).
func legacyByteOrder(b []byte) (binary.ByteOrder, error) {
	for _, n := range legacyAttrSizes {
		for _, bo := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
			if bo.Uint64(b) == n {
				return bo, nil
			}
		}
	}
	return nil, formatError(0x10, "file offset 0x10: legacy %s header: attr_size %#x is no perf_event_attr ABI 0-4 size plus 16 (%v) in either byte order",
		MagicV1, binary.LittleEndian.Uint64(b), legacyAttrSizes)
}

// checkSection validates a section read at header offset hoff.
func (r *Reader) checkSection(s Section, what string, hoff int) error {
	if s.Offset > 1<<62 || s.Size > 1<<62 {
		return formatError(hoff, "file offset %#x: %s {%#x, %#x} is absurd", hoff, what, s.Offset, s.Size)
	}
	if r.size >= 0 && s.Offset+s.Size > uint64(r.size) {
		return formatError(hoff, "file offset %#x: %s {%#x, %#x} ends past the end of the %d-byte file", hoff, what, s.Offset, s.Size, r.size)
	}
	return nil
}

func (r *Reader) readAttrs() error {
	as := r.hdr.AttrSize
	if as < attrSizeVer0+16 || as > attrSizeMax+16 {
		return formatError(0x10, "file offset 0x10: attr_size %d out of range [%d, %d]", as, attrSizeVer0+16, attrSizeMax+16)
	}
	if r.hdr.Attrs.Size%as != 0 {
		return formatError(0x20, "file offset 0x20: attrs section size %d is not a multiple of attr_size %d", r.hdr.Attrs.Size, as)
	}
	n := r.hdr.Attrs.Size / as
	if n > maxSection/as {
		return formatError(0x20, "file offset 0x20: %d attrs are too many", n)
	}
	buf := make([]byte, as)
	for i := uint64(0); i < n; i++ {
		off := int64(r.hdr.Attrs.Offset + i*as)
		if err := r.readAt(buf, off, "attr"); err != nil {
			return err
		}
		a, err := decodeAttr(buf[:as-16], r.bo, off)
		if err != nil {
			return err
		}
		ids := Section{r.bo.Uint64(buf[as-16:]), r.bo.Uint64(buf[as-8:])}
		idsOff := int(off) + int(as) - 16
		if err := r.checkSection(ids, "attr ids section", idsOff); err != nil {
			return err
		}
		if ids.Size%8 != 0 || ids.Size > maxSection {
			return formatError(idsOff, "file offset %#x: attr ids section size %d is not a multiple of 8 or too large", idsOff, ids.Size)
		}
		if ids.Size > 0 {
			b, err := r.readChunked(int64(ids.Offset), int64(ids.Size), "attr ids")
			if err != nil {
				return err
			}
			for j := 0; j < len(b); j += 8 {
				a.IDs = append(a.IDs, r.bo.Uint64(b[j:]))
			}
		}
		r.addAttr(a)
	}
	return nil
}

func (r *Reader) addAttr(a *Attr) {
	r.lastFixed = fixedAttrCache{} // its layout points into layouts
	a.Index = len(r.attrs)
	r.attrs = append(r.attrs, a)
	r.layouts = append(r.layouts, newSampleLayout(a.SampleType))
	if a.Index == 0 {
		r.idHdrSize = a.IDHdrSize()
		r.idPos0 = idPos(a.SampleType)
	}
	for _, id := range a.IDs {
		r.setID(id, a)
	}
}

// setID records that sample id belongs to attr a.
func (r *Reader) setID(id uint64, a *Attr) {
	r.lastFixed = fixedAttrCache{}
	if len(r.idToAttr) == 0 {
		r.idBase = id
	}
	r.idToAttr[id] = a
	if i := id - r.idBase; id >= r.idBase && i < denseIDs {
		if i >= uint64(len(r.idDense)) {
			r.idDense = slices.Grow(r.idDense, int(i)+1-len(r.idDense))[:i+1]
		}
		r.idDense[i] = a
	}
}

// denseIDs bounds idDense: 64 Ki ids, 512 KiB of table.
const denseIDs = 1 << 16

func (r *Reader) startData(off, end int64) {
	r.pos = off
	r.end = end
	if r.file != nil && r.mapped && r.mapData() {
		return
	}
	if end >= 0 {
		r.in = dataBufferFor(io.NewSectionReader(r.ra, off, end-off), end-off, r.HasUserStacks())
	} else {
		r.in = dataBufferFor(&offsetReader{ra: r.ra, off: off}, -1, false)
	}
}

// HasUserStacks reports whether an event's samples carry user stacks
// (PERF_SAMPLE_STACK_USER, perf record --call-graph dwarf), of the
// events known so far.
func (r *Reader) HasUserStacks() bool {
	return slices.ContainsFunc(r.attrs, func(a *Attr) bool { return a.SampleType&SampleFormatStackUser != 0 })
}

// dataBufferFor returns the buffer records of n bytes (-1: unknown) are read
// through. Records are peeked whole (up to 64 KiB); a recording of more
// than aheadMin bytes reads in chunks of aheadChunkSize, on a goroutine
// of its own ahead of the decoding when its samples carry user stacks
// (ahead); a small one needs no more than its size.
//
// Only user stacks are read ahead: their samples are kilobytes each, and
// copying them is most of decoding them (a 288 MB --call-graph dwarf
// recording's table: 0.093 s read ahead, 0.097 s not). Elsewhere both
// cores are busy decoding and attributing, and the handoffs of chunks
// cost more than the other core's copy saves: reading on the decoder's
// own goroutine took the -a table 0.174 -> 0.165 s, the -a -g table
// 0.156 -> 0.154 s, a gcc build's -a -g children table 1.553 -> 1.476 s
// (scripts/abbench.sh, 11, 11 and 5 runs). A DWARF recording's script,
// which unwinds, was faster without too (0.423 -> 0.400 s, 5 runs), but
// its table slower: user stacks are read ahead.
func dataBufferFor(src io.Reader, n int64, ahead bool) *dataBuffer {
	switch {
	case n > aheadMin && ahead:
		return newReadAheadBuffer(src, aheadChunkSize, aheadReserve)
	case n > aheadMin:
		return newDataBuffer(src, aheadChunkSize)
	}
	return plainDataBuffer(src, n)
}

// aheadChunkSize is the size of the chunks read ahead (256 KiB). A chunk
// the reading goroutine copies out of the page cache is still in the
// caches when the decoder reads it on the other core, if it is small
// enough: with 1 MiB chunks (three in flight) the decoder's first loads
// of each record waited on memory, about a third of NextFixedSample's
// time. The 2.61 M-sample -a table 0.263 -> 0.240 s (scripts/abbench.sh
// 41, builds interleaved), the gcc build's children table 1.80 -> 1.70 s
// (5 runs), and no view tried slower (512 KiB: half the gain; 128 KiB:
// no better); peak RSS 1-4 MB lower.
const aheadChunkSize = 256 << 10

// plainDataBuffer is dataBufferFor without reading ahead: 1 MiB, or a
// quarter of the n bytes of records (64 KiB at least, a record's most):
// a small recording's report read in four turns instead of one, for a MB
// less of peak RSS where perf's is close.
func plainDataBuffer(src io.Reader, n int64) *dataBuffer {
	size := 1 << 20
	if n >= 0 {
		size = int(min(max(n/4, 64<<10), 1<<20))
	}
	return newDataBuffer(src, size)
}

// Page release behind the reading of a mapping (see Reader.m): every
// dropChunk bytes, all the pages more than dropLag bytes behind it go,
// those that consumers of stable records (RecordsStable) faulted in
// again since the last time too. The lag leaves the pages of recent
// records resident for such consumers; one that reads further back
// faults the pages in again, at the cost of a minor fault. Small, so that
// a mapped file adds little to the peak RSS (16 MiB behind added 14 MB on
// a 58 MB recording, for no speed).
const (
	dropLag   = 4 << 20
	dropChunk = 1 << 20
)

// mapData maps the data section of r.file, from r.pos to r.end (or the
// end of the file), and reports whether it did. Any failure leaves the
// buffered path to read the data.
func (r *Reader) mapData() bool {
	end := r.end
	if end < 0 {
		end = r.size
	}
	base := r.pos &^ int64(os.Getpagesize()-1)
	if r.size < 0 || end > r.size || end <= r.pos || end-base > int64(^uint(0)>>1) {
		return false
	}
	m, err := filemap.Map(r.file, base, int(end-base))
	if err != nil {
		return false
	}
	r.m, r.mbase = m, base
	r.dropAt = base + dropLag + dropChunk
	return true
}

// dropBehind releases the mapped pages more than dropLag bytes behind
// the reading position (see dropLag).
func (r *Reader) dropBehind() {
	if to := (r.pos - dropLag) &^ int64(os.Getpagesize()-1); to > r.mbase {
		filemap.DropPages(r.m[:to-r.mbase])
	}
	r.dropAt = r.pos + dropChunk
}

// RecordsStable reports whether the current record's bytes, Raw().Data
// and the slices of Record's value that alias them (such as
// Sample.StackUser), stay valid until Close instead of until the next
// call to Next. They do when the Reader maps a regular file Open opened
// with Mapped,
// except for records that came out of a COMPRESSED record (whose bytes
// the decompressor reuses).
//
// Such bytes are the file's own, read as they are accessed: a file that
// shrinks while being read makes the access fault. Next turns that into
// an error; code that reads stable record bytes after Next returned can
// run with debug.SetPanicOnFault and convert what it recovers with
// FaultError.
func (r *Reader) RecordsStable() bool {
	return r.m != nil && !r.rawCompressed && !r.rawCopied
}

// MappedData returns the mapping the bytes of RecordsStable's records
// lie in: the file from the page boundary at or before the data section
// to the end of the data; nil when the Reader reads through a buffer.
// It is valid until Close.
func (r *Reader) MappedData() []byte { return r.m }

// FileBytes returns the n bytes at offset off of a file-mode recording
// as perf 6.1's reader sees them through its mapping of the file: the
// file's bytes, zeros past its end. ok is false for a pipe, which perf
// reads into buffers, and when the file cannot be read there. A mapped
// file's bytes fault as RecordsStable's do if the file shrank.
func (r *Reader) FileBytes(off int64, n int) (b []byte, ok bool) {
	if r.hdr.Pipe || off < 0 || n < 0 || r.streams != nil {
		return nil, false // a directory's offsets do not say which file
	}
	b = make([]byte, n)
	if r.m != nil && off >= r.mbase && off+int64(n) <= r.mbase+int64(len(r.m)) {
		copy(b, r.m[off-r.mbase:])
		return b, true
	}
	if r.ra == nil {
		return nil, false
	}
	m, err := r.ra.ReadAt(b, off)
	if err != nil && err != io.EOF {
		return nil, false
	}
	clear(b[m:])
	return b, true
}

// FaultError returns the error to report for v, a value recovered from a
// panic, when that panic is a memory fault (see debug.SetPanicOnFault) at
// an address the Reader maps: a *FormatError naming the file offset,
// whose data went away because the file shrank while being read. It
// returns nil for any other value, which the caller should panic with
// again. FaultError may be called concurrently with Next.
func (r *Reader) FaultError(v any) error {
	f, ok := v.(interface{ Addr() uintptr })
	m := r.m
	if !ok || len(m) == 0 {
		return nil
	}
	a, base := f.Addr(), uintptr(unsafe.Pointer(unsafe.SliceData(m)))
	if a < base || a-base >= uintptr(len(m)) {
		return nil
	}
	off := r.mbase + int64(a-base)
	return formatError(off, "data at file offset %#x: the file shrank while being read", off)
}

// CatchFault, deferred by a function that reads the Reader's stable
// record bytes with debug.SetPanicOnFault on (it must be the deferred
// call itself, for recover to see the panic), sets *err to FaultError's
// error for a fault in the mapping and panics again with anything else.
func (r *Reader) CatchFault(err *error) {
	if v := recover(); v != nil {
		e := r.FaultError(v)
		if e == nil {
			panic(v)
		}
		*err = e
	}
}

// IsPipeModeHeader reports whether b begins with the header of a
// pipe-mode recording: Magic in either byte order, then a header size of
// 16 in the same order.
func IsPipeModeHeader(b []byte) bool {
	if len(b) < pipeHeaderSize {
		return false
	}
	switch string(b[:8]) {
	case Magic:
		return binary.LittleEndian.Uint64(b[8:]) == pipeHeaderSize
	case MagicSwapped:
		return binary.BigEndian.Uint64(b[8:]) == pipeHeaderSize
	}
	return false
}

// PipeMode reports whether the recording is in pipe mode (perf record
// -o -): its attrs and features arrive as records.
func (r *Reader) PipeMode() bool { return r.hdr.Size == pipeHeaderSize }

// Header returns the file header.
func (r *Reader) Header() *FileHeader { return &r.hdr }

// DataSize returns how many bytes of records the recording holds, as
// far as is known before they are read: its header's data size, or for
// a pipe-mode recording read from a file of known size, all that follows
// the header; 0 when unknown (a stream).
func (r *Reader) DataSize() uint64 {
	if n := r.hdr.Data.Size; n != 0 || !r.PipeMode() || r.size < pipeHeaderSize {
		return n
	}
	return uint64(r.size - pipeHeaderSize)
}

// ByteOrder returns the byte order of the recording.
func (r *Reader) ByteOrder() binary.ByteOrder { return r.bo }

// Attrs returns the attrs seen so far (in pipe mode they arrive as
// HEADER_ATTR records).
func (r *Reader) Attrs() []*Attr { return r.attrs }

// AttrByID returns the attr that owns sample id id.
func (r *Reader) AttrByID(id uint64) (*Attr, bool) {
	a, ok := r.idToAttr[id]
	return a, ok
}

// IDHdrSize returns the sample_id trailer size of the first attr (0
// before any attr is known): that of every non-SAMPLE kernel record when
// the attrs agree on it; otherwise each record's is its own attr's.
func (r *Reader) IDHdrSize() int { return r.idHdrSize }

// Stats returns the counts so far.
func (r *Reader) Stats() Stats {
	st := r.stats
	st.ByType = make(map[RecordType]uint64, len(r.stats.ByType)+8)
	for t, n := range r.stats.ByType {
		st.ByType[t] = n
	}
	for t, n := range r.byType {
		if n != 0 {
			st.ByType[RecordType(t)] = n
		}
	}
	return st
}

// Err returns the first error met, if any.
func (r *Reader) Err() error { return r.err }

// Record returns the current record, decoded. It is valid until the next
// call to Next.
func (r *Reader) Record() Record { return r.rec }

// Raw returns the current record undecoded. Data is valid until the next
// call to Next, or until Close when RecordsStable says so.
func (r *Reader) Raw() RawRecord {
	rec := r.rawData
	if len(rec) < 8 {
		return RawRecord{}
	}
	return RawRecord{
		Type:       RecordType(r.bo.Uint32(rec)),
		Misc:       r.bo.Uint16(rec[4:]),
		Size:       r.bo.Uint16(rec[6:]),
		Offset:     r.rawOff,
		Compressed: r.rawCompressed,
		Data:       rec,
		ByteOrder:  r.bo,
		IDHdrSize:  r.IDHdrSize(),
	}
}

// ParseSampleID decodes the sample_id trailer at the end of a raw record of
// this recording (its last IDHdrSize bytes), whatever its type. It is meant
// for record types this package does not decode.
func (r *Reader) ParseSampleID(raw RawRecord) (SampleID, error) {
	return r.parseSampleID(raw.Data, raw.Offset, raw.Type.String())
}

func (r *Reader) fail(err error) bool {
	if r.err == nil {
		r.err = err
		if r.streams != nil {
			r.err = namedError(err, r.streams[r.cur].path)
		}
	}
	r.rec = nil
	return false
}

// errEnd is returned by readRaw at a clean end of the data.
var errEnd = errors.New("end of data")

// readRaw reads the next record of the outer stream. The record aliases
// the input buffer (valid until the next read), except COMPRESSED and
// COMPRESSED2 records, whose payload the decompressor keeps, and records
// followed by out-of-record payload: those are copied into r.recBuf.
// With a mapping (readMapped), only COMPRESSED and COMPRESSED2 records
// are copied.
func (r *Reader) readRaw() ([]byte, int64, error) {
	if r.m != nil {
		return r.readMapped()
	}
	off := r.pos
	if in := r.in; in.w-in.r >= 8 {
		// The common case: the whole record is buffered already.
		w := in.buf[in.r:in.w]
		size := int(r.u16(w[6:]))
		if size >= 8 && size <= len(w) {
			switch RecordType(r.u32(w)) {
			case RecordCompressed, RecordCompressed2, RecordHeaderTracing, RecordAuxtrace:
			default:
				in.r += size
				r.pos += int64(size)
				return w[:size:size], off, nil
			}
		}
	}
	hdr, err := r.in.Peek(8)
	if len(hdr) < 8 {
		if len(hdr) == 0 && err == io.EOF {
			return nil, off, errEnd
		}
		if r.hdr.Pipe && err == io.EOF { // perf's readn returns 0: done
			r.stats.CutShort, r.stats.CutShortAt = uint64(len(hdr)), off
			return nil, off, errEnd
		}
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, off, formatError(off, "record header at file offset %#x: %d of 8 bytes before the end of the data: %w", off, len(hdr), err)
	}
	size := int(r.u16(hdr[6:]))
	if size < 8 {
		return nil, off, formatError(off, "record at file offset %#x (type %d): size %d is smaller than its 8-byte header", off, r.u32(hdr), size)
	}
	typ := RecordType(r.u32(hdr))
	rec, err := r.in.Peek(size)
	if len(rec) < size && r.hdr.Pipe && err == io.EOF {
		r.stats.CutShort, r.stats.CutShortAt = uint64(len(rec)), off
		return nil, off, errEnd
	}
	if len(rec) < size {
		r.pos += int64(len(rec))
		r.in.Discard(len(rec))
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, off, formatError(off, "record at file offset %#x (type %d, size %d) runs past the end of the data: %w", off, typ, size, err)
	}
	switch typ {
	case RecordCompressed, RecordCompressed2, RecordHeaderTracing, RecordAuxtrace:
		// Kept by the decompressor, or followed by payload read below.
		rec = append(r.recBuf[:0], rec...)
		r.recBuf = rec
	}
	r.in.Discard(size)
	r.pos += int64(size)
	skip, err := r.trailingPayload(rec, off)
	if err != nil {
		return nil, off, err
	}
	if skip > 0 {
		m, err := io.CopyN(io.Discard, r.in, int64(skip))
		r.pos += m
		r.stats.SkippedBytes += uint64(m)
		if err != nil {
			return nil, off, formatError(off, "record at file offset %#x (type %d): skipping %d bytes of trailing payload: %w", off, r.u32(rec), skip, err)
		}
	}
	return rec, off, nil
}

// readMapped is readRaw for a mapping: the record is where it lies in
// the file. Its errors are readRaw's.
func (r *Reader) readMapped() ([]byte, int64, error) {
	off := r.pos
	w := r.m[off-r.mbase:]
	if len(w) >= 8 {
		// The common case: a whole record that is not compressed.
		size := int(r.u16(w[6:]))
		if size >= 8 && size <= len(w) {
			switch RecordType(r.u32(w)) {
			case RecordCompressed, RecordCompressed2, RecordHeaderTracing, RecordAuxtrace:
			default:
				if r.pos += int64(size); r.pos >= r.dropAt {
					r.dropBehind()
				}
				r.rawCopied = false
				return w[:size:size], off, nil
			}
		}
	}
	if len(w) < 8 {
		if len(w) == 0 {
			return nil, off, errEnd
		}
		if r.hdr.Pipe { // perf's readn returns 0: done
			r.stats.CutShort, r.stats.CutShortAt = uint64(len(w)), off
			return nil, off, errEnd
		}
		return nil, off, formatError(off, "record header at file offset %#x: %d of 8 bytes before the end of the data: %w", off, len(w), io.ErrUnexpectedEOF)
	}
	size := int(r.u16(w[6:]))
	if size < 8 {
		return nil, off, formatError(off, "record at file offset %#x (type %d): size %d is smaller than its 8-byte header", off, r.u32(w), size)
	}
	typ := RecordType(r.u32(w))
	if len(w) < size {
		if r.hdr.Pipe {
			r.stats.CutShort, r.stats.CutShortAt = uint64(len(w)), off
			return nil, off, errEnd
		}
		r.pos += int64(len(w))
		return nil, off, formatError(off, "record at file offset %#x (type %d, size %d) runs past the end of the data: %w", off, typ, size, io.ErrUnexpectedEOF)
	}
	rec := w[:size:size]
	r.rawCopied = false
	switch typ {
	case RecordCompressed, RecordCompressed2:
		// Kept by the decompressor, as readRaw does.
		rec = append(r.recBuf[:0], rec...)
		r.recBuf = rec
		r.rawCopied = true
	}
	r.pos += int64(size)
	skip, err := r.trailingPayload(rec, off)
	if err != nil {
		return nil, off, err
	}
	if skip > 0 {
		m := min(skip, uint64(int64(len(r.m))-(r.pos-r.mbase)))
		r.pos += int64(m)
		r.stats.SkippedBytes += m
		if m < skip {
			return nil, off, formatError(off, "record at file offset %#x (type %d): skipping %d bytes of trailing payload: %w", off, r.u32(rec), skip, io.EOF)
		}
	}
	if r.pos >= r.dropAt {
		r.dropBehind()
	}
	return rec, off, nil
}

// trailingPayload returns the size of the data that follows rec, the
// record at off, outside of it (perf_session__process_user_event:
// HEADER_TRACING's and AUXTRACE's), which must fit in the data.
func (r *Reader) trailingPayload(rec []byte, off int64) (uint64, error) {
	var skip uint64
	switch RecordType(r.u32(rec)) {
	case RecordHeaderTracing:
		if len(rec) >= 12 {
			skip = uint64(r.u32(rec[8:]))
		}
	case RecordAuxtrace:
		if len(rec) >= 16 {
			skip = r.u64(rec[8:])
		}
	}
	if skip > 1<<62 || (r.end >= 0 && skip > uint64(r.end-r.pos)) {
		return 0, formatError(off, "record at file offset %#x (type %d): its %d bytes of trailing payload run past the end of the data", off, r.u32(rec), skip)
	}
	return skip, nil
}

// Next advances to the next record. It returns false at the end of the
// data or on error (see Err).
func (r *Reader) Next() bool {
	if r.err != nil || r.eof {
		return false
	}
	if r.m != nil {
		return r.nextMapped()
	}
	if r.closed {
		return r.fail(fmt.Errorf("perfdata: %w", os.ErrClosed))
	}
	return r.next()
}

// nextMapped is next for a mapping, where a file that shrank makes the
// record's bytes fault: that becomes the Reader's error.
func (r *Reader) nextMapped() (ok bool) {
	var err error
	defer func() {
		if err != nil {
			ok = r.fail(err)
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer r.CatchFault(&err)
	return r.next()
}

// next is Next's loop.
func (r *Reader) next() bool {
	if r.z == nil && r.streams == nil && r.sampleClean && r.nextSample() {
		return true
	}
	for {
		if r.z != nil {
			rec, off, ok, err := r.z.next()
			if err != nil {
				return r.fail(err)
			}
			if ok {
				r.stats.Decompressed += uint64(len(rec))
				return r.deliver(rec, off, true)
			}
		}
		if r.streams != nil && !r.nextStream() {
			return r.atEnd()
		}
		rec, off, err := r.readRaw()
		if err == errEnd {
			if r.z != nil && r.z.pending() > 0 {
				return r.fail(formatError(r.z.off, "compressed record at file offset %#x: %d bytes of a partial record left at the end of the compressed stream", r.z.off, r.z.pending()))
			}
			if r.streams != nil {
				r.streams[r.cur].done = true
				continue
			}
			return r.atEnd()
		}
		if err != nil {
			return r.fail(err)
		}
		if r.streams != nil {
			r.streams[r.cur].read += r.pos - off
		}
		if payload, ok := r.compressedPayload(rec); ok {
			r.countCompressed(rec)
			if err := r.feedCompressed(payload, off); err != nil {
				return r.fail(err)
			}
			continue
		}
		return r.deliver(rec, off, false)
	}
}

// atEnd ends the records at a clean end of the data; Next returns
// false from then on.
func (r *Reader) atEnd() bool {
	r.eof = true
	r.rec = nil
	if r.m != nil {
		filemap.DropPages(r.m) // what consumers still read faults in again
	}
	if r.fwd != nil && !r.hdr.Pipe {
		r.readFeatures()
	}
	return false
}

// noCompressionFeature reports that the recording is known to have
// features but not COMPRESSED, which perf writes whenever it compresses:
// type 83 is then not COMPRESSED2 (the proposed KMOD_SEC_MAP record used
// the same number). A file without any feature (hand-made) or whose
// feature sections come later in a stream does not rule it out; the
// payload checks of compressedPayload decide then.
func (r *Reader) noCompressionFeature() bool {
	if !r.featsRead || r.featErr != nil || r.features.Has(FeatCompressed) {
		return false
	}
	for _, w := range r.hdr.Features {
		if w != 0 {
			return true
		}
	}
	return false
}

// countCompressed counts the COMPRESSED or COMPRESSED2 record rec, whose
// payload is being decompressed.
func (r *Reader) countCompressed(rec []byte) {
	r.stats.Compressed++
	if RecordType(r.u32(rec)) == RecordCompressed2 {
		r.stats.Compressed2++
	}
}

// compressedPayload returns the zstd payload of a COMPRESSED or COMPRESSED2
// record.
func (r *Reader) compressedPayload(rec []byte) ([]byte, bool) {
	switch RecordType(r.u32(rec)) {
	case RecordCompressed:
		return rec[8:], true
	case RecordCompressed2:
		if r.noCompressed2 || len(rec) < 16 || r.noCompressionFeature() {
			return nil, false
		}
		n := r.u64(rec[8:])
		if n > uint64(len(rec)-16) {
			return nil, false
		}
		p := rec[16 : 16+n]
		if r.z == nil && !(len(p) >= 4 && [4]byte(p[:4]) == ZstdMagic) {
			return nil, false
		}
		return p, true
	}
	return nil, false
}

// setByteOrder sets the recording's byte order.
func (r *Reader) setByteOrder(bo binary.ByteOrder) {
	r.bo, r.big = bo, bo == binary.BigEndian
}

// u16, u32 and u64 read in the recording's byte order without going
// through the ByteOrder interface: the record loop reads a few fields of
// every record.
func (r *Reader) u16(b []byte) uint16 {
	if r.big {
		return binary.BigEndian.Uint16(b)
	}
	return binary.LittleEndian.Uint16(b)
}

func (r *Reader) u32(b []byte) uint32 {
	if r.big {
		return binary.BigEndian.Uint32(b)
	}
	return binary.LittleEndian.Uint32(b)
}

func (r *Reader) u64(b []byte) uint64 {
	if r.big {
		return binary.BigEndian.Uint64(b)
	}
	return binary.LittleEndian.Uint64(b)
}

// nextSample is the system-wide recordings' hot path, what readRaw,
// deliver and decodeSample do for the next record when it is a SAMPLE
// whole in the buffer that decodeSampleFast decodes, folded into one
// call: on a 2.41 M-sample -a table their layers of calls and checks
// took about half the decoding goroutine's time. It reports false for
// any other record, having moved nothing: the general path then reads
// the record, and sets again every field of the Sample it may have set.
func (r *Reader) nextSample() bool {
	in := r.in
	if r.m != nil || in == nil || in.w-in.r < 8 || r.big {
		return false
	}
	w := in.buf[in.r:in.w]
	size := int(binary.LittleEndian.Uint16(w[6:]))
	if RecordType(binary.LittleEndian.Uint32(w)) != RecordSample || size < 8 || size > len(w) {
		return false
	}
	rec := w[:size:size]
	off := r.pos
	a, l := r.fixedAttr(rec[8:], off)
	if a == nil || !l.fast {
		return false
	}
	s := &r.sample
	r.resetFast(s, a)
	if !decodeSampleFast(rec[8:], l, s, &r.chainBuf) {
		return false // decodeSample starts over, from resetFast
	}
	in.r += size
	r.pos += int64(size)
	r.rawData, r.rawOff, r.rawCompressed = rec, off, false
	s.Info = Info{Type: RecordSample, Misc: binary.LittleEndian.Uint16(rec[4:]), Size: uint16(size), Offset: off}
	r.rec = s
	r.stats.Samples++
	r.stats.Records++
	r.byType[RecordSample]++
	return true
}

func (r *Reader) deliver(rec []byte, off int64, compressed bool) bool {
	// Raw builds the RawRecord from these when asked: most callers never do.
	r.rawData, r.rawOff, r.rawCompressed = rec, off, compressed
	info := Info{Type: RecordType(r.u32(rec)), Misc: r.u16(rec[4:]), Size: r.u16(rec[6:]), Offset: off, Compressed: compressed}
	rc, err := r.decode(rec, info)
	if err != nil {
		return r.fail(err)
	}
	r.rec = rc
	r.stats.Records++
	if info.Type < RecordType(len(r.byType)) {
		r.byType[info.Type]++
	} else {
		r.stats.ByType[info.Type]++
	}
	return true
}

// offsetReader reads a ReaderAt sequentially from off to its end.
type offsetReader struct {
	ra  io.ReaderAt
	off int64
}

func (o *offsetReader) Read(p []byte) (int, error) {
	n, err := o.ra.ReadAt(p, o.off)
	o.off += int64(n)
	if n > 0 && err == io.EOF {
		err = nil
	}
	return n, err
}

// forwardReaderAt turns a stream into a ReaderAt for reads at offsets that
// never go backwards, except into the first keep bytes, which it retains.
type forwardReaderAt struct {
	r      io.Reader
	pos    int64
	keep   int64
	prefix []byte
}

func (f *forwardReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	if off < f.pos {
		if off >= int64(len(f.prefix)) {
			return 0, formatError(off, "a stream cannot go back to offset %#x (now at %#x)", off, f.pos)
		}
		n = copy(p, f.prefix[off:])
		if n == len(p) {
			return n, nil
		}
		if off+int64(n) < f.pos {
			return n, formatError(off+int64(n), "a stream cannot go back to offset %#x (now at %#x)", off+int64(n), f.pos)
		}
		off += int64(n)
	}
	if off > f.pos {
		if err := f.advance(off - f.pos); err != nil {
			return 0, err
		}
	}
	for n < len(p) {
		m, err := f.r.Read(p[n:])
		f.save(p[n : n+m])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (f *forwardReaderAt) save(b []byte) {
	if f.pos < f.keep {
		k := min(int64(len(b)), f.keep-f.pos)
		f.prefix = append(f.prefix, b[:k]...)
	}
	f.pos += int64(len(b))
}

func (f *forwardReaderAt) advance(n int64) error {
	var buf [4096]byte
	for n > 0 {
		m, err := f.r.Read(buf[:min(n, int64(len(buf)))])
		f.save(buf[:m])
		n -= int64(m)
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}

func popcount(b []uint64) int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}
