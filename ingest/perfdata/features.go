package perfdata

import (
	"encoding/binary"
	"fmt"
)

// Features holds the decoded feature sections (file mode: the sections
// after the data; pipe mode: HEADER_FEATURE records, so only those seen so
// far).
type Features struct {
	// Present points at the header's feature bitmap.
	Present *[featBits / 64]uint64

	Hostname, OSRelease, Version, Arch string
	CPUDesc, CPUID                     string
	NrCPUsAvail, NrCPUsOnline          uint32
	TotalMem                           uint64 // kB, as recorded
	Cmdline                            []string
	BuildIDs                           []BuildID
	// Events are the EVENT_DESC entries: each event's name and sample
	// ids, in the recording's event order.
	Events []EventDesc
	// Groups are the GROUP_DESC entries: the event groups perf report
	// shows as one table.
	Groups      []GroupDesc
	Compression *Compression
	// DirVersion is DIR_FORMAT's version of a perf.data directory's
	// layout: 1 for data.N files beside the header file.
	DirVersion uint64
	// FirstSampleTime and LastSampleTime are SAMPLE_TIME's: the times of
	// the recording's first and last samples (0: not recorded), which
	// perf's percent time slices (--time 10%/2) divide.
	FirstSampleTime, LastSampleTime uint64
	// Sections are the file-mode section locations of every feature set.
	Sections map[Feature]Section
}

// Has reports whether feature f is set in the header bitmap.
func (f *Features) Has(x Feature) bool {
	if f.Present == nil || x < 0 || x >= featBits {
		return false
	}
	return f.Present[x/64]&(1<<(uint(x)%64)) != 0
}

// EventDesc is one event of the EVENT_DESC feature.
type EventDesc struct {
	Name string
	IDs  []uint64
}

// GroupDesc is one event group of the GROUP_DESC feature: the leader's
// index in the recording's event order and the group's size (the leader
// and the events right after it). Name is "{anon_group}" for a group
// without a name.
type GroupDesc struct {
	Name            string
	Leader, Members uint32
}

// EventName returns the name EVENT_DESC gives the event with sample id
// id, or "".
func (f *Features) EventName(id uint64) string {
	for _, e := range f.Events {
		for _, x := range e.IDs {
			if x == id {
				return e.Name
			}
		}
	}
	return ""
}

// Compression is the COMPRESSED feature.
type Compression struct {
	Version, Type, Level, Ratio, MmapLen uint32 // Type 1 = zstd
}

// Features returns the features read so far. In file mode they are read
// when the Reader is created from a ReaderAt, or when the records are
// exhausted if it reads a stream; an error met reading them is reported by
// FeaturesErr, not Err.
func (r *Reader) Features() *Features { return &r.features }

// FeaturesErr returns the first error met reading the feature sections.
func (r *Reader) FeaturesErr() error { return r.featErr }

// readFeatures reads the feature sections of a file-mode recording.
func (r *Reader) readFeatures() {
	if r.featsRead {
		return
	}
	r.featsRead = true
	if r.hdr.Data.Size == 0 {
		return // unfinished recording: no feature index
	}
	if err := r.readFeatureSections(); err != nil {
		r.featErr = err
	}
}

func (r *Reader) readFeatureSections() error {
	n := popcount(r.hdr.Features[:])
	if n == 0 {
		return nil
	}
	idx := make([]byte, 16*n)
	ioff := int64(r.hdr.Data.Offset + r.hdr.Data.Size)
	if err := r.readAt(idx, ioff, "feature index"); err != nil {
		return err
	}
	// perf processes the features in bit order and stops at the first
	// that fails (perf_header__process_sections), keeping those before
	// it: so does this, a bad section index entry included.
	r.features.Sections = make(map[Feature]Section, n)
	var stop error
	i := 0
	for f := Feature(0); f < featBits && stop == nil; f++ {
		if !r.hdr.HasFeature(f) {
			continue
		}
		s := Section{r.bo.Uint64(idx[16*i:]), r.bo.Uint64(idx[16*i+8:])}
		hoff := int(ioff) + 16*i
		i++
		if stop = r.checkSection(s, fmt.Sprintf("feature %d section", f), hoff); stop == nil {
			r.features.Sections[f] = s
		}
	}
	// Read the known sections in feature order, which is file order
	// (streams cannot seek back).
	for f := Feature(0); f < featBits; f++ {
		s, ok := r.features.Sections[f]
		if !ok || !knownFeature(f) {
			continue
		}
		if s.Size > maxSection {
			return formatError(s.Offset, "feature %d section at file offset %#x: size %d is too large", f, s.Offset, s.Size)
		}
		b, err := r.readChunked(int64(s.Offset), int64(s.Size), fmt.Sprintf("feature %d section", f))
		if err != nil {
			return err
		}
		if err := r.features.parse(f, b, r.bo, int64(s.Offset)); err != nil {
			return err
		}
	}
	return stop
}

func knownFeature(f Feature) bool {
	switch f {
	case FeatBuildID, FeatHostname, FeatOSRelease, FeatVersion, FeatArch, FeatNrCPUs,
		FeatCPUDesc, FeatCPUID, FeatTotalMem, FeatCmdline, FeatCompressed, FeatEventDesc, FeatGroupDesc, FeatDirFormat,
		FeatSampleTime:
		return true
	}
	return false
}

// parse decodes one feature section b found at file offset off.
func (f *Features) parse(x Feature, b []byte, bo binary.ByteOrder, off int64) error {
	c := cursor{b: b, bo: bo, base: off, what: fmt.Sprintf("feature %d section", x)}
	str := func(field string) string {
		n := c.u32(field + " length")
		return cstring(c.bytes(field, int(min(n, 1<<31))))
	}
	switch x {
	case FeatHostname:
		f.Hostname = str("hostname")
	case FeatOSRelease:
		f.OSRelease = str("osrelease")
	case FeatVersion:
		f.Version = str("version")
	case FeatArch:
		f.Arch = str("arch")
	case FeatCPUDesc:
		f.CPUDesc = str("cpudesc")
	case FeatCPUID:
		f.CPUID = str("cpuid")
	case FeatNrCPUs:
		f.NrCPUsAvail = c.u32("nr_cpus_avail")
		f.NrCPUsOnline = c.u32("nr_cpus_online")
	case FeatTotalMem:
		f.TotalMem = c.u64("total_mem")
	case FeatCmdline:
		n := c.u32("cmdline count")
		if c.err == nil && uint64(n) > uint64(len(b))/4 {
			return formatError(off, "feature %d section at file offset %#x: %d strings cannot fit in %d bytes", x, off, n, len(b))
		}
		f.Cmdline = f.Cmdline[:0]
		for i := uint32(0); i < n && c.err == nil; i++ {
			f.Cmdline = append(f.Cmdline, str("cmdline string"))
		}
	case FeatEventDesc:
		// u32 nr, u32 attr_size, then per event: attr, u32 nr_ids,
		// name (u32 length + string), ids[nr_ids].
		nr := c.u32("event count")
		attrSize := c.u32("attr size")
		if c.err == nil && (uint64(nr)*(uint64(attrSize)+8) > uint64(len(b)) || attrSize > attrSizeMax) {
			return formatError(off, "feature %d section at file offset %#x: %d events of %d-byte attrs cannot fit in %d bytes", x, off, nr, attrSize, len(b))
		}
		f.Events = f.Events[:0]
		for i := uint32(0); i < nr && c.err == nil; i++ {
			c.bytes("event attr", int(attrSize))
			nIDs := c.u32("event id count")
			e := EventDesc{Name: str("event name")}
			if c.err == nil && uint64(nIDs) > uint64(len(b))/8 {
				return formatError(off, "feature %d section at file offset %#x: %d ids cannot fit in %d bytes", x, off, nIDs, len(b))
			}
			e.IDs = c.u64s("event ids", int(nIDs), nil)
			f.Events = append(f.Events, e)
		}
	case FeatGroupDesc:
		// u32 nr_groups, then per group: name (u32 length + string),
		// u32 leader_idx, u32 nr_members (header.c, write_group_desc).
		nr := c.u32("group count")
		if c.err == nil && uint64(nr) > uint64(len(b))/12 {
			return formatError(off, "feature %d section at file offset %#x: %d groups cannot fit in %d bytes", x, off, nr, len(b))
		}
		f.Groups = f.Groups[:0]
		for i := uint32(0); i < nr && c.err == nil; i++ {
			g := GroupDesc{Name: str("group name")}
			g.Leader, g.Members = c.u32("group leader"), c.u32("group members")
			f.Groups = append(f.Groups, g)
		}
	case FeatDirFormat:
		f.DirVersion = c.u64("version")
	case FeatSampleTime:
		f.FirstSampleTime = c.u64("first sample time")
		f.LastSampleTime = c.u64("last sample time")
	case FeatCompressed:
		f.Compression = &Compression{
			Version: c.u32("version"), Type: c.u32("type"), Level: c.u32("level"),
			Ratio: c.u32("ratio"), MmapLen: c.u32("mmap_len"),
		}
	case FeatBuildID:
		f.BuildIDs = f.BuildIDs[:0]
		for p := 0; p < len(b); {
			if len(b)-p < 8 {
				return formatError(off+int64(p), "build id entry at file offset %#x: %d bytes left, need a header", off+int64(p), len(b)-p)
			}
			size := int(bo.Uint16(b[p+6:]))
			if size < 8 || size > len(b)-p {
				return formatError(off+int64(p), "build id entry at file offset %#x: size %d does not fit in the %d bytes left", off+int64(p), size, len(b)-p)
			}
			e, err := decodeBuildID(b[p:p+size], bo, off+int64(p), nil)
			if err != nil {
				return err
			}
			e.Info = Info{Type: RecordType(bo.Uint32(b[p:])), Misc: bo.Uint16(b[p+4:]), Size: uint16(size), Offset: off + int64(p)}
			f.BuildIDs = append(f.BuildIDs, e)
			p += size
		}
	}
	return c.err
}
