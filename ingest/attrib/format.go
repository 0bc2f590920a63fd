package attrib

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/machine"
	"github.com/kmapindex/kmapindex/ingest/symbols"
)

// ShortName returns perf's short name of a DSO, what its tables print:
// "[JIT] tid N" for /tmp/perf-N.map (dso__set_basename); for a kernel DSO
// (kernel true) named by a path, "[name]" for a module's .ko
// (dso__set_module_info) and "[kernel.vmlinux]" for a vmlinux; else the
// base name of a path, a relative one too ("64/ld-2.17.so", which old
// perf versions recorded); anything else ("[kernel.kallsyms]", "[vdso]",
// "[unknown]", "[nf_tables]") unchanged.
func ShortName(dso string, kernel bool) string {
	if !strings.Contains(dso, "/") {
		return dso
	}
	if strings.HasPrefix(dso, machine.PerfMapPrefix) {
		var tid int
		if n, _ := fmt.Sscanf(dso, machine.PerfMapPrefix+"%d.map", &tid); n == 1 {
			return fmt.Sprintf("[JIT] tid %d", tid)
		}
	}
	if kernel {
		name, kmod := index.KmodName(dso)
		switch {
		case kmod:
			return name
		case strings.Contains(dso, "vmlinux"):
			return "[kernel.vmlinux]"
		}
	}
	return filepath.Base(dso)
}

// noLevel is k without its level when it has no map: perf's dso and sym
// keys find two such entries equal whatever their levels, so counts,
// children entries and hidden rows are keyed so.
func noLevel(k Key) Key {
	if k.DSO == symbols.Unknown {
		k.Kernel, k.Hyper = false, false
	}
	return k
}

// level is perf's hist entry level marker: [k] for samples resolved with
// a kernel cpumode, [H] for those of neither a kernel nor a user one
// (Key.Hyper), [.] for the rest.
func level(k Key) string {
	switch {
	case k.Kernel:
		return "[k]"
	case k.Hyper:
		return "[H]"
	}
	return "[.]"
}

// Percent returns c's share of the result as perf report's overhead
// does: by period, or by samples when the samples carry no period.
func (r *Result) Percent(c Counts) float64 {
	return share(c, Counts{r.Samples, r.Period})
}

// share returns c as a percentage of total, by period when there is one.
func share(c, total Counts) float64 {
	switch {
	case total.Period > 0:
		return float64(c.Period) * 100 / float64(total.Period)
	case total.Samples > 0:
		return float64(c.Samples) * 100 / float64(total.Samples)
	}
	return 0
}

// appendPercent appends x with two decimals, as strconv.AppendFloat(b,
// x, 'f', 2, 64) does (and C's "%.2f"): by integer arithmetic, unless
// x*100 lies within a rounding error of a tie between two last digits,
// where AppendFloat's exact rounding decides: 8.7 against 26.1 ns a
// call (BenchmarkAppendPercent), and a gcc build's children table writes
// two for each of its 514 k rows.
func appendPercent(b []byte, x float64) []byte {
	if !(x >= 0 && x < 1<<40) || math.Signbit(x) {
		return strconv.AppendFloat(b, x, 'f', 2, 64)
	}
	y := x * 100
	whole := math.Floor(y)
	frac := y - whole
	if frac > 0.5-1e-6 && frac < 0.5+1e-6 {
		return strconv.AppendFloat(b, x, 'f', 2, 64)
	}
	v := uint64(whole)
	if frac > 0.5 {
		v++
	}
	b = strconv.AppendUint(b, v/100, 10)
	return append(b, '.', byte('0'+v/10%10), byte('0'+v%10))
}

// SymbolName is how perf report names k's symbol: the name, or for an
// unresolved one the address, 0x and 16 hex digits.
func (k Key) SymbolName() string {
	if k.Sym == symbols.Unknown {
		var b [18]byte
		return string(k.appendSymbolName(b[:0]))
	}
	return k.Sym
}

// appendSymbolName appends SymbolName to dst: a table's rows of addresses
// without a symbol write it without making a string of it.
func (k Key) appendSymbolName(dst []byte) []byte {
	if k.Sym != symbols.Unknown {
		return append(dst, k.Sym...)
	}
	if k.Addr == 0 {
		return append(dst, "0000000000000000"...) // C's %#.16llx: no 0x for zero
	}
	var b [18]byte
	h := strconv.AppendUint(b[:0], k.Addr, 16)
	n := copy(b[18-len(h):], h) // right-aligned, zero-filled, behind "0x"
	for i := 2; i < 18-n; i++ {
		b[i] = '0'
	}
	b[0], b[1] = '0', 'x'
	return append(dst, b[:]...)
}

// WriteTable writes the (dso, symbol) counts as perf report --stdio
// --sort dso,sym --no-children -n lays them out: a header block, then one
// line per (dso, symbol), highest overhead first, with the overhead (the
// share of the period), the sample count, the DSO's short name and the
// symbol behind [k] or [.]; an unresolved symbol is one row per address,
// as perf prints it. A recording with several events gets a table per
// event, each with its own overhead, as in perf report; an event group
// (GROUP_DESC) gets one table with an overhead and a sample column per
// member, as perf's default group view (symbol_conf.event_group) shows.
func (r *Result) WriteTable(w io.Writer) error {
	var b bytes.Buffer
	if r.TableEmpty() {
		r.writeFirstLines(&b)
		_, err := w.Write(b.Bytes())
		return err
	}
	if r.Rows != nil {
		return r.Rows.write(w, r)
	}
	flush := func() error {
		_, err := w.Write(b.Bytes())
		b.Reset()
		return err
	}
	r.writeTablePreamble(&b)
	counts, byEvent := r.BySym, r.ByEvent
	if r.childSelf != nil {
		counts = r.childSelf
	}
	if r.Branches != nil {
		counts, byEvent = r.Branches, r.BranchEvents
	}
	for _, g := range r.eventGroups() {
		totals, sum := g.totals(byEvent)
		if skipsEmpty(totals, len(r.Events)) {
			continue
		}
		ranks := r.noMapRanks
		if r.Branches != nil {
			ranks = nil
		}
		shards, noMap := groupTable(counts, r.children, r.hidden, ranks, g.first, g.n, r.Branches == nil)
		lines := mergeLines(tableOrder(slices.Concat(shards...)), noMap)
		dsoWidth := len("Shared Object")
		for _, row := range lines.rows {
			dsoWidth = max(dsoWidth, len(row.short))
			if row.key.Sym == symbols.Unknown {
				dsoWidth = max(dsoWidth, unresolvedDSOWidth)
			}
		}
		for _, rows := range noMap {
			if len(rows) > 0 {
				dsoWidth = max(dsoWidth, len(symbols.Unknown), unresolvedDSOWidth)
			}
		}
		symWidth := len("Symbol")
		for _, row := range lines.rows {
			symWidth = max(symWidth, symbolWidth(row.key.Sym))
		}
		for _, rows := range noMap {
			if len(rows) > 0 {
				symWidth = max(symWidth, unresolvedSymWidth)
			}
		}
		writeSamplesHeader(&b, r, g, sum, "")
		if r.children != nil {
			fmt.Fprintf(&b, "# %*s  %*s  %*s  %-*s  %s\n", 8*g.n, "Children", 8*g.n, "Self", 12*g.n, "Samples", dsoWidth, "Shared Object", "Symbol")
			fmt.Fprintf(&b, "# %s  %s  %s  %s  %s\n", strings.Repeat(".", 8*g.n), strings.Repeat(".", 8*g.n), strings.Repeat(".", 12*g.n), strings.Repeat(".", dsoWidth), strings.Repeat(".", symWidth))
		} else {
			fmt.Fprintf(&b, "# %*s  %*s  %-*s  %s\n", 8*g.n, "Overhead", 12*g.n, "Samples", dsoWidth, "Shared Object", "Symbol")
			fmt.Fprintf(&b, "# %s  %s  %s  %s\n", strings.Repeat(".", 8*g.n), strings.Repeat(".", 12*g.n), strings.Repeat(".", dsoWidth), strings.Repeat(".", symWidth))
		}
		b.WriteString("#\n")
		if err := flush(); err != nil {
			return err
		}
		// line writes a row's columns: Children (acc, in a children
		// table), Self and Samples (self), its DSO's short name, its
		// level and symbol.
		line := func(b *bytes.Buffer, acc, self []Counts, short string, k Key) {
			if acc != nil {
				writeShares(b, acc, totals)
			}
			writeGroupCounts(b, self, totals)
			b.WriteString("  ")
			writeLeft(b, dsoWidth, short)
			b.WriteString("  ")
			b.WriteString(level(k))
			b.WriteByte(' ')
			b.Write(k.appendSymbolName(b.AvailableBuffer()))
		}
		err := writeLines(w, lines.len(), func(b *bytes.Buffer, i int) {
			row, nm := lines.at(i)
			if nm != nil {
				cs := [2]Counts{nm.acc, nm.self}
				line(b, cs[:1], cs[1:], symbols.Unknown, nm.key(g.first))
				b.WriteByte('\n')
				return
			}
			acc := row.acc
			if r.children == nil {
				acc = nil
			}
			line(b, acc, row.c, row.short, row.key)
			if o, ok := r.objectOf(row.key, g); ok && r.Branches == nil {
				b.WriteString("+0x")
				var num [16]byte
				b.Write(strconv.AppendUint(num[:0], o.off(), 16))
			}
			b.WriteByte('\n')
		})
		if err != nil {
			return err
		}
		b.WriteString(tableEnd)
	}
	return flush()
}

// objectOf returns the object symbol's offset the line of group g keyed
// k names (objectName), if its symbol is an object: the leader's entry's,
// else that of the dummy entry perf makes for the leader from the first
// member that has one (hists__link: hist_entry__new copies its address
// and map).
func (r *Result) objectOf(k Key, g eventGroup) (objectName, bool) {
	for ev := g.first; ev < g.first+g.n; ev++ {
		k.Event = ev
		if o, ok := r.objects[k]; ok {
			return o, true
		}
	}
	return objectName{}, false
}

// writeSamplesHeader writes a table's lines on its event or group g of
// totals sum, as perf's hists__fprintf_nr_sample_events: the samples,
// the event's name, and the "event count", the total period (a group's
// members' summed).
//
// With a time filter, perf names it after the event: " (time slices:
// START,END)", as given.
func writeSamplesHeader(b *bytes.Buffer, r *Result, g eventGroup, sum Counts, timeSlices string) {
	n, unit := convertUnit(sum.Samples)
	if g.n == 1 {
		fmt.Fprintf(b, "# Samples: %d%c of event '%s'", n, unit, r.Events[g.first])
	} else {
		fmt.Fprintf(b, "# Samples: %d%c of events '%s'", n, unit, r.groupName(g))
	}
	if timeSlices != "" {
		fmt.Fprintf(b, " (time slices: %s)", timeSlices)
	}
	fmt.Fprintf(b, "\n# Event count (approx.): %d\n#\n", sum.Period)
}

// convertUnit is perf's convert_unit, which a table's sample count goes
// through: thousands, millions or billions past 1000, truncated ("2M"),
// else the count and a space.
func convertUnit(n uint64) (uint64, byte) {
	unit := byte(' ')
	for _, u := range []byte("KMG") {
		if n <= 1000 {
			break
		}
		n, unit = n/1000, u
	}
	return n, unit
}

// symbolWidth is the width perf's Symbol column takes for a row of
// symbol sym (hists__calc_col_len): the symbol's name and the 4 bytes of
// "[k] " (an inlined function's name without the " (inlined)" its row
// adds, an object's without its offset), or unresolvedSymWidth without a
// symbol.
func symbolWidth(sym string) int {
	if sym == symbols.Unknown {
		return unresolvedSymWidth
	}
	return 4 + len(bareSym(sym))
}

// unresolvedSymWidth is the width perf's Symbol column takes for a row
// of no symbol: "[k] 0x" and an address's 16 hex digits.
const unresolvedSymWidth = 4 + 2 + 16

// unresolvedDSOWidth is the least width of the DSO column of a table
// with a row of no symbol: perf's hists__set_unres_dso_col_len widens it
// to an address's 16 hex digits.
const unresolvedDSOWidth = 16

// writeTablePreamble writes the lines every table starts with: samples
// without a map (kbench's, where perf's first line points to its
// --header option) and perf's "Total Lost Samples".
// Between them come the columns a filter elides (sort__setup_elide's
// "# dso: NAME").
func (r *Result) writeTablePreamble(b *bytes.Buffer, elided ...string) {
	r.writeFirstLines(b)
	for _, l := range elided {
		b.WriteString(l)
	}
	fmt.Fprintf(b, "#\n# Total Lost Samples: %d\n#\n", r.LostSamples)
}

// TableEmpty reports whether the table has no entry at all, shown or
// hidden by a filter: no sample reached it (a recording without samples,
// a time filter that kept none). perf report then prints no table
// ("The FILE data has no samples!"), and WriteTable the first two lines.
func (r *Result) TableEmpty() bool {
	switch {
	case r.Rows != nil:
		return !r.Rows.made
	case r.Branches != nil:
		return len(r.Branches) == 0
	case r.childSelf != nil:
		return len(r.childSelf) == 0
	}
	return len(r.BySym) == 0
}

// writeFirstLines writes a table's first two lines, all perf report
// prints for a table without entries (TableEmpty).
func (r *Result) writeFirstLines(b *bytes.Buffer) {
	fmt.Fprintf(b, "# Unknown: %d of %d samples had no map\n#\n", r.Unknown, r.Samples)
}

// tableEnd follows each event's table, as perf's "\n\n" after
// hists__fprintf.
const tableEnd = "\n\n"

// eventGroup is a run of events shown as one table: a group leader and
// its members, or a single event.
type eventGroup struct{ first, n int }

// totals returns the group's members' totals in byEvent, and their sum.
func (g eventGroup) totals(byEvent []Counts) (totals []Counts, sum Counts) {
	totals = make([]Counts, g.n)
	for i := range totals {
		if ev := g.first + i; ev < len(byEvent) {
			totals[i] = byEvent[ev]
			sum.add(totals[i])
		}
	}
	return totals, sum
}

// skipsEmpty reports whether perf report leaves out the table of an
// event or group whose events' totals are totals, among events events:
// with several events, it skips one whose own hists have no samples
// (skip_empty, on by default, in evlist__tty_browse_hists), which for a
// group is its leader's, however many its members have.
func skipsEmpty(totals []Counts, events int) bool {
	return events > 1 && totals[0].Samples == 0
}

// writeGroupCounts writes a row's overhead and sample columns, one per
// member (cs, of totals), as perf's hpp__fmt lays out a group: the first
// value "%*.2f%%" in its width, each member's after one space; counts
// "%*u" each.
func writeGroupCounts(b *bytes.Buffer, cs, totals []Counts) {
	writeShares(b, cs, totals)
	b.WriteString("  ")
	var num [24]byte
	for _, c := range cs {
		writeRight(b, 12, strconv.AppendUint(num[:0], c.Samples, 10))
	}
}

// writeShares writes a group's percentages of a column (overhead, or
// children): the first "%*.2f%%" in its width, each member's after one
// space.
func writeShares(b *bytes.Buffer, cs, totals []Counts) {
	b.WriteString("  ")
	var num [32]byte
	for i := range cs {
		width := 7
		if i > 0 {
			b.WriteByte(' ')
			width = 6
		}
		writeRight(b, width, appendPercent(num[:0], share(cs[i], totals[i])))
		b.WriteByte('%')
	}
}

// writeRight writes s right-aligned in width bytes, as C's printf pads
// ("%*s"). Rows are written without fmt: it was a fifth of writing a
// large table.
func writeRight(b *bytes.Buffer, width int, s []byte) {
	writePad(b, width-len(s))
	b.Write(s)
}

// writePad writes n spaces (none for n <= 0).
func writePad(b *bytes.Buffer, n int) {
	for n > 0 {
		k := min(n, len(spaces))
		b.WriteString(spaces[:k])
		n -= k
	}
}

const spaces = "                                                                "

// writeLeft writes s left-aligned in width bytes ("%-*s").
func writeLeft(b *bytes.Buffer, width int, s string) {
	b.WriteString(s)
	writePad(b, width-len(s))
}

// eventGroups returns the tables perf report shows: the GROUP_DESC groups
// as process_group_desc applies them (each leader in event order, its
// members the events after it), every other event alone. Groups that do
// not fit the events are ignored, as perf ignores an invalid GROUP_DESC.
func (r *Result) eventGroups() []eventGroup {
	size := make([]int, len(r.Events))
	for i := range size {
		size[i] = 1
	}
	next := 0 // the first event a group may start at
	for _, g := range r.Groups {
		first, n := int(g.Leader), int(g.Members)
		if first < next || n < 1 || n > len(r.Events)-first {
			size = size[:0]
			break
		}
		size[first] = n
		for i := first + 1; i < first+n; i++ {
			size[i] = 0
		}
		next = first + n
	}
	var gs []eventGroup
	for i := range r.Events {
		n := 1
		if len(size) > 0 {
			n = size[i]
		}
		if n > 0 {
			gs = append(gs, eventGroup{i, n})
		}
	}
	return gs
}

// groupName is perf's evsel__group_desc: the group's name ("anon group"
// for {anon_group}) and its events' names in braces.
func (r *Result) groupName(g eventGroup) string {
	name := "anon group"
	for _, d := range r.Groups {
		if int(d.Leader) == g.first && d.Name != "{anon_group}" {
			name = d.Name
		}
	}
	return name + " { " + strings.Join(r.Events[g.first:g.first+g.n], ", ") + " }"
}

// JSONReport is the JSON form of a Result (WriteJSON).
type JSONReport struct {
	Samples uint64 `json:"samples"`
	Unknown uint64 `json:"unknown"`
	// Digest is Result.Digest: the SHA-256 of the canonical text.
	Digest string `json:"digest"`
	// KernelSymbols is Result.KernelSymbols: kcore or kallsyms, and why
	// kcore was not used.
	KernelSymbols string `json:"kernel_symbols,omitempty"`
	// LostSamples sums PERF_RECORD_LOST_SAMPLES; LostChunks counts
	// PERF_RECORD_LOST records, LostEvents the events they lost.
	LostSamples uint64 `json:"lost_samples"`
	LostChunks  uint64 `json:"lost_chunks"`
	LostEvents  uint64 `json:"lost_events"`
	// UnknownRecords is Result.UnknownRecords: records of types perf 6.1
	// does not know (it warns "Found N unknown events!").
	UnknownRecords uint64       `json:"unknown_records"`
	Symbols        []JSONSymbol `json:"symbols"`
	Maps           []JSONMap    `json:"maps"`
}

// JSONSymbol is one (dso, symbol) row, as in WriteTable. Addr is the
// symbol's start in its DSO, or the unresolved address of a "[unknown]"
// symbol.
type JSONSymbol struct {
	Event   string  `json:"event"`
	DSO     string  `json:"dso"`
	Sym     string  `json:"sym"`
	Addr    string  `json:"addr"`
	Kernel  bool    `json:"kernel"`
	Samples uint64  `json:"samples"`
	Period  uint64  `json:"period"`
	Percent float64 `json:"percent"`
}

// JSONMap is one map that samples fell in. Addresses and offsets are
// hexadecimal strings ("0xffffffff81000000"): kernel addresses do not fit
// the 53 bits that many JSON readers keep of a number.
type JSONMap struct {
	Start   string `json:"start"`
	End     string `json:"end"`
	Pgoff   string `json:"pgoff"`
	Kind    string `json:"kind"`
	DSO     string `json:"dso"`
	Samples uint64 `json:"samples"`
	// SampleSetSHA256 is the SHA-256 of the portable serialization
	// (roaring ToBytes) of the map's sample ordinals.
	SampleSetSHA256 string `json:"sample_set_sha256"`
}

// JSON returns the JSON form of r: symbols as WriteTable orders them, maps
// by address.
func (r *Result) JSON() (*JSONReport, error) {
	rep := &JSONReport{
		Samples:        r.Samples,
		Unknown:        r.Unknown,
		Digest:         r.Digest(),
		KernelSymbols:  r.KernelSymbols,
		LostSamples:    r.LostSamples,
		LostChunks:     r.LostChunks,
		LostEvents:     r.LostEvents,
		UnknownRecords: r.UnknownRecords,
		Symbols:        []JSONSymbol{},
		Maps:           []JSONMap{},
	}
	for _, k := range sortedKeys(r.BySym) {
		n := r.BySym[k]
		js := JSONSymbol{Event: r.Events[k.Event], DSO: k.DSO, Sym: k.Sym, Addr: hexAddr(k.Addr), Kernel: k.Kernel,
			Samples: n.Samples, Period: n.Period, Percent: share(n, r.ByEvent[k.Event])}
		rep.Symbols = append(rep.Symbols, js)
	}
	for _, mp := range r.sortedMaps() {
		bm := r.ByMap[mp]
		data, err := bm.ToBytes()
		if err != nil {
			return nil, fmt.Errorf("attrib: sample set of %s: %w", mp, err)
		}
		sum := sha256.Sum256(data)
		rep.Maps = append(rep.Maps, JSONMap{
			Start:           hexAddr(mp.Start),
			End:             hexAddr(mp.End),
			Pgoff:           hexAddr(mp.Pgoff),
			Kind:            mp.Kind.String(),
			DSO:             mp.DSO,
			Samples:         bm.GetCardinality(),
			SampleSetSHA256: hex.EncodeToString(sum[:]),
		})
	}
	return rep, nil
}

func hexAddr(v uint64) string { return "0x" + strconv.FormatUint(v, 16) }

// WriteJSON writes the JSON form of r (JSONReport), indented.
func (r *Result) WriteJSON(w io.Writer) error {
	rep, err := r.JSON()
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

func (r *Result) sortedMaps() []index.Map {
	maps := make([]index.Map, 0, len(r.ByMap))
	for mp := range r.ByMap {
		maps = append(maps, mp)
	}
	sortMaps(maps)
	return maps
}

// WritePprof writes the profile Pprof returns, gzipped (profile.proto
// of github.com/google/pprof/profile). It needs Options.Stacks.
func (r *Result) WritePprof(w io.Writer) error {
	p, err := r.Pprof()
	if err != nil {
		return err
	}
	return p.Write(w)
}
