package perfdata

// Record is one decoded record. Its concrete type is one of *Sample, *Mmap,
// *Comm, *Fork, *Exit, *Ksymbol, *BPFEvent, *Lost, *LostSamples, *Throttle,
// *FinishedRound, *FinishedInit, *Attr records (*HeaderAttr), *BuildID,
// *FeatureRecord, *IDIndex or *Unknown.
type Record interface {
	RecordInfo() *Info
}

// Info is common to every record.
type Info struct {
	Type RecordType
	Misc uint16
	Size uint16 // header.size, including the 8-byte header
	// Offset is the file (or stream) offset of the record. For a record
	// that came out of a compressed record it is, as perf report -D
	// prints it, the offset of the compressed record whose payload
	// completed it. Offsets count from the start of the file or stream;
	// for pipe-mode recordings perf report -D prints them 16 lower (it
	// counts from the end of the pipe header).
	Offset int64
	// Compressed is set for records decoded from COMPRESSED payloads.
	Compressed bool
}

// RecordInfo returns i.
func (i *Info) RecordInfo() *Info { return i }

// CPUMode returns Misc & 7.
func (i *Info) CPUMode() CPUMode { return CPUMode(i.Misc & MiscCPUModeMask) }

// SampleID is the sample_id trailer of a non-SAMPLE kernel record (present
// when the attr has sample_id_all). Fields absent from the attr's
// sample_type are zero.
type SampleID struct {
	Attr       *Attr // attr the record belongs to (nil without attrs)
	Pid, Tid   uint32
	Time       uint64
	ID         uint64
	StreamID   uint64
	CPU, Res   uint32
	Identifier uint64
}

// Sample is PERF_RECORD_SAMPLE. Fields absent from Attr.SampleType are zero.
type Sample struct {
	Info
	Attr       *Attr
	Identifier uint64
	IP         uint64
	Pid, Tid   uint32
	Time       uint64
	Addr       uint64
	ID         uint64
	StreamID   uint64
	CPU, Res   uint32
	Period     uint64
	Read       ReadValues
	// Callchain holds the ips including PERF_CONTEXT_* markers. It may
	// share the record's bytes (with a little-endian recording on a
	// little-endian host): read it, do not write to it.
	Callchain     []uint64
	Raw           []byte
	BranchHWIndex uint64 // when BranchSampleType has BranchHWIndex
	Branches      []BranchEntry
	// BranchesAt is the offset, counted as Info.Offset is, at which the
	// branch stack's entries start (after its nr and hw_idx), even when
	// there are none: perf 6.1 reads a first entry there regardless
	// (lbr_callchain_add_lbr_ip; see Reader.FileBytes).
	BranchesAt     int64
	BranchCounters []uint64
	RegsUserABI    uint64
	RegsUser       []uint64
	StackUser      []byte
	StackUserDyn   uint64 // dyn_size
	Weight         uint64 // WEIGHT, or the WEIGHT_STRUCT union as one u64
	DataSrc        uint64
	Transaction    uint64
	RegsIntrABI    uint64
	RegsIntr       []uint64
	PhysAddr       uint64
	Cgroup         uint64
	DataPageSize   uint64
	CodePageSize   uint64
	Aux            []byte
}

// ReadValues is the READ part of a sample (read_format decides which fields
// are present).
type ReadValues struct {
	TimeEnabled, TimeRunning uint64
	Values                   []ReadValue
}

// ReadValue is one counter of a READ value.
type ReadValue struct {
	Value, ID, Lost uint64
}

// BranchEntry is one perf_branch_entry.
type BranchEntry struct {
	From, To, Flags uint64
}

// Mmap is PERF_RECORD_MMAP or PERF_RECORD_MMAP2 (Info.Type tells which).
type Mmap struct {
	Info
	Pid, Tid  uint32
	Addr, Len uint64
	Pgoff     uint64
	Filename  string
	// MMAP2 only:
	Maj, Min      uint32
	Ino           uint64
	InoGeneration uint64
	Prot, Flags   uint32
	// BuildID is set for MMAP2 with MiscMmapBuildID (then the inode
	// fields are zero).
	BuildID  []byte
	SampleID SampleID
}

// Comm is PERF_RECORD_COMM.
type Comm struct {
	Info
	Pid, Tid uint32
	Comm     string
	SampleID SampleID
}

// Exec reports whether the record was caused by exec.
func (c *Comm) Exec() bool { return c.Misc&MiscCommExec != 0 }

// Fork is PERF_RECORD_FORK.
type Fork struct {
	Info
	Pid, Ppid, Tid, Ptid uint32
	Time                 uint64
	SampleID             SampleID
}

// Exit is PERF_RECORD_EXIT (same layout as Fork).
type Exit struct {
	Info
	Pid, Ppid, Tid, Ptid uint32
	Time                 uint64
	SampleID             SampleID
}

// Ksymbol is PERF_RECORD_KSYMBOL.
type Ksymbol struct {
	Info
	Addr     uint64
	Len      uint32
	KsymType uint16 // 0 unknown, 1 BPF, 2 OOL
	Flags    uint16 // bit 0: unregister
	Name     string
	SampleID SampleID
}

// Ksymbol types and flags.
const (
	KsymTypeUnknown    = 0
	KsymTypeBPF        = 1
	KsymTypeOOL        = 2
	KsymFlagUnregister = 1
)

// Unregister reports whether the symbol goes away.
func (k *Ksymbol) Unregister() bool { return k.Flags&KsymFlagUnregister != 0 }

// BPFEvent is PERF_RECORD_BPF_EVENT.
type BPFEvent struct {
	Info
	EventType uint16 // 1 PROG_LOAD, 2 PROG_UNLOAD
	Flags     uint16
	ID        uint32
	Tag       [8]byte
	SampleID  SampleID
}

// Lost is PERF_RECORD_LOST.
type Lost struct {
	Info
	ID, Lost uint64
	SampleID SampleID
}

// LostSamples is PERF_RECORD_LOST_SAMPLES.
type LostSamples struct {
	Info
	Lost     uint64
	SampleID SampleID
}

// Throttle is PERF_RECORD_THROTTLE or PERF_RECORD_UNTHROTTLE.
type Throttle struct {
	Info
	Time, ID, StreamID uint64
	SampleID           SampleID
}

// FinishedRound is PERF_RECORD_FINISHED_ROUND: no record after it is older
// than the records before it from the same round.
type FinishedRound struct{ Info }

// FinishedInit is PERF_RECORD_FINISHED_INIT: the synthesized records end.
type FinishedInit struct{ Info }

// HeaderAttr is PERF_RECORD_HEADER_ATTR (pipe mode).
type HeaderAttr struct {
	Info
	Attr *Attr
}

// BuildID is PERF_RECORD_HEADER_BUILD_ID (pipe mode) and an entry of the
// BUILD_ID feature section.
type BuildID struct {
	Info
	Pid      int32
	BuildID  []byte
	Filename string
}

// FeatureRecord is PERF_RECORD_HEADER_FEATURE (pipe mode); its data is
// also merged into Reader.Features.
type FeatureRecord struct {
	Info
	Feature Feature
	Data    []byte
}

// IDIndex is PERF_RECORD_ID_INDEX.
type IDIndex struct {
	Info
	Entries []IDIndexEntry
}

// IDIndexEntry is one entry of ID_INDEX.
type IDIndexEntry struct {
	ID, Idx, CPU, Tid uint64
}

// Unknown is any other record; Data is the record after its header, in the
// file's byte order.
type Unknown struct {
	Info
	Data []byte
}
