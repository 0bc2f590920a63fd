package attrib

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/ingest/symbols"
)

// Stack is one distinct stack of the samples: the thread and CPU they
// were taken on, the thread's command name then, their event, and their
// frames as perf script shows them (the callchain, leaf first; the
// sample's own address when there is none or it is hidden).
type Stack struct {
	Pid, Tid uint32
	Comm     string
	CPU      uint32
	Event    int
	Frames   []Frame
	Counts   Counts
}

// Frame is one frame of a Stack: its address, the map it fell in (the
// zero Map: none) and its symbol (symbols.Unknown when unresolved).
type Frame struct {
	Addr uint64
	Map  index.Map
	Sym  string
}

// stacker collects Stacks, one per distinct key.
type stacker struct {
	byKey  map[string]int
	stacks []Stack
	mapIDs map[index.Map]uint32
	symIDs map[string]uint32
	key    []byte
	frames []Frame
}

func newStacker() *stacker {
	return &stacker{byKey: make(map[string]int), mapIDs: make(map[index.Map]uint32), symIDs: make(map[string]uint32)}
}

// add counts c for the stack of frames (which it copies) taken in thread
// (pid, tid) named comm, on cpu, for event.
func (sk *stacker) add(pid, tid, cpu uint32, comm string, event int, frames []Frame, c Counts) {
	b := sk.key[:0]
	b = binary.LittleEndian.AppendUint32(b, pid)
	b = binary.LittleEndian.AppendUint32(b, tid)
	b = binary.LittleEndian.AppendUint32(b, cpu)
	b = binary.LittleEndian.AppendUint32(b, uint32(event))
	b = append(strconv.AppendInt(b, int64(len(comm)), 10), comm...)
	for _, f := range frames {
		m, ok := sk.mapIDs[f.Map]
		if !ok {
			m = uint32(len(sk.mapIDs))
			sk.mapIDs[f.Map] = m
		}
		s, ok := sk.symIDs[f.Sym]
		if !ok {
			s = uint32(len(sk.symIDs))
			sk.symIDs[f.Sym] = s
		}
		b = binary.LittleEndian.AppendUint64(b, f.Addr)
		b = binary.LittleEndian.AppendUint32(b, m)
		b = binary.LittleEndian.AppendUint32(b, s)
	}
	sk.key = b
	i, ok := sk.byKey[string(b)]
	if !ok {
		i = len(sk.stacks)
		sk.byKey[string(b)] = i
		sk.stacks = append(sk.stacks, Stack{Pid: pid, Tid: tid, Comm: comm, CPU: cpu, Event: event, Frames: slices.Clone(frames)})
	}
	sk.stacks[i].Counts.add(c)
}

// stack adds the sample to the stacks: its callchain's frames as perf
// script resolves them, or its own (address ip in map mp, if found, at
// symbol sym).
func (a *attributor) stack(e *event, mp index.Map, found bool, sym string, c Counts) {
	frames := a.stacks.frames[:0]
	if e.addrs != nil && !a.opts.HideCallchain {
		if !a.walkCallchain(e, func(ip uint64, mp *index.Map) {
			f := Frame{Addr: ip, Sym: symbols.Unknown}
			if name := a.inlinedName(); name != "" {
				f.Map, f.Sym = *mp, name // perf script's "name (inlined)" frame
			} else if mp != nil {
				f.Map, f.Sym = *mp, a.sym.name(*mp, ip)
			}
			frames = append(frames, f)
		}) {
			frames = frames[:0] // perf dropped the chain
		}
	} else {
		f := Frame{Addr: e.ip, Sym: sym}
		if found {
			f.Map = mp
		}
		frames = append(frames, f)
	}
	a.stacks.frames = frames
	a.stacks.add(e.pid, e.tid, e.cpu(), a.m.SampleThread(e.pid, e.tid).Comm, int(e.attr), frames, c)
}

// WriteFolded writes the stacks folded for flame-graph tools, as
// FlameGraph's stackcollapse-perf.pl folds perf script's output: one line
// per distinct stack, "comm;outermost;...;leaf count", in byte order,
// frames named by symbol (offset and, tidied, arguments dropped) or,
// unresolved, by "[dso's base name]" or "[unknown]"; the comm with spaces
// as underscores; the count the samples' period where perf script
// prints it (Result.PrintsPeriod: with perf record -c N, N a sample),
// else their number; only the samples of the first sample's event.
// Departures: a sample without a (shown) callchain folds to its own
// frame, where stackcollapse-perf.pl, seeing no frame lines, keeps the
// comm alone; and where its regular expressions misparse perf script's
// lines (a one-character comm gains a "_", a pid of -1 or a DSO name
// holding " (" garble the line), the values are folded as they are.
func (r *Result) WriteFolded(w io.Writer) error {
	collapsed := make(map[string]uint64)
	var b strings.Builder
	event := 0
	if len(r.Stacks) > 0 {
		event = r.Stacks[0].Event // the first sample's
	}
	for _, st := range r.Stacks {
		if st.Event != event {
			continue
		}
		b.Reset()
		b.WriteString(strings.ReplaceAll(st.Comm, " ", "_"))
		for i := len(st.Frames) - 1; i >= 0; i-- {
			name, ok := foldedName(st.Frames[i], st.Comm)
			if !ok {
				continue
			}
			b.WriteByte(';')
			b.WriteString(name)
		}
		n := st.Counts.Samples
		if event < len(r.PrintsPeriod) && r.PrintsPeriod[event] {
			n = st.Counts.Period
		}
		collapsed[b.String()] += n
	}
	bw := bufio.NewWriter(w)
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range collapsed {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(bw, "%s %d\n", k, collapsed[k])
	}
	return bw.Flush()
}

// Tidying of stackcollapse-perf.pl ($tidy_generic, $tidy_java).
var (
	goMethod   = regexp.MustCompile(`\.\(.*\)\.`)
	javaPrefix = regexp.MustCompile(`^L`)
)

// foldedName is stackcollapse-perf.pl's name for a frame; false for one
// it skips (a name starting with "(").
func foldedName(f Frame, comm string) (string, bool) {
	name := f.Sym
	if name == symbols.Unknown {
		dso := symbols.Unknown
		if f.Map != (index.Map{}) {
			dso = f.Map.DSO
		}
		if dso == symbols.Unknown {
			return "[unknown]", true
		}
		return "[" + path.Base(dso) + "]", true
	}
	if strings.HasPrefix(name, "(") {
		return "", false
	}
	name = strings.ReplaceAll(name, ";", ":")
	if !goMethod.MatchString(name) {
		// Everything from the first "(" not opening "(anonymous
		// namespace)" is argument noise (Perl's (?!...) has no RE2 form).
		for i := 0; i < len(name); i++ {
			if name[i] == '(' && !strings.HasPrefix(name[i:], "(anonymous namespace)") {
				name = name[:i]
				break
			}
		}
	}
	name = strings.NewReplacer(`"`, "", `'`, "").Replace(name)
	if strings.HasPrefix(comm, "java") && strings.Contains(name, "/") {
		name = javaPrefix.ReplaceAllString(name, "")
	}
	return name, true
}

// Pprof returns the stacks as a profile (WritePprof writes it): a
// Sample per stack, leaf first, valued by its sample count and its
// period in its event's unit ("cpu-clock" and "task-clock" in
// nanoseconds), labelled pid, tid, comm, cpu (when recorded) and event
// (when there are several). With one event sampled, the sample types
// are "samples" and the event; with several, "EVENT_samples" and EVENT
// for each, in event order, a sample's values zero but for its own
// event's, so that -sample_index picks an event and no total adds one
// event's units to another's; the first is the default. A Location per
// (map, address, symbol), at the frame's real address; a Mapping per map,
// with its file, offset and build id; a Function per (symbol, file). A
// frame without a symbol has a Location without Line, which pprof shows
// by address. Checked with CheckValid.
func (r *Result) Pprof() (*profile.Profile, error) {
	// The events sampled, in event order, and each one's columns.
	var sampled []int
	for _, st := range r.Stacks {
		if !slices.Contains(sampled, st.Event) {
			sampled = append(sampled, st.Event)
		}
	}
	slices.Sort(sampled)
	if len(sampled) == 0 {
		sampled = []int{0}
	}
	column := make(map[int]int, len(sampled))
	p := &profile.Profile{}
	for i, ev := range sampled {
		column[ev] = 2 * i
		name, unit := "samples", "count"
		if ev < len(r.Events) {
			name = r.Events[ev]
			if name == "cpu-clock" || name == "task-clock" {
				unit = "nanoseconds"
			}
		}
		count := "samples"
		if len(sampled) > 1 {
			count = name + "_samples"
		}
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: count, Unit: "count"}, &profile.ValueType{Type: name, Unit: unit})
	}
	p.PeriodType = p.SampleType[1]
	p.DefaultSampleType = p.SampleType[1].Type
	mappings := make(map[index.Map]*profile.Mapping)
	mapping := func(m index.Map) *profile.Mapping {
		if m == (index.Map{}) {
			return nil
		}
		pm := mappings[m]
		if pm == nil {
			pm = &profile.Mapping{ID: uint64(len(p.Mapping) + 1), Start: m.Start, Limit: m.End, Offset: m.Pgoff,
				File: m.DSO, BuildID: r.BuildIDs[m.DSO], HasFunctions: true}
			p.Mapping = append(p.Mapping, pm)
			mappings[m] = pm
		}
		return pm
	}
	type symFile struct{ sym, file string }
	funcs := make(map[symFile]*profile.Function)
	type locKey struct {
		m    *profile.Mapping
		addr uint64
		sym  string
	}
	locs := make(map[locKey]*profile.Location)
	location := func(f Frame) *profile.Location {
		pm := mapping(f.Map)
		k := locKey{pm, f.Addr, f.Sym}
		loc := locs[k]
		if loc != nil {
			return loc
		}
		loc = &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: pm, Address: f.Addr}
		if f.Sym != symbols.Unknown {
			fk := symFile{f.Sym, f.Map.DSO}
			fn := funcs[fk]
			if fn == nil {
				fn = &profile.Function{ID: uint64(len(p.Function) + 1), Name: f.Sym, SystemName: f.Sym, Filename: f.Map.DSO}
				p.Function = append(p.Function, fn)
				funcs[fk] = fn
			}
			loc.Line = []profile.Line{{Function: fn}}
		}
		p.Location = append(p.Location, loc)
		locs[k] = loc
		return loc
	}
	for _, st := range r.Stacks {
		value := make([]int64, len(p.SampleType))
		c := column[st.Event]
		value[c], value[c+1] = int64(st.Counts.Samples), int64(st.Counts.Period)
		s := &profile.Sample{
			Value: value,
			// String labels: pprof's encoding drops a numeric label of 0
			// (the idle task's pid, CPU 0).
			Label: map[string][]string{"comm": {st.Comm},
				"pid": {strconv.Itoa(int(int32(st.Pid)))}, "tid": {strconv.Itoa(int(int32(st.Tid)))}},
		}
		if st.Event < len(r.SampleTypes) && r.SampleTypes[st.Event]&perfdata.SampleFormatCPU != 0 {
			s.Label["cpu"] = []string{strconv.Itoa(int(st.CPU))}
		}
		if len(r.Events) > 1 && st.Event < len(r.Events) {
			s.Label["event"] = []string{r.Events[st.Event]}
		}
		for _, f := range st.Frames {
			s.Location = append(s.Location, location(f))
		}
		p.Sample = append(p.Sample, s)
	}
	if err := p.CheckValid(); err != nil {
		return nil, fmt.Errorf("attrib: pprof: %w", err)
	}
	return p, nil
}
