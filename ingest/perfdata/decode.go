package perfdata

import (
	"encoding/binary"
)

// decode turns the raw record rec into a typed record.
func (r *Reader) decode(rec []byte, info Info) (Record, error) {
	off := info.Offset
	if info.Type == RecordSample { // the hot path: no name or trailer work
		r.sample.Info = Info{}
		if err := r.decodeSample(rec, off, &r.sample); err != nil {
			return nil, err
		}
		r.sample.Info = info
		r.stats.Samples++
		return &r.sample, nil
	}
	what := info.Type.String()
	// Kernel records other than SAMPLE carry a sample_id trailer.
	hasTrailer := info.Type < RecordUserTypeStart && info.Type != 0
	var sid SampleID
	body := rec[8:]
	if hasTrailer {
		var err error
		sid, err = r.parseSampleID(rec, off, what)
		if err != nil {
			return nil, err
		}
		if sid.Attr != nil {
			body = rec[8 : len(rec)-sid.Attr.IDHdrSize()] // its attr's own trailer (parseSampleID)
		}
	}
	c := cursor{b: body, bo: r.bo, base: off + 8, what: what}
	switch info.Type {
	case RecordMmap, RecordMmap2:
		m := &r.mmap
		bid := m.BuildID[:0]
		*m = Mmap{Info: info, SampleID: sid}
		m.Pid = c.u32("pid")
		m.Tid = c.u32("tid")
		m.Addr = c.u64("addr")
		m.Len = c.u64("len")
		m.Pgoff = c.u64("pgoff")
		if info.Type == RecordMmap2 {
			if info.Misc&MiscMmapBuildID != 0 {
				n := int(c.u8("build_id_size"))
				c.bytes("reserved", 3)
				id := c.bytes("build_id", 20)
				if n > 20 {
					return nil, formatError(off, "MMAP2 at file offset %#x: build id size %d exceeds 20", off, n)
				}
				if c.err == nil {
					m.BuildID = append(bid, id[:n]...)
				}
			} else {
				m.Maj = c.u32("maj")
				m.Min = c.u32("min")
				m.Ino = c.u64("ino")
				m.InoGeneration = c.u64("ino_generation")
			}
			m.Prot = c.u32("prot")
			m.Flags = c.u32("flags")
		}
		if c.err != nil {
			return nil, c.err
		}
		m.Filename = cstring(body[c.pos:])
		return m, nil
	case RecordComm:
		m := &r.comm
		*m = Comm{Info: info, SampleID: sid}
		m.Pid = c.u32("pid")
		m.Tid = c.u32("tid")
		if c.err != nil {
			return nil, c.err
		}
		m.Comm = cstring(body[c.pos:])
		return m, nil
	case RecordFork, RecordExit:
		pid, ppid := c.u32("pid"), c.u32("ppid")
		tid, ptid := c.u32("tid"), c.u32("ptid")
		t := c.u64("time")
		if c.err != nil {
			return nil, c.err
		}
		if info.Type == RecordFork {
			r.fork = Fork{Info: info, Pid: pid, Ppid: ppid, Tid: tid, Ptid: ptid, Time: t, SampleID: sid}
			return &r.fork, nil
		}
		r.exit = Exit{Info: info, Pid: pid, Ppid: ppid, Tid: tid, Ptid: ptid, Time: t, SampleID: sid}
		return &r.exit, nil
	case RecordKsymbol:
		k := &r.ksym
		*k = Ksymbol{Info: info, SampleID: sid}
		k.Addr = c.u64("addr")
		k.Len = c.u32("len")
		k.KsymType = c.u16("ksym_type")
		k.Flags = c.u16("flags")
		if c.err != nil {
			return nil, c.err
		}
		k.Name = cstring(body[c.pos:])
		return k, nil
	case RecordBPFEvent:
		b := &r.bpf
		*b = BPFEvent{Info: info, SampleID: sid}
		b.EventType = c.u16("type")
		b.Flags = c.u16("flags")
		b.ID = c.u32("id")
		copy(b.Tag[:], c.bytes("tag", 8))
		return b, c.err
	case RecordLost:
		r.lost = Lost{Info: info, SampleID: sid, ID: c.u64("id"), Lost: c.u64("lost")}
		return &r.lost, c.err
	case RecordLostSamples:
		r.lostSamples = LostSamples{Info: info, SampleID: sid, Lost: c.u64("lost")}
		return &r.lostSamples, c.err
	case RecordThrottle, RecordUnthrottle:
		r.throttle = Throttle{Info: info, SampleID: sid, Time: c.u64("time"), ID: c.u64("id"), StreamID: c.u64("stream_id")}
		return &r.throttle, c.err
	case RecordFinishedRound:
		r.finishedRound = FinishedRound{info}
		return &r.finishedRound, nil
	case RecordFinishedInit:
		r.finishedInit = FinishedInit{info}
		return &r.finishedInit, nil
	case RecordHeaderAttr:
		a, err := decodeAttr(body, r.bo, off+8)
		if err != nil {
			return nil, err
		}
		n := int(a.Size)
		if n == 0 {
			n = attrSizeVer0
		}
		for p := n; p+8 <= len(body); p += 8 {
			a.IDs = append(a.IDs, r.bo.Uint64(body[p:]))
		}
		r.addAttr(a)
		r.headerAttr = HeaderAttr{Info: info, Attr: a}
		return &r.headerAttr, nil
	case RecordHeaderBuildID:
		b := &r.buildID
		id, err := decodeBuildID(rec, r.bo, off, b.BuildID[:0])
		if err != nil {
			return nil, err
		}
		*b = id
		b.Info = info
		return b, nil
	case RecordHeaderFeature:
		f := c.u64("feat_id")
		if c.err != nil {
			return nil, c.err
		}
		data := body[c.pos:]
		if f < featBits {
			r.hdr.Features[f/64] |= 1 << (f % 64)
			if err := r.features.parse(Feature(f), data, r.bo, off+16); err != nil {
				return nil, err
			}
		}
		r.feature = FeatureRecord{Info: info, Feature: Feature(f), Data: data}
		return &r.feature, nil
	case RecordIDIndex:
		n := c.count("nr", 32)
		x := &r.idIndex
		x.Info = info
		x.Entries = x.Entries[:0]
		for i := 0; i < n; i++ {
			e := IDIndexEntry{ID: c.u64("id"), Idx: c.u64("idx"), CPU: c.u64("cpu"), Tid: c.u64("tid")}
			x.Entries = append(x.Entries, e)
			if _, ok := r.idToAttr[e.ID]; !ok && e.Idx < uint64(len(r.attrs)) {
				r.setID(e.ID, r.attrs[e.Idx])
			}
		}
		return x, c.err
	}
	r.stats.Unknown++
	r.unknown = Unknown{Info: info, Data: rec[8:]}
	return &r.unknown, nil
}

// decodeBuildID decodes a perf_record_header_build_id (header included),
// appending the id to dst.
func decodeBuildID(rec []byte, bo binary.ByteOrder, off int64, dst []byte) (BuildID, error) {
	var b BuildID
	if len(rec) < 8+4+24 {
		return b, formatError(off, "build id at file offset %#x: %d bytes, need at least 36", off, len(rec))
	}
	misc := bo.Uint16(rec[4:])
	b.Pid = int32(bo.Uint32(rec[8:]))
	n := 20
	if misc&MiscBuildIDSize != 0 {
		n = int(rec[12+20])
		if n > 20 {
			return b, formatError(off, "build id at file offset %#x: size %d exceeds 20", off, n)
		}
	}
	b.BuildID = append(dst, rec[12:12+n]...)
	b.Filename = cstring(rec[36:])
	return b, nil
}
