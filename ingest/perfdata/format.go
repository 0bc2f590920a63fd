package perfdata

import "fmt"

// RecordType is perf_event_header.type.
type RecordType uint32

// Kernel record types (include/uapi/linux/perf_event.h) and perf's own
// user record types (tools/lib/perf/include/perf/event.h).
const (
	RecordMmap            RecordType = 1
	RecordLost            RecordType = 2
	RecordComm            RecordType = 3
	RecordExit            RecordType = 4
	RecordThrottle        RecordType = 5
	RecordUnthrottle      RecordType = 6
	RecordFork            RecordType = 7
	RecordRead            RecordType = 8
	RecordSample          RecordType = 9
	RecordMmap2           RecordType = 10
	RecordAux             RecordType = 11
	RecordItraceStart     RecordType = 12
	RecordLostSamples     RecordType = 13
	RecordSwitch          RecordType = 14
	RecordSwitchCPUWide   RecordType = 15
	RecordNamespaces      RecordType = 16
	RecordKsymbol         RecordType = 17
	RecordBPFEvent        RecordType = 18
	RecordCgroup          RecordType = 19
	RecordTextPoke        RecordType = 20
	RecordAuxOutputHWID   RecordType = 21
	RecordUserTypeStart   RecordType = 64
	RecordHeaderAttr      RecordType = 64
	RecordHeaderEventType RecordType = 65
	RecordHeaderTracing   RecordType = 66
	RecordHeaderBuildID   RecordType = 67
	RecordFinishedRound   RecordType = 68
	RecordIDIndex         RecordType = 69
	RecordAuxtraceInfo    RecordType = 70
	RecordAuxtrace        RecordType = 71
	RecordAuxtraceError   RecordType = 72
	RecordThreadMap       RecordType = 73
	RecordCPUMap          RecordType = 74
	RecordStatConfig      RecordType = 75
	RecordStat            RecordType = 76
	RecordStatRound       RecordType = 77
	RecordEventUpdate     RecordType = 78
	RecordTimeConv        RecordType = 79
	RecordHeaderFeature   RecordType = 80
	RecordCompressed      RecordType = 81
	RecordFinishedInit    RecordType = 82
	RecordCompressed2     RecordType = 83
)

var recordNames = map[RecordType]string{
	RecordMmap: "MMAP", RecordLost: "LOST", RecordComm: "COMM", RecordExit: "EXIT",
	RecordThrottle: "THROTTLE", RecordUnthrottle: "UNTHROTTLE", RecordFork: "FORK",
	RecordRead: "READ", RecordSample: "SAMPLE", RecordMmap2: "MMAP2", RecordAux: "AUX",
	RecordItraceStart: "ITRACE_START", RecordLostSamples: "LOST_SAMPLES",
	RecordSwitch: "SWITCH", RecordSwitchCPUWide: "SWITCH_CPU_WIDE",
	RecordNamespaces: "NAMESPACES", RecordKsymbol: "KSYMBOL", RecordBPFEvent: "BPF_EVENT",
	RecordCgroup: "CGROUP", RecordTextPoke: "TEXT_POKE", RecordAuxOutputHWID: "AUX_OUTPUT_HW_ID",
	RecordHeaderAttr: "HEADER_ATTR", RecordHeaderEventType: "HEADER_EVENT_TYPE",
	RecordHeaderTracing: "HEADER_TRACING_DATA", RecordHeaderBuildID: "HEADER_BUILD_ID",
	RecordFinishedRound: "FINISHED_ROUND", RecordIDIndex: "ID_INDEX",
	RecordAuxtraceInfo: "AUXTRACE_INFO", RecordAuxtrace: "AUXTRACE",
	RecordAuxtraceError: "AUXTRACE_ERROR", RecordThreadMap: "THREAD_MAP",
	RecordCPUMap: "CPU_MAP", RecordStatConfig: "STAT_CONFIG", RecordStat: "STAT",
	RecordStatRound: "STAT_ROUND", RecordEventUpdate: "EVENT_UPDATE",
	RecordTimeConv: "TIME_CONV", RecordHeaderFeature: "FEATURE",
	RecordCompressed: "COMPRESSED", RecordFinishedInit: "FINISHED_INIT",
	RecordCompressed2: "COMPRESSED2",
}

func (t RecordType) String() string {
	if s, ok := recordNames[t]; ok {
		return s
	}
	return fmt.Sprintf("RECORD_%d", uint32(t))
}

// CPUMode is header.misc & 7.
type CPUMode uint8

// CPU modes (PERF_RECORD_MISC_*).
const (
	CPUModeUnknown     CPUMode = 0
	CPUModeKernel      CPUMode = 1
	CPUModeUser        CPUMode = 2
	CPUModeHypervisor  CPUMode = 3
	CPUModeGuestKernel CPUMode = 4
	CPUModeGuestUser   CPUMode = 5
)

// header.misc bits.
const (
	MiscCPUModeMask = 0x7
	MiscMmapData    = 1 << 13 // MMAP/MMAP2 of a data mapping
	MiscCommExec    = 1 << 13 // COMM caused by exec
	MiscSwitchOut   = 1 << 13
	MiscExactIP     = 1 << 14 // SAMPLE
	MiscMmapBuildID = 1 << 14 // MMAP2 carries a build id instead of inode fields
	MiscBuildIDSize = 1 << 15 // build-id feature entry: byte 20 is the id length
)

// SampleFormat is perf_event_attr.sample_type.
type SampleFormat uint64

// sample_type bits.
const (
	SampleFormatIP           SampleFormat = 1 << 0
	SampleFormatTID          SampleFormat = 1 << 1
	SampleFormatTime         SampleFormat = 1 << 2
	SampleFormatAddr         SampleFormat = 1 << 3
	SampleFormatRead         SampleFormat = 1 << 4
	SampleFormatCallchain    SampleFormat = 1 << 5
	SampleFormatID           SampleFormat = 1 << 6
	SampleFormatCPU          SampleFormat = 1 << 7
	SampleFormatPeriod       SampleFormat = 1 << 8
	SampleFormatStreamID     SampleFormat = 1 << 9
	SampleFormatRaw          SampleFormat = 1 << 10
	SampleFormatBranchStack  SampleFormat = 1 << 11
	SampleFormatRegsUser     SampleFormat = 1 << 12
	SampleFormatStackUser    SampleFormat = 1 << 13
	SampleFormatWeight       SampleFormat = 1 << 14
	SampleFormatDataSrc      SampleFormat = 1 << 15
	SampleFormatIdentifier   SampleFormat = 1 << 16
	SampleFormatTransaction  SampleFormat = 1 << 17
	SampleFormatRegsIntr     SampleFormat = 1 << 18
	SampleFormatPhysAddr     SampleFormat = 1 << 19
	SampleFormatAux          SampleFormat = 1 << 20
	SampleFormatCgroup       SampleFormat = 1 << 21
	SampleFormatDataPageSize SampleFormat = 1 << 22
	SampleFormatCodePageSize SampleFormat = 1 << 23
	SampleFormatWeightStruct SampleFormat = 1 << 24
)

// ReadFormat is perf_event_attr.read_format.
type ReadFormat uint64

// read_format bits.
const (
	ReadTotalTimeEnabled ReadFormat = 1 << 0
	ReadTotalTimeRunning ReadFormat = 1 << 1
	ReadID               ReadFormat = 1 << 2
	ReadGroup            ReadFormat = 1 << 3
	ReadLost             ReadFormat = 1 << 4
)

// AttrFlags is the perf_event_attr bit field at offset 40, with bit 0 =
// disabled as on a little-endian machine.
type AttrFlags uint64

// Selected perf_event_attr flag bits.
const (
	AttrDisabled      AttrFlags = 1 << 0
	AttrInherit       AttrFlags = 1 << 1
	AttrExcludeUser   AttrFlags = 1 << 4
	AttrExcludeKern   AttrFlags = 1 << 5
	AttrExcludeHV     AttrFlags = 1 << 6
	AttrMmap          AttrFlags = 1 << 8
	AttrComm          AttrFlags = 1 << 9
	AttrFreq          AttrFlags = 1 << 10
	AttrEnableOnExec  AttrFlags = 1 << 12
	AttrTask          AttrFlags = 1 << 13
	AttrSampleIDAll   AttrFlags = 1 << 18
	AttrExcludeHost   AttrFlags = 1 << 19
	AttrExcludeGuest  AttrFlags = 1 << 20
	AttrMmap2         AttrFlags = 1 << 23
	AttrCommExec      AttrFlags = 1 << 24
	AttrUseClockID    AttrFlags = 1 << 25
	AttrContextSwitch AttrFlags = 1 << 26
	AttrWriteBackward AttrFlags = 1 << 27
	AttrKsymbol       AttrFlags = 1 << 29
	AttrBPFEvent      AttrFlags = 1 << 30
	AttrBuildID       AttrFlags = 1 << 34
)

// Branch sample type bits that change the SAMPLE layout.
const (
	BranchHWIndex  = 1 << 17 // PERF_SAMPLE_BRANCH_HW_INDEX
	BranchCounters = 1 << 19 // PERF_SAMPLE_BRANCH_COUNTERS
)

// Branch sample type bits that change what the branch stack means.
const (
	BranchUser = 1 << 0 // PERF_SAMPLE_BRANCH_USER: user-space branches only
	// BranchCallStack is PERF_SAMPLE_BRANCH_CALL_STACK (perf record
	// --call-graph lbr): the branch stack is the user call stack, which
	// perf resolves in place of the callchain's user part.
	BranchCallStack = 1 << 11
)

// Feature is a bit of the file header's feature bitmap (HEADER_*).
type Feature int

// Feature bits (tools/perf/util/header.h).
const (
	FeatTracingData    Feature = 1
	FeatBuildID        Feature = 2
	FeatHostname       Feature = 3
	FeatOSRelease      Feature = 4
	FeatVersion        Feature = 5
	FeatArch           Feature = 6
	FeatNrCPUs         Feature = 7
	FeatCPUDesc        Feature = 8
	FeatCPUID          Feature = 9
	FeatTotalMem       Feature = 10
	FeatCmdline        Feature = 11
	FeatEventDesc      Feature = 12
	FeatCPUTopology    Feature = 13
	FeatNUMATopology   Feature = 14
	FeatBranchStack    Feature = 15
	FeatPMUMappings    Feature = 16
	FeatGroupDesc      Feature = 17
	FeatAuxtrace       Feature = 18
	FeatStat           Feature = 19
	FeatCache          Feature = 20
	FeatSampleTime     Feature = 21
	FeatMemTopology    Feature = 22
	FeatClockID        Feature = 23
	FeatDirFormat      Feature = 24
	FeatBPFProgInfo    Feature = 25
	FeatBPFBTF         Feature = 26
	FeatCompressed     Feature = 27
	FeatCPUPMUCaps     Feature = 28
	FeatClockData      Feature = 29
	FeatHybridTopology Feature = 30
	FeatPMUCaps        Feature = 31
	featBits                   = 256
)
