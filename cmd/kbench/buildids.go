package main

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/attrib"
	"github.com/kmapindex/kmapindex/ingest/machine"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/ingest/symbols"
)

// hitTracker finds the DSOs a recording's samples hit, for the BUILD_ID
// feature perf record writes: process_buildids replays the recording and
// marks the DSO of each sample's ip (build_id__mark_dso_hit), and
// machine__write_buildid_table writes the hit DSOs that have a build id,
// and the vdso whenever there is one.
type hitTracker struct {
	m    *machine.Machine
	attr *perfdata.Attr
	dec  *perfdata.Decoder
	root string // where proc/ and sys/ are (kbench record -root)
	// fast: samples start with ip, then pid and tid (no identifier).
	fast  bool
	order []hitDSO             // in the order their maps first appeared
	seen  map[hitDSO]bool      // in order
	hit   map[hitDSO]bool      // hit by a sample
	long  map[string]string    // module map DSO ("[name]") → its MMAP file name
	vdso  bool                 // a [vdso] map was seen
	last  struct{ dso hitDSO } // the DSO hit last: samples come in runs
}

// hitDSO is a DSO as a map names it, with whether it is kernel space.
type hitDSO struct {
	name   string
	kernel bool
}

func newHitTracker(attr *perfdata.Attr, root string) *hitTracker {
	st := attr.SampleType
	return &hitTracker{
		m:    machine.New(mapset.BTree),
		attr: attr,
		dec:  perfdata.NewDecoder(attr, binary.NativeEndian),
		root: root,
		fast: st&perfdata.SampleFormatIdentifier == 0 && st&perfdata.SampleFormatIP != 0 && st&perfdata.SampleFormatTID != 0,
		seen: make(map[hitDSO]bool),
		hit:  make(map[hitDSO]bool),
		long: make(map[string]string),
	}
}

// side applies a side-band record (synthesized or from the ring).
func (h *hitTracker) side(rec perfdata.Record) {
	if m, ok := rec.(*perfdata.Mmap); ok {
		mm := machine.MmapOf(m)
		kernel := mm.CPUMode == machine.CPUModeKernel
		var d hitDSO
		switch {
		case kernel && machine.IsKernelMmap(m.Filename):
			d = hitDSO{h.m.KernelDSO(), true}
		case kernel:
			d = hitDSO{h.m.ModuleDSO(m.Filename), true}
			h.long[d.name] = m.Filename
		default:
			d = hitDSO{machine.UserMap(mm).DSO, false}
			h.vdso = h.vdso || m.Filename == machine.VDSOName
		}
		if !h.seen[d] {
			h.seen[d] = true
			h.order = append(h.order, d)
		}
	}
	h.m.Apply(rec)
}

// recordBuildIDs replays the records w has written to f and returns the
// BUILD_ID entries of the DSOs their samples hit.
func recordBuildIDs(w *perfdata.Writer, f io.ReaderAt, root string) ([]perfdata.BuildID, error) {
	off, size, err := w.Data()
	if err != nil {
		return nil, err
	}
	h := newHitTracker(w.Attr(), root)
	r := bufio.NewReaderSize(io.NewSectionReader(f, off, size), 1<<20)
	var rec []byte
	for pos := int64(0); pos < size; {
		var hdr [8]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return nil, fmt.Errorf("record: reading back %s at offset %#x: %w", "the recording", off+pos, err)
		}
		n := int(binary.LittleEndian.Uint16(hdr[6:]))
		if n < 8 {
			return nil, fmt.Errorf("record: reading back the recording: %d-byte record at offset %#x", n, off+pos)
		}
		rec = append(append(rec[:0], hdr[:]...), make([]byte, n-8)...)
		if _, err := io.ReadFull(r, rec[8:]); err != nil {
			return nil, fmt.Errorf("record: reading back the recording at offset %#x: %w", off+pos, err)
		}
		h.raw(rec)
		pos += int64(n)
	}
	return h.buildIDs(), nil
}

// raw takes one record of the recording (little-endian, as the writer
// and this machine write it).
func (h *hitTracker) raw(b []byte) {
	if len(b) < 24 {
		return
	}
	if perfdata.RecordType(binary.NativeEndian.Uint32(b)) != perfdata.RecordSample {
		if rec, err := h.dec.Decode(b); err == nil {
			h.side(rec)
		}
		return
	}
	cpumode := uint8(binary.NativeEndian.Uint16(b[4:]) & 7)
	var pid, tid uint32
	var ip uint64
	if h.fast {
		ip, pid, tid = binary.NativeEndian.Uint64(b[8:]), binary.NativeEndian.Uint32(b[16:]), binary.NativeEndian.Uint32(b[20:])
	} else {
		rec, err := h.dec.Decode(b)
		s, ok := rec.(*perfdata.Sample)
		if err != nil || !ok {
			return
		}
		ip, pid, tid = s.IP, s.Pid, s.Tid
	}
	mp, ok := h.m.Resolve(cpumode, pid, tid, ip)
	if !ok {
		return
	}
	d := hitDSO{mp.DSO, mp.Kind != index.KindUser && mp.Kind != index.KindAnon}
	if d != h.last.dso {
		h.hit[d] = true
		h.last.dso = d
	}
}

// buildIDs returns the BUILD_ID feature entries: each hit DSO whose build
// id can be read (the running kernel's from sys/kernel/notes, a module's
// from sys/module/NAME/notes, a file's from its ELF notes), and the vdso,
// this process's, as perf writes its own. Names are perf's long names:
// a module's MMAP file name, "[kernel.kallsyms]", "[vdso]".
func (h *hitTracker) buildIDs() []perfdata.BuildID {
	var out []perfdata.BuildID
	for _, d := range h.order {
		var id []byte
		name, misc := d.name, uint16(perfdata.CPUModeUser)
		switch {
		case d.name == machine.VDSOName:
			if img := attrib.OwnVDSO(); img != nil {
				if f, err := elf.NewFile(bytes.NewReader(img)); err == nil {
					id = symbols.BuildID(f)
				}
			}
		case !h.hit[d]:
			continue
		case d.kernel && d.name == h.m.KernelDSO():
			misc = uint16(perfdata.CPUModeKernel)
			id = h.notes("sys/kernel/notes")
		case d.kernel:
			misc = uint16(perfdata.CPUModeKernel)
			name = h.long[d.name]
			id = h.notes("sys/module/" + index.ModuleName(d.name) + "/notes/.note.gnu.build-id")
		default:
			if f, err := elf.Open(d.name); err == nil {
				id = symbols.BuildID(f)
				f.Close()
			}
		}
		if len(id) == 0 || len(id) > 20 {
			continue
		}
		out = append(out, perfdata.BuildID{Info: perfdata.Info{Misc: misc}, Pid: -1, BuildID: id, Filename: name})
	}
	return out
}

// notes reads the GNU build id of an ELF notes file below the root.
func (h *hitTracker) notes(rel string) []byte {
	b, err := os.ReadFile(filepath.Join(h.root, filepath.FromSlash(rel)))
	if err != nil {
		return nil
	}
	return symbols.NoteBuildID(b, binary.NativeEndian)
}
