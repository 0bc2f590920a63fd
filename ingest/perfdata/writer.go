package perfdata

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// WriterOptions configure a Writer.
type WriterOptions struct {
	// Callchains adds PERF_SAMPLE_CALLCHAIN to the sample type: every
	// Sample's Callchain is written (an empty one as nr = 0).
	Callchains bool
	// SampleFreq is the attr's sample_freq (default 4000 Hz).
	SampleFreq uint64
	// IDs are the sample ids of the event, one per CPU as perf record
	// opens it (default: one id per CPU of NrCPUs, numbered from 1).
	IDs []uint64
	// CPU adds PERF_SAMPLE_CPU to the sample type, as perf record -a
	// does: every Sample's CPU is written, and the sample_id trailer of
	// other records carries their SampleID.CPU.
	CPU bool
	// BranchSampleType, when not zero, adds PERF_SAMPLE_BRANCH_STACK to
	// the sample type with this branch_sample_type, and the
	// BRANCH_STACK feature: every Sample's Branches are written (and its
	// BranchHWIndex, with BranchHWIndex).
	BranchSampleType uint64
	// AttrFlags, when not zero, replaces the attr's flag bits (default:
	// those of perf record -e cpu-clock on a command); a recorder that
	// opened its event with other bits (system-wide or -p: no
	// enable_on_exec) writes the ones it used.
	AttrFlags AttrFlags
	// SampleRead adds PERF_SAMPLE_READ to the sample type (read_format
	// ID|LOST, one counter): every Sample's one Read value is written.
	SampleRead bool

	// Feature sections. Empty strings are written as they are.
	Hostname, OSRelease, Version, Arch string
	NrCPUs                             uint32 // available and online (default 1)
	Cmdline                            []string
	// BuildIDs are the BUILD_ID feature entries (may be empty; the
	// section is written either way). Info and Pid as in the reader;
	// the build id is at most 20 bytes.
	BuildIDs []BuildID
}

// Writer writes a little-endian, file-mode perf.data recording with one
// event (a cpu-clock software event sampled by frequency) to an
// io.WriteSeeker, streaming: records go out through a buffer as they are
// written, and Close rewrites the file header with the data size and the
// feature bitmap and appends the feature sections, as perf record does.
//
// Non-SAMPLE kernel records get the sample_id trailer of the event
// (pid/tid and time, from their SampleID). A Writer is not safe for
// concurrent use; its first error sticks and is returned by every later
// call.
type Writer struct {
	ws    io.WriteSeeker
	bw    *bufio.Writer
	opts  WriterOptions
	attr  Attr
	start int64 // offset of the file header in ws
	data  int64 // data section offset, relative to start
	pos   int64 // bytes written so far, relative to start
	buf   []byte
	err   error
	done  bool
	stats Stats
}

var wle = binary.LittleEndian

// Attribute values of the event a Writer records: perf record -e
// cpu-clock as perf 6.1 opens it.
const (
	writerAttrSize = 128 // PERF_ATTR_SIZE_VER7, as perf 6.1 writes
	writerFlags    = AttrDisabled | AttrInherit | AttrMmap | AttrComm | AttrFreq |
		1<<12 /* enable_on_exec */ | 1<<13 /* task */ | AttrSampleIDAll |
		1<<20 /* exclude_guest */ | AttrMmap2 | AttrCommExec | AttrKsymbol | AttrBPFEvent
	writerSampleType = SampleFormatIP | SampleFormatTID | SampleFormatTime | SampleFormatPeriod
	// maxWriterIDs bounds the ids of the event (one per CPU).
	maxWriterIDs = 1 << 16
)

// NewWriter starts a recording at the current offset of w (normally 0).
func NewWriter(w io.WriteSeeker, opts WriterOptions) (*Writer, error) {
	if opts.SampleFreq == 0 {
		opts.SampleFreq = 4000
	}
	if opts.NrCPUs == 0 {
		opts.NrCPUs = 1
	}
	if len(opts.IDs) == 0 {
		n := min(opts.NrCPUs, maxWriterIDs)
		for i := uint32(1); i <= n; i++ {
			opts.IDs = append(opts.IDs, uint64(i))
		}
	}
	if len(opts.IDs) > maxWriterIDs {
		return nil, fmt.Errorf("perfdata: writer: %d ids, at most %d", len(opts.IDs), maxWriterIDs)
	}
	if err := checkBuildIDs(opts.BuildIDs); err != nil {
		return nil, err
	}
	start, err := w.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, fmt.Errorf("perfdata: writer: %w", err)
	}
	st := writerSampleType
	if opts.Callchains {
		st |= SampleFormatCallchain
	}
	if opts.CPU {
		st |= SampleFormatCPU
	}
	if opts.BranchSampleType != 0 {
		st |= SampleFormatBranchStack
	}
	if opts.SampleRead {
		st |= SampleFormatRead
	}
	flags := AttrFlags(writerFlags)
	if opts.AttrFlags != 0 {
		flags = opts.AttrFlags
	}
	wr := &Writer{
		ws:    w,
		bw:    bufio.NewWriterSize(w, 1<<18),
		opts:  opts,
		start: start,
		buf:   make([]byte, 0, 1<<16),
		attr: Attr{
			Type:             1, // PERF_TYPE_SOFTWARE
			Size:             writerAttrSize,
			Config:           0, // PERF_COUNT_SW_CPU_CLOCK
			SamplePeriod:     opts.SampleFreq,
			SampleType:       st,
			BranchSampleType: opts.BranchSampleType,
			ReadFormat:       ReadID | ReadLost,
			Flags:            flags,
			IDs:              append([]uint64(nil), opts.IDs...),
		},
		stats: Stats{ByType: make(map[RecordType]uint64)},
	}
	// Header (rewritten at Close), ids, attrs; then the data section.
	idsOff := int64(fileHeaderSize)
	attrsOff := idsOff + 8*int64(len(opts.IDs))
	wr.data = attrsOff + writerAttrSize + 16
	b := wr.header(0, nil)
	for _, id := range opts.IDs {
		b = wle.AppendUint64(b, id)
	}
	b = wr.appendAttr(b)
	b = wle.AppendUint64(b, uint64(idsOff))
	b = wle.AppendUint64(b, 8*uint64(len(opts.IDs)))
	wr.write(b)
	return wr, wr.err
}

// Data flushes the records written so far and returns where they are in
// the underlying file: the data section's offset and its size. A recorder
// reads them back before Close, as perf record replays its recording to
// find the DSOs the samples hit.
func (w *Writer) Data() (off, size int64, err error) {
	if w.err != nil {
		return 0, 0, w.err
	}
	if err := w.bw.Flush(); err != nil {
		w.err = fmt.Errorf("perfdata: writer: %w", err)
		return 0, 0, w.err
	}
	return w.start + w.data, w.pos - w.data, nil
}

// SetBuildIDs replaces the BUILD_ID feature entries Close writes: a
// recorder knows which DSOs the samples hit only at the end, as perf
// record does (process_buildids).
func (w *Writer) SetBuildIDs(ids []BuildID) error {
	if err := checkBuildIDs(ids); err != nil {
		return err
	}
	w.opts.BuildIDs = ids
	return nil
}

func checkBuildIDs(ids []BuildID) error {
	for _, b := range ids {
		if len(b.BuildID) > 20 {
			return fmt.Errorf("perfdata: writer: build id of %s has %d bytes, at most 20", b.Filename, len(b.BuildID))
		}
	}
	return nil
}

// Attr returns the event's attribute as written.
func (w *Writer) Attr() *Attr { return &w.attr }

// Stats counts the records written so far.
func (w *Writer) Stats() Stats { return w.stats }

// header returns the 104-byte file header for a data section of size
// dataSize and the given feature bitmap.
func (w *Writer) header(dataSize int64, feats *[featBits / 64]uint64) []byte {
	b := make([]byte, 0, fileHeaderSize)
	b = wle.AppendUint64(b, magicLE)
	b = wle.AppendUint64(b, fileHeaderSize)
	b = wle.AppendUint64(b, writerAttrSize+16)
	b = wle.AppendUint64(b, uint64(fileHeaderSize+8*len(w.opts.IDs))) // attrs
	b = wle.AppendUint64(b, writerAttrSize+16)
	b = wle.AppendUint64(b, uint64(w.data)) // data
	b = wle.AppendUint64(b, uint64(dataSize))
	b = wle.AppendUint64(b, 0) // event_types
	b = wle.AppendUint64(b, 0)
	for i := 0; i < featBits/64; i++ {
		var f uint64
		if feats != nil {
			f = feats[i]
		}
		b = wle.AppendUint64(b, f)
	}
	return b
}

// appendAttr appends the 128-byte perf_event_attr.
func (w *Writer) appendAttr(b []byte) []byte {
	a := &w.attr
	b = wle.AppendUint32(b, a.Type)
	b = wle.AppendUint32(b, a.Size)
	b = wle.AppendUint64(b, a.Config)
	b = wle.AppendUint64(b, a.SamplePeriod)
	b = wle.AppendUint64(b, uint64(a.SampleType))
	b = wle.AppendUint64(b, uint64(a.ReadFormat))
	b = wle.AppendUint64(b, uint64(a.Flags))
	b = append(b, make([]byte, 72-48)...) // wakeup_events to config2
	b = wle.AppendUint64(b, a.BranchSampleType)
	return append(b, make([]byte, writerAttrSize-80)...) // the rest is zero
}

func (w *Writer) write(b []byte) {
	if w.err != nil {
		return
	}
	n, err := w.bw.Write(b)
	w.pos += int64(n)
	if err != nil {
		w.err = fmt.Errorf("perfdata: writer: %w", err)
	}
}

// begin starts a record of type typ in w.buf.
func (w *Writer) begin(typ RecordType, misc uint16) []byte {
	b := w.buf[:0]
	b = wle.AppendUint32(b, uint32(typ))
	b = wle.AppendUint16(b, misc)
	return wle.AppendUint16(b, 0) // size, set by end
}

// appendString appends s NUL-terminated and NUL-padded to a multiple of
// 8 bytes (counting from the record start).
func appendString(b []byte, s string) []byte {
	b = append(b, s...)
	b = append(b, 0)
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	return b
}

// appendTrailer appends the sample_id trailer (TID, TIME, and CPU when
// the writer samples it).
func (w *Writer) appendTrailer(b []byte, id *SampleID) []byte {
	b = wle.AppendUint32(b, id.Pid)
	b = wle.AppendUint32(b, id.Tid)
	b = wle.AppendUint64(b, id.Time)
	if w.opts.CPU {
		b = wle.AppendUint32(b, id.CPU)
		b = wle.AppendUint32(b, id.Res)
	}
	return b
}

// end finishes the record in b and writes it.
func (w *Writer) end(b []byte, typ RecordType) error {
	if w.err != nil {
		return w.err
	}
	if w.done {
		return errors.New("perfdata: writer: write after Close")
	}
	if len(b) > 0xffff {
		return fmt.Errorf("perfdata: writer: %s record of %d bytes exceeds the 65535-byte limit", typ, len(b))
	}
	wle.PutUint16(b[6:], uint16(len(b)))
	w.buf = b[:0]
	w.write(b)
	w.stats.Records++
	w.stats.ByType[typ]++
	if typ == RecordSample {
		w.stats.Samples++
	}
	return w.err
}

// WriteMmap writes m as PERF_RECORD_MMAP2, or as PERF_RECORD_MMAP when
// m.Type is RecordMmap. The misc field (cpumode, MiscMmapData,
// MiscMmapBuildID with BuildID) is m.Misc; the trailer is m.SampleID.
func (w *Writer) WriteMmap(m *Mmap) error {
	typ := RecordMmap2
	if m.Type == RecordMmap {
		typ = RecordMmap
	}
	b := w.begin(typ, m.Misc)
	b = wle.AppendUint32(b, m.Pid)
	b = wle.AppendUint32(b, m.Tid)
	b = wle.AppendUint64(b, m.Addr)
	b = wle.AppendUint64(b, m.Len)
	b = wle.AppendUint64(b, m.Pgoff)
	if typ == RecordMmap2 {
		if m.Misc&MiscMmapBuildID != 0 {
			if len(m.BuildID) > 20 {
				return fmt.Errorf("perfdata: writer: MMAP2 %s: build id of %d bytes, at most 20", m.Filename, len(m.BuildID))
			}
			var id [24]byte
			id[0] = byte(len(m.BuildID))
			copy(id[4:], m.BuildID)
			b = append(b, id[:]...)
		} else {
			b = wle.AppendUint32(b, m.Maj)
			b = wle.AppendUint32(b, m.Min)
			b = wle.AppendUint64(b, m.Ino)
			b = wle.AppendUint64(b, m.InoGeneration)
		}
		b = wle.AppendUint32(b, m.Prot)
		b = wle.AppendUint32(b, m.Flags)
	}
	b = appendString(b, m.Filename)
	b = w.appendTrailer(b, &m.SampleID)
	return w.end(b, typ)
}

// WriteComm writes PERF_RECORD_COMM (misc MiscCommExec for an exec).
func (w *Writer) WriteComm(c *Comm) error {
	b := w.begin(RecordComm, c.Misc)
	b = wle.AppendUint32(b, c.Pid)
	b = wle.AppendUint32(b, c.Tid)
	b = appendString(b, c.Comm)
	b = w.appendTrailer(b, &c.SampleID)
	return w.end(b, RecordComm)
}

func (w *Writer) taskRecord(typ RecordType, misc uint16, pid, ppid, tid, ptid uint32, time uint64, id *SampleID) error {
	b := w.begin(typ, misc)
	b = wle.AppendUint32(b, pid)
	b = wle.AppendUint32(b, ppid)
	b = wle.AppendUint32(b, tid)
	b = wle.AppendUint32(b, ptid)
	b = wle.AppendUint64(b, time)
	b = w.appendTrailer(b, id)
	return w.end(b, typ)
}

// WriteFork writes PERF_RECORD_FORK.
func (w *Writer) WriteFork(f *Fork) error {
	return w.taskRecord(RecordFork, f.Misc, f.Pid, f.Ppid, f.Tid, f.Ptid, f.Time, &f.SampleID)
}

// WriteExit writes PERF_RECORD_EXIT.
func (w *Writer) WriteExit(e *Exit) error {
	return w.taskRecord(RecordExit, e.Misc, e.Pid, e.Ppid, e.Tid, e.Ptid, e.Time, &e.SampleID)
}

// WriteKsymbol writes PERF_RECORD_KSYMBOL (misc is normally
// PERF_RECORD_MISC_KERNEL).
func (w *Writer) WriteKsymbol(k *Ksymbol) error {
	b := w.begin(RecordKsymbol, k.Misc)
	b = wle.AppendUint64(b, k.Addr)
	b = wle.AppendUint32(b, k.Len)
	b = wle.AppendUint16(b, k.KsymType)
	b = wle.AppendUint16(b, k.Flags)
	b = appendString(b, k.Name)
	b = w.appendTrailer(b, &k.SampleID)
	return w.end(b, RecordKsymbol)
}

// WriteSample writes PERF_RECORD_SAMPLE with s.Misc (the cpumode), IP,
// Pid/Tid, Time, with WriterOptions.CPU CPU, Period and, with
// WriterOptions.Callchains, Callchain.
func (w *Writer) WriteSample(s *Sample) error {
	b := w.begin(RecordSample, s.Misc)
	b = wle.AppendUint64(b, s.IP)
	b = wle.AppendUint32(b, s.Pid)
	b = wle.AppendUint32(b, s.Tid)
	b = wle.AppendUint64(b, s.Time)
	if w.opts.CPU {
		b = wle.AppendUint32(b, s.CPU)
		b = wle.AppendUint32(b, s.Res)
	}
	b = wle.AppendUint64(b, s.Period)
	if w.opts.SampleRead {
		if len(s.Read.Values) != 1 {
			return errors.New("perfdata: writer: a sample must read one counter")
		}
		v := s.Read.Values[0]
		b = wle.AppendUint64(b, v.Value)
		b = wle.AppendUint64(b, v.ID)
		b = wle.AppendUint64(b, v.Lost)
	} else if len(s.Read.Values) > 0 {
		return errors.New("perfdata: writer: sample with read values, but the writer has no SampleRead")
	}
	if w.opts.Callchains {
		b = wle.AppendUint64(b, uint64(len(s.Callchain)))
		for _, ip := range s.Callchain {
			b = wle.AppendUint64(b, ip)
		}
	} else if len(s.Callchain) > 0 {
		return errors.New("perfdata: writer: sample with a callchain, but the writer has no Callchains")
	}
	if bst := w.opts.BranchSampleType; bst != 0 {
		b = wle.AppendUint64(b, uint64(len(s.Branches)))
		if bst&BranchHWIndex != 0 {
			b = wle.AppendUint64(b, s.BranchHWIndex)
		}
		for _, e := range s.Branches {
			b = wle.AppendUint64(b, e.From)
			b = wle.AppendUint64(b, e.To)
			b = wle.AppendUint64(b, e.Flags)
		}
	} else if len(s.Branches) > 0 {
		return errors.New("perfdata: writer: sample with a branch stack, but the writer has no BranchSampleType")
	}
	return w.end(b, RecordSample)
}

// WriteRaw writes an already encoded record of a type the writer has no
// method for (a tool record such as the proposed KMOD_SEC_MAP). rec must
// be little-endian, hold its own header, and have header.size equal to
// len(rec), a multiple of 8; an AUXTRACE record is followed by the trace
// data its size field counts.
func (w *Writer) WriteRaw(rec []byte) error {
	size := len(rec)
	if len(rec) >= 16 && RecordType(wle.Uint32(rec)) == RecordAuxtrace {
		// AUXTRACE is followed by its trace data, outside the record.
		size = int(wle.Uint16(rec[6:]))
		if n := wle.Uint64(rec[8:]); n != uint64(len(rec)-size) {
			return fmt.Errorf("perfdata: writer: AUXTRACE record of %d bytes with header.size %d and %d bytes of data", len(rec), size, n)
		}
	}
	if len(rec) < 8 || len(rec)%8 != 0 || int(wle.Uint16(rec[6:])) != size {
		return fmt.Errorf("perfdata: writer: raw record of %d bytes with header.size %d", len(rec), wle.Uint16(rec[6:min(len(rec), 8)]))
	}
	b := append(w.buf[:0], rec[:size]...)
	if err := w.end(b, RecordType(wle.Uint32(rec))); err != nil || size == len(rec) {
		return err
	}
	w.write(rec[size:])
	return w.err
}

// WriteFinishedRound writes PERF_RECORD_FINISHED_ROUND: the records
// before it may be sorted and delivered.
func (w *Writer) WriteFinishedRound() error {
	return w.end(w.begin(RecordFinishedRound, 0), RecordFinishedRound)
}

// Close ends the data section, appends the feature index and sections,
// and rewrites the file header. It does not close the underlying writer.
func (w *Writer) Close() error {
	if w.done {
		return w.err
	}
	w.done = true
	if w.err != nil {
		return w.err
	}
	dataSize := w.pos - w.data
	feats := w.features()
	var bitmap [featBits / 64]uint64
	for _, f := range feats {
		bitmap[f.id/64] |= 1 << (uint(f.id) % 64)
	}
	// Index of {offset, size} pairs, then the sections.
	off := w.pos + 16*int64(len(feats))
	idx := make([]byte, 0, 16*len(feats))
	for _, f := range feats {
		idx = wle.AppendUint64(idx, uint64(off))
		idx = wle.AppendUint64(idx, uint64(len(f.data)))
		off += int64(len(f.data))
	}
	w.write(idx)
	for _, f := range feats {
		w.write(f.data)
	}
	if w.err != nil {
		return w.err
	}
	if err := w.bw.Flush(); err != nil {
		w.err = fmt.Errorf("perfdata: writer: %w", err)
		return w.err
	}
	if _, err := w.ws.Seek(w.start, io.SeekStart); err != nil {
		w.err = fmt.Errorf("perfdata: writer: rewriting the header: %w", err)
		return w.err
	}
	if _, err := w.ws.Write(w.header(dataSize, &bitmap)); err != nil {
		w.err = fmt.Errorf("perfdata: writer: rewriting the header: %w", err)
		return w.err
	}
	if _, err := w.ws.Seek(w.start+w.pos, io.SeekStart); err != nil {
		w.err = fmt.Errorf("perfdata: writer: %w", err)
	}
	return w.err
}

type feature struct {
	id   Feature
	data []byte
}

// nameAlign is perf's NAME_ALIGN: feature strings are padded to it.
const nameAlign = 64

// appendFeatString appends a feature string as perf's do_write_string:
// u32 length (NUL included, padded to 64), then the padded bytes.
func appendFeatString(b []byte, s string) []byte {
	n := (len(s) + 1 + nameAlign - 1) / nameAlign * nameAlign
	b = wle.AppendUint32(b, uint32(n))
	b = append(b, s...)
	return append(b, make([]byte, n-len(s))...)
}

// features returns the feature sections in bit order.
func (w *Writer) features() []feature {
	o := &w.opts
	var bid []byte
	for _, e := range o.BuildIDs {
		// struct perf_record_header_build_id: header, pid, build_id[24]
		// (20 id bytes, size, 3 reserved), filename padded to NAME_ALIGN.
		fn := (len(e.Filename) + 1 + nameAlign - 1) / nameAlign * nameAlign
		misc := e.Misc | MiscBuildIDSize
		bid = wle.AppendUint32(bid, 0)
		bid = wle.AppendUint16(bid, misc)
		bid = wle.AppendUint16(bid, uint16(36+fn))
		bid = wle.AppendUint32(bid, uint32(e.Pid))
		var id [24]byte
		copy(id[:], e.BuildID)
		id[20] = byte(len(e.BuildID))
		bid = append(bid, id[:]...)
		bid = append(bid, e.Filename...)
		bid = append(bid, make([]byte, fn-len(e.Filename))...)
	}
	str := func(s string) []byte { return appendFeatString(nil, s) }
	nr := wle.AppendUint32(nil, o.NrCPUs)
	nr = wle.AppendUint32(nr, o.NrCPUs)
	cmd := wle.AppendUint32(nil, uint32(len(o.Cmdline)))
	for _, s := range o.Cmdline {
		cmd = appendFeatString(cmd, s)
	}
	// EVENT_DESC: nr events, attr size, then per event the attr, the
	// number of ids, the name and the ids.
	ev := wle.AppendUint32(nil, 1)
	ev = wle.AppendUint32(ev, writerAttrSize)
	ev = w.appendAttr(ev)
	ev = wle.AppendUint32(ev, uint32(len(w.attr.IDs)))
	ev = appendFeatString(ev, "cpu-clock")
	for _, id := range w.attr.IDs {
		ev = wle.AppendUint64(ev, id)
	}
	fs := []feature{
		{FeatBuildID, bid},
		{FeatHostname, str(o.Hostname)},
		{FeatOSRelease, str(o.OSRelease)},
		{FeatVersion, str(o.Version)},
		{FeatArch, str(o.Arch)},
		{FeatNrCPUs, nr},
		{FeatCmdline, cmd},
		{FeatEventDesc, ev},
	}
	if o.BranchSampleType != 0 {
		fs = append(fs, feature{FeatBranchStack, nil}) // perf record writes it empty
	}
	return fs
}
