package attrib

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kmapindex/kmapindex/ingest/machine"
	"github.com/kmapindex/kmapindex/ingest/rbtree"
	"github.com/kmapindex/kmapindex/ingest/symbols"
)

// Sort keys of perf report --sort that Options.SortKeys takes, with
// perf's names ("symbol" is also "sym").
const (
	SortComm = "comm" // the thread's command name at the sample
	SortPid  = "pid"  // the thread: "TID:COMM", COMM its name at the end
	SortDSO  = "dso"  // the map's DSO
	SortSym  = "sym"  // the symbol, or the address without one
	SortCPU  = "cpu"  // the CPU the sample was taken on
)

// ParseSortKeys parses perf report's --sort list: the keys above, comma
// separated, each at most once.
func ParseSortKeys(s string) ([]string, error) {
	var keys []string
	for _, k := range strings.Split(s, ",") {
		k = strings.TrimSpace(k)
		if k == "symbol" {
			k = SortSym
		}
		switch k {
		case SortComm, SortPid, SortDSO, SortSym, SortCPU:
		default:
			return nil, fmt.Errorf("unknown sort key %q (have comm, pid, dso, sym, cpu)", k)
		}
		if slices.Contains(keys, k) {
			return nil, fmt.Errorf("sort key %q given twice", k)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// RowKey is one row of a table sorted by Options.SortKeys: the values of
// its keys, the others zero. A symbol row also carries its DSO (perf
// tells symbols of different DSOs apart even without the dso key).
type RowKey struct {
	Comm   string
	Tid    int32
	CPU    int32 // -1 when the event does not sample it, as perf has it
	DSO    string
	Kernel bool // the DSO resolved in kernel mode: its level and short name
	Hyper  bool // no map, at perf's level "H" (as in Key)
	Sym    string
	Addr   uint64 // as in Key
	Event  int
	// comm is, while counting, the thread's command-name entry, which a
	// later COMM may rename (machine.CommEntry); result names the rows.
	comm *machine.CommEntry
	// entry is, with a histTree, the hist entry perf counts the row in
	// plus one: perf can make two of one key.
	entry int32
}

// rowCounter counts samples by RowKey.
type rowCounter struct {
	comm, pid, cpu, dso, sym bool
	rows                     *rowIndex // without trees of hist entries (hist)
	blocks                   [][]row   // the rows, in the order newRow made them
	nmade                    int       // rows and Children rows made so far (their seq)
	totals                   []Counts  // per event, filtered samples included
	// firstLevel, in perf's branch mode, tells rows apart without their
	// level and shows the first entry's: a target's row keeps the level of
	// the sample that first reached it (hist entries compare the symbol,
	// not the level).
	firstLevel bool
	// acc, in a children table, is the Children column: each sample's
	// period added once to every row of its self entry and callchain,
	// keyed as rows are (without a level when there is no map), with
	// the key of the first entry that reached it.
	acc      map[RowKey]*accRow
	accStamp uint32
	// hist is, for keys histTreeApplies to, perf's tree of hist entries
	// of each event, whose entries are the rows (nil otherwise).
	histKeys []string
	hist     map[int]*histTree
	counted  []int32 // the entries counted for the sample so far (cumulateTree)
	shorts   shortNames
	cache    *rowCache // nil where none applies
}

// dsoMode is a DSO and whether it was resolved in kernel mode, which
// its short name depends on.
type dsoMode struct {
	dso    string
	kernel bool
}

// shortNames memoizes ShortName; the zero value is ready.
type shortNames struct {
	names map[dsoMode]string
	last  dsoMode // the last asked for, and its name: names come in runs
	name  string
}

func (s *shortNames) of(dso string, kernel bool) string {
	k := dsoMode{dso, kernel}
	if k == s.last && s.names != nil {
		return s.name
	}
	if s.names == nil {
		s.names = make(map[dsoMode]string)
	}
	name, ok := s.names[k]
	if !ok {
		name = ShortName(dso, kernel)
		s.names[k] = name
	}
	s.last, s.name = k, name
	return name
}

// accRow is a Children count and the key it shows.
type accRow struct {
	key   RowKey
	c     Counts
	stamp uint32
	made
}

// made is what a row keeps of the hist entry that made it.
type made struct {
	filtered bool // the sample that made it was filtered: perf hides the row
	seq      int  // the order it was made in
	// thread is that of the sample that made it: perf's hist entry keeps
	// it, shows its command name at the end by the pid key and sizes the
	// comm column by it. A FORK that reuses a tid makes a new thread, so
	// rows of one tid can show two names.
	thread *machine.Thread
}

// row is a row's key, its counts and whether perf hides it: a row is
// perf's hist entry, which takes its filtered mark from the sample that
// made it and then counts every later sample of its keys, filtered or
// not. At the end, result makes it the row the table shows.
type row struct {
	// key is the row's, as its first sample made it; the table shows it
	// with its command name at the end and the level shown (shown).
	key   RowKey
	c     Counts     // Self (Overhead)
	acc   Counts     // in a children table: the Children column
	obj   objectName // an object symbol's row: the offset perf names it with (Result.objects)
	level rowLevel   // the level shown, the first entry's (rowCounter.firstLevel)
	made
	// What the table shows beyond the key (set by shown): the DSO
	// column's text and, with the comm key, the length of the thread's
	// command name at the end, from which perf sizes the comm column
	// (hists__calc_col_len, thread__comm_len); it prints the row's own
	// name cut to that size. -1 without the comm key.
	short   string
	commLen int
}

// newRowCounter counts rows by keys, with the Children column if
// children.
func newRowCounter(keys []string, children bool) *rowCounter {
	rc := &rowCounter{rows: newRowIndex(), blocks: [][]row{nil}}
	if children {
		rc.acc = make(map[RowKey]*accRow)
	}
	if histTreeApplies(keys, children) {
		rc.histKeys = keys
		rc.hist = make(map[int]*histTree)
	}
	for _, k := range keys {
		switch k {
		case SortComm:
			rc.comm = true
		case SortPid:
			rc.pid = true
		case SortCPU:
			rc.cpu = true
		case SortDSO:
			rc.dso = true
		case SortSym:
			rc.sym = true
		}
	}
	rc.cache = newRowCache(rc, children)
	return rc
}

// add counts a sample of event (key k: its DSO and symbol, which ends at
// symEnd) taken in thread t on cpu (-1: not sampled; tk, their
// threadKey), filtered or not, and returns its row and the row's key.
// hint, if set, finds the row in the rowCache; when it holds the
// sample's symbol, k's symbol may be left unnamed (nameKey names it if
// the row is not found by the hint). With perf's trees, self, if not
// nil, is the answer kept for the sample's slot of the sample cache
// (attributor.selfAnswers), which answers it when it stands and keeps
// its entry.
func (rc *rowCounter) add(k Key, symEnd uint64, t *machine.Thread, cpu int32, tk threadKey, owner int32, filtered bool, c Counts, hint rowHint, self *frameAnswer) (RowKey, *row) {
	for len(rc.totals) <= k.Event {
		rc.totals = append(rc.totals, Counts{})
	}
	rc.totals[k.Event].add(c)
	kernel, hyper := k.Kernel, k.Hyper
	if rc.firstLevel {
		k.Kernel, k.Hyper = false, false
	}
	if rc.hist != nil {
		// The row is the hist entry's, keyed as its first sample made it:
		// perf compares no level, so a later sample at another level
		// counts in it too. Found by the entry's number, not its key.
		h := rc.tree(k.Event)
		id, ok := int32(0), false
		of := answerOf{tk, int32(k.Event)}
		if self != nil && self.of == of {
			id, ok = rc.cache.frameAnswer(h, self)
		}
		var ck rowCacheKey
		cacheable := false
		if !ok {
			ck, cacheable = rc.cache.key(hint, tk, k.Event)
			if cacheable {
				if id, ok = rc.cache.treeAnswer(h, ck); ok {
					rc.cache.keep(self, ck, id, rc.cache.seenNow(h))
				}
			}
		}
		if ok {
			if rowCacheChecks.on {
				nameKey(&k, &symEnd, hint)
				rowCacheChecks.check(h, id, rc.histEntry(k, kernel, symEnd, false, t, cpu))
			}
			// What find does to the entry it finds (foundFrom), for
			// one of no inlined function.
			h.entries[id].owner = ownerOf(kernel, owner)
		} else {
			nameKey(&k, &symEnd, hint)
			e := rc.histEntry(k, kernel, symEnd, false, t, cpu)
			e.owner = ownerOf(kernel, owner)
			id = rc.findRow(h, e, k, rowLevel{kernel, hyper}, t, cpu, filtered, ck, cacheable)
			if cacheable {
				rc.cache.keep(self, ck, id, rc.cache.strictSeen(h))
			}
		}
		r := h.rows[id]
		r.c.add(c)
		if rc.acc != nil {
			r.acc.add(c)
			rc.counted = append(rc.counted[:0], id) // cumulateTree's first
		}
		return r.key, r
	}
	ck, cacheable := rc.cache.key(hint, tk, k.Event)
	if cacheable {
		if v, ok := rc.cache.get(ck); ok {
			v.r.c.add(c)
			return v.r.key, v.r
		}
	}
	nameKey(&k, &symEnd, hint)
	rk := rc.key(k, t, cpu)
	r, h := rc.rows.get(&rk)
	if r == nil {
		r = rc.newRow(rk, rowLevel{kernel, hyper}, filtered, t)
		rc.rows.add(r, h)
	}
	r.c.add(c)
	if cacheable {
		rc.cache.put(ck, rowCacheVal{r: r})
	}
	return rk, r
}

// histEntry returns what perf's sort keys compare of a sample or a
// callchain entry (see histTree): k (resolved in kernel mode or not),
// ending at symEnd, taken in thread t on cpu.
func (rc *rowCounter) histEntry(k Key, kernel bool, symEnd uint64, inlined bool, t *machine.Thread, cpu int32) histEntry {
	short := ""
	if k.DSO != symbols.Unknown {
		short = rc.shorts.of(k.DSO, kernel)
	}
	e := keyEntry(k, short, symEnd, inlined)
	e.tid, e.cpu = int32(t.Tid), cpu
	if rc.comm {
		e.comm = t.CommEntry()
	}
	return e
}

// tree returns event's tree of hist entries, made on first use.
func (rc *rowCounter) tree(event int) *histTree {
	h := rc.hist[event]
	if h == nil {
		h = newHistTree(rc.histKeys)
		if rc.cache != nil { // see rowCache
			h.byComm, h.spans = make(map[*machine.CommEntry][]int32), make(map[spanGroup]*addrSpans)
			h.tree.Rotated = h.rotated
		}
		rc.hist[event] = h
	}
	return h
}

// findRow searches h for e, an entry of key k at level lv in thread t on
// cpu (filtered or not), makes its row if the search made the entry, and
// returns the entry, cached for ck if cacheable.
func (rc *rowCounter) findRow(h *histTree, e histEntry, k Key, lv rowLevel, t *machine.Thread, cpu int32, filtered bool, ck rowCacheKey, cacheable bool) int32 {
	n := len(h.rows)
	id := rc.histRow(h, h.find(e), k, lv, t, cpu, filtered)
	if int(id) == n && rc.sym {
		rc.cache.made(h, id)
	}
	if cacheable {
		rc.cache.put(ck, rowCacheVal{id: id, seen: rc.cache.strictSeen(h)})
	}
	return id
}

// histRow makes the row of entry id of h if the search that returned it
// made the entry: keyed as k (at level kernel) in thread t on cpu made
// it, marked filtered or not; it returns id.
func (rc *rowCounter) histRow(h *histTree, id int32, k Key, lv rowLevel, t *machine.Thread, cpu int32, filtered bool) int32 {
	if int(id) == len(h.rows) {
		rk := rc.key(k, t, cpu)
		rk.entry = id + 1
		r := rc.newRow(rk, lv, filtered, t)
		if len(h.rows) == cap(h.rows) {
			h.rows = slices.Grow(h.rows, max(len(h.rows), 64)) // doubling (see accumulator.newEntry)
		}
		h.rows = append(h.rows, r)
	}
	return id
}

// cumulateTree is cumulate with a tree of hist entries for callchain
// entry f of sample s (perf's iter_add_next_cumulative_entry): unless an
// entry counted for the sample already compares equal to it, it is
// searched in the tree, made if not found, and counts the sample's
// period in Children.
func (rc *rowCounter) cumulateTree(s *treeSample, f *treeFrame) {
	h := s.h
	if f.inlined && rc.cache != nil {
		// An inlined function's entry found from other maps takes the
		// name of the function it is inlined into (foundFrom): entries
		// would change their names, so the cache goes off.
		rc.cache.treeOff = true
	}
	ck, cacheable := rc.cache.frameKey(f, s.tk)
	if cacheable {
		if id, ok := rc.cache.treeAnswer(h, ck); ok {
			if rowCacheChecks.on {
				rowCacheChecks.check(h, id, rc.histEntry(f.k, f.k.Kernel, f.end, f.inlined, s.t, s.cpu))
			}
			rc.cache.keepAnswer(s.answers, f, ck, cacheable, id, rc.cache.seenNow(h))
			rc.countFound(s, id, f.k.Kernel, f.obj)
			return
		}
	}
	e := rc.histEntry(f.k, f.k.Kernel, f.end, f.inlined, s.t, s.cpu)
	e.base, e.owner = f.base, ownerOf(f.k.Kernel, s.owner)
	if countedAlready(h, rc.counted, &e) {
		return
	}
	id := rc.findRow(h, e, f.k, rowLevel{f.k.Kernel, f.k.Hyper}, s.t, s.cpu, s.filtered, ck, cacheable)
	rc.cache.keepAnswer(s.answers, f, ck, cacheable, id, rc.cache.strictSeen(h))
	rc.count(s, id, f.obj)
}

// cumulateAnswered is cumulateTree for the frame at callchain slot at
// (level kernel, map and symbol hint) whose kept answer is for the
// sample's thread key and event: it counts the answer's entry and reports
// true if the answer stands (frameAnswer), else false, and the frame is
// named and counted as any other. No frame is made for it: making one
// was 8 % of the -a -g recording's children table by comm,dso,sym (a CPU
// profile).
func (rc *rowCounter) cumulateAnswered(s *treeSample, at int32, kernel bool, hint rowHint) bool {
	id, ok := rc.cache.frameAnswer(s.h, &s.answers[at])
	if !ok {
		return false
	}
	if rowCacheChecks.on {
		f := treeFrame{k: Key{Kernel: kernel, Addr: hint.addr, Event: int(s.answers[at].of.event)}, hint: hint, at: at}
		f.name()
		rowCacheChecks.check(s.h, id, rc.histEntry(f.k, f.k.Kernel, f.end, f.inlined, s.t, s.cpu))
	}
	rc.countFound(s, id, kernel, objectName{}) // an object symbol's frame keeps no answer
	return true
}

// countFound counts the sample in entry id, found for a callchain entry
// at level kernel (obj: its object hit), unless an entry counted for the
// sample already compares equal to it (countedAlready's check): where
// the comparison is no order (strict), the tree may hold others equal to
// it, which perf's check finds too.
func (rc *rowCounter) countFound(s *treeSample, id int32, kernel bool, obj objectName) {
	h := s.h
	if slices.Contains(rc.counted, id) || rc.cache.strict && countedAlready(h, rc.counted, &h.entries[id]) {
		return
	}
	h.entries[id].owner = ownerOf(kernel, s.owner) // as add's
	rc.count(s, id, obj)
}

// count counts the sample in entry id's Children column.
func (rc *rowCounter) count(s *treeSample, id int32, obj objectName) {
	r := s.h.rows[id]
	r.acc.add(s.c)
	r.obj.note(obj)
	rc.counted = append(rc.counted, id)
}

// treeSample is what cumulateTree's callchain entries of one sample
// share: the sample's tree, thread, cpu and user maps' owner
// (execs.owner), its thread key and the frame answers (rowCache, nil
// without one), whether it is filtered, and its period.
type treeSample struct {
	h          *histTree
	t          *machine.Thread
	cpu, owner int32
	tk         threadKey
	answers    []frameAnswer
	filtered   bool
	c          Counts
}

// treeFrame is a callchain entry for cumulateTree, at its key's level.
type treeFrame struct {
	k       Key
	end     uint64
	inlined bool
	base    string     // an inlined function's: the symbol it is inlined into
	obj     objectName // in an object symbol: the entry's (objectName)
	hint    rowHint    // its map's and symbol's (rowCache.frameKey)
	// at is the frame's callchain slot (attributor.chainAt), beside
	// which its entry's answer is kept (frameAnswer; -1: none).
	at int32
}

// name names the frame's entry (k, end), as the walk does for a frame
// not answered: its map's DSO and the symbol hint.i of its table, the
// one the walk looked it up in; in an object symbol, the entry is made at
// the frame's address (obj).
func (f *treeFrame) name() {
	f.k.DSO, f.k.Sym = symbols.Unknown, symbols.Unknown
	if f.hint.noMap {
		return
	}
	m := f.hint.st.key.m
	f.k.DSO = m.DSO
	if sym, ok := f.hint.symbol(); ok {
		f.k.Sym, f.k.Addr, f.end = sym.Name, sym.Start, sym.End
		if f.hint.st.table.IsObject(int(f.hint.i)) {
			f.obj = objectHit(m, sym.Start, f.hint.addr)
		}
	}
}

// symbol returns the symbol the hint holds, if any: symbol i of its map's
// table, the one the sample or frame was looked up in.
func (h *rowHint) symbol() (symbols.Symbol, bool) {
	if h.st == nil || h.i < 0 {
		return symbols.Symbol{}, false
	}
	return h.st.table.Symbol(int(h.i)), true
}

// threadKey returns the threadKey of a sample of thread t on cpu: its
// comm named by the row cache's names (none without a cache, whose
// tables are then children tables by pid, dso and cpu alone).
func (rc *rowCounter) threadKey(t *machine.Thread, cpu int32) threadKey {
	comm, tid, cpu := rc.threadKeys(t, cpu)
	tk := threadKey{tid: tid, cpu: cpu}
	if comm != nil && rc.cache != nil {
		tk.comm = rc.cache.nameOf(comm)
	}
	return tk
}

// threadKeys returns what the keys take of a sample's thread t and its
// cpu: its command-name entry (comm), its tid (pid) and the CPU (cpu),
// zero for the keys not sorted by.
func (rc *rowCounter) threadKeys(t *machine.Thread, cpu int32) (comm *machine.CommEntry, tid, c int32) {
	if rc.comm {
		comm = t.CommEntry()
	}
	if rc.pid {
		tid = int32(t.Tid)
	}
	if rc.cpu {
		c = cpu
	}
	return comm, tid, c
}

// rowLevel is the level a row shows: kernel, hyper ("H") or neither
// (user).
type rowLevel struct{ kernel, hyper bool }

// key is the row of an entry (DSO and symbol k) of a sample taken in
// thread t on cpu. In a children table an entry without a map has no
// level: perf tells rows apart by their keys alone.
func (rc *rowCounter) key(k Key, t *machine.Thread, cpu int32) RowKey {
	rk := RowKey{Event: k.Event}
	rk.comm, rk.Tid, rk.CPU = rc.threadKeys(t, cpu)
	if rc.dso || rc.sym {
		rk.DSO, rk.Kernel, rk.Hyper = k.DSO, k.Kernel, k.Hyper
		if rc.dso && k.DSO != symbols.Unknown {
			// perf's dso key compares short names: libraries of one
			// file name are one row (sameShortNames).
			rk.DSO = rc.shorts.of(k.DSO, k.Kernel)
		}
	}
	if rc.sym {
		rk.Sym, rk.Addr = k.Sym, k.Addr
		if !rc.dso && k.Sym == symbols.Unknown {
			// sort__sym_cmp tells two entries without a symbol apart by
			// their addresses alone, whatever their DSOs and levels; the
			// row shows the first one's level (row.level).
			rk.DSO, rk.Kernel, rk.Hyper = "", false, false
		}
	}
	if rk.DSO == symbols.Unknown {
		// Rows without a map are one whatever their level: sort__dso_cmp
		// finds two maps that are both NULL equal, and sort__sym_cmp two
		// entries without a symbol equal by address; a row with symbols
		// shows the first one's level (row.level), a table without
		// symbols none.
		rk.Kernel, rk.Hyper = false, false
	}
	return rk
}

// newRow returns a new row keyed k at level lv made now by a sample in
// thread t, filtered or not. Rows are allocated in blocks (rc.blocks): a
// gcc build's table by pid,dso,sym makes 370 k of them.
func (rc *rowCounter) newRow(k RowKey, lv rowLevel, filtered bool, t *machine.Thread) *row {
	b := &rc.blocks[len(rc.blocks)-1]
	if len(*b) == cap(*b) {
		rc.blocks = append(rc.blocks, make([]row, 0, 256))
		b = &rc.blocks[len(rc.blocks)-1]
	}
	*b = append(*b, row{key: k, level: lv, made: rc.newMade(filtered, t)})
	return &(*b)[len(*b)-1]
}

// newMade records a row made now by a sample in thread t, filtered or
// not.
func (rc *rowCounter) newMade(filtered bool, t *machine.Thread) made {
	rc.nmade++
	return made{filtered: filtered, seq: rc.nmade, thread: t}
}

// accumulate adds c to the Children column of the row of key k once a
// sample (accStamp), making the row if need be: lv is the level it
// shows, and filtered marks it hidden, as perf marks the hist entries a
// filtered sample makes, its callchain's included. It returns the row.
func (rc *rowCounter) accumulate(k RowKey, lv rowLevel, t *machine.Thread, filtered bool, c Counts) *accRow {
	r := rc.acc[k]
	if r == nil {
		shown := k
		shown.Kernel, shown.Hyper = lv.kernel, lv.hyper
		r = &accRow{key: shown, made: rc.newMade(filtered, t)}
		rc.acc[k] = r
	}
	r.once(rc.accStamp, c)
	return r
}

// once adds c to r's count if the sample stamp has not yet.
func (r *accRow) once(stamp uint32, c Counts) {
	if r.stamp != stamp {
		r.stamp = stamp
		r.c.add(c)
	}
}

// Rows is a table sorted by perf report --sort keys (Options.SortKeys or
// a Filter): its rows and the totals per event, filtered samples
// included. A row perf hides (its first sample was filtered) is not in
// the table, though samples that pass the filter may have counted in it,
// as in perf.
type Rows struct {
	Keys   []string
	Totals []Counts
	// Elided are the keys whose column perf leaves out because the filter
	// lists one value for them (sort__setup_elide), with that value.
	Elided map[string]string
	// elided marks the Keys in Elided (nil: none): perf's output sort
	// skips an elided column too (hist_entry__sort skips a format
	// perf_hpp__should_skip, set by sort__setup_elide), so that rows of
	// equal overhead are ordered by the other keys (compareKeys, which a
	// sort calls per comparison: a slice by key index, not a map lookup).
	elided []bool
	// children tells a table with the Children column (Options.Children).
	children bool
	// list is the rows shown, in no order: write orders them.
	list []*row
	// ranks are, per event with a histTree, its entries' positions in
	// perf's in-order walk (histTree.walkRanks).
	ranks map[int][]int32
	// lineOf is, with histTrees and event groups, the leader entry (plus
	// one) whose line shows each member's row (linkGroup); nil otherwise,
	// when a group's rows are matched by key.
	lineOf map[*row]int32
	// hiddenRows are the hidden rows of the events of groups: the lines
	// of their leaders' entries show them (groupLines).
	hiddenRows []*row
	// timeSlices is the time filter as given (Filter.TimeText), which
	// the header repeats.
	timeSlices string
	// made tells that rows were made, shown or hidden (TableEmpty).
	made bool
}

// result is the table the counter counted, by keys, with the columns
// filter f elides. The counter is spent: the table holds what it shows.
func (rc *rowCounter) result(keys []string, f *Filter, groups []eventGroup) *Rows {
	r := &Rows{Keys: keys, Totals: rc.totals, children: rc.acc != nil, Elided: map[string]string{}, made: rc.nmade > 0}
	// The hidden rows of a group's events are kept too: perf shows a
	// member's entry, hidden or not, on its leader entry's line, which
	// is hidden when that entry is (groupLines).
	inGroup := map[int]bool{}
	for _, g := range groups {
		if g.n < 2 {
			continue // a lone event is no group
		}
		for ev := g.first; ev < g.first+g.n; ev++ {
			inGroup[ev] = true
		}
	}
	switch {
	case rc.hist != nil:
		// The rows are the entries of perf's trees; an entry holds both
		// columns of a children table.
		r.list, r.hiddenRows, r.ranks, r.lineOf = rc.histRows(groups, inGroup)
	case rc.acc == nil:
		r.list = make([]*row, 0, rc.rows.len())
		for _, b := range rc.blocks {
			for i := range b {
				rw := &b[i]
				switch {
				case !rw.filtered:
					rc.shown(rw)
					r.list = append(r.list, rw)
				case inGroup[rw.key.Event]:
					rc.shown(rw)
					r.hiddenRows = append(r.hiddenRows, rw)
				}
			}
		}
	default:
		// The rows are the Children column's, with the level it shows,
		// hidden as its entries are: perf's hist entry holds both columns
		// and takes its mark from the sample that made it, whichever.
		rows := make([]row, 0, len(rc.acc))
		for k, a := range rc.acc {
			if a.filtered && !inGroup[a.key.Event] {
				continue
			}
			s := row{key: a.key, acc: a.c, made: a.made, short: rc.dsoText(a.key), commLen: -1}
			if self, _ := rc.rows.get(&k); self != nil {
				s.c = self.c
			}
			rows = append(rows, s)
		}
		r.list = make([]*row, 0, len(rows))
		for i := range rows {
			if rows[i].filtered {
				r.hiddenRows = append(r.hiddenRows, &rows[i])
			} else {
				r.list = append(r.list, &rows[i])
			}
		}
	}
	rc.rows, rc.acc, rc.hist, rc.blocks = nil, nil, nil, nil
	if f != nil {
		r.timeSlices = f.TimeText
		one := func(key string, list []string) {
			if len(list) == 1 && slices.Contains(keys, key) {
				r.Elided[key] = list[0]
			}
		}
		one(SortSym, f.Syms)
		one(SortDSO, f.DSOs)
		one(SortComm, f.Comms)
		if len(r.Elided) == len(keys) { // perf shows them all rather than none
			r.Elided = map[string]string{}
		}
		for i, k := range keys {
			if _, ok := r.Elided[k]; ok {
				if r.elided == nil {
					r.elided = make([]bool, len(keys))
				}
				r.elided[i] = true
			}
		}
	}
	return r
}

// shown makes r the row the table shows: its key with its command name
// at the end and the level of the entry perf keeps (r's, as a row
// without a map or of perf's branch mode is keyed without one), its
// DSO's short name, the length of its thread's name with the comm key,
// and an object symbol's offset with the sym key.
func (rc *rowCounter) shown(r *row) {
	k := &r.key
	if k.comm != nil {
		k.Comm, k.comm = k.comm.Name, nil
	}
	if rc.firstLevel || k.DSO == "" && rc.sym || k.DSO == symbols.Unknown && (rc.acc != nil || rc.sym) {
		k.Kernel, k.Hyper = r.level.kernel, r.level.hyper
	}
	r.short, r.commLen = rc.dsoText(*k), -1
	if !rc.sym {
		r.obj = objectName{}
	}
	if rc.comm {
		r.commLen = len(r.thread.Comm)
	}
}

// dsoText is the DSO column's text of a row keyed k.
func (rc *rowCounter) dsoText(k RowKey) string {
	if k.DSO == "" {
		return symbols.Unknown
	}
	return rc.shorts.of(k.DSO, k.Kernel)
}

// histRows is result's rows for trees of hist entries (rc.hist): an
// entry perf collapses into another (histTree.collapseTree: rows that end
// with one command name, a thread's first name renamed by its first COMM)
// counts in that one's row, which shows the kept entry's key, with its
// command name at the end. It returns the ranks of the entries kept too,
// per event, and for the members' rows of each group of groups the
// leader entry whose line shows them (linkGroup). The hidden rows kept
// of the events inGroup are returned apart.
func (rc *rowCounter) histRows(groups []eventGroup, inGroup map[int]bool) (list, hidden []*row, ranks map[int][]int32, lineOf map[*row]int32) {
	n := 0
	for _, h := range rc.hist {
		n += len(h.rows)
	}
	list = make([]*row, 0, n)
	trees := make(map[int]*rbtree.Tree, len(rc.hist))
	keeps := make(map[int][]int32, len(rc.hist))
	for ev, h := range rc.hist {
		keep, t := h.collapseTree()
		trees[ev], keeps[ev] = t, keep
		for id, hr := range h.rows {
			if int(keep[id]) != id || hr.filtered && !inGroup[ev] {
				continue
			}
			rc.shown(hr)
			if he := &h.entries[id]; he.based {
				hr.key.Sym = he.name // the symbol it is inlined into (foundFrom)
			}
			if hr.filtered {
				hidden = append(hidden, hr)
			} else {
				list = append(list, hr)
			}
		}
		for id, hr := range h.rows {
			if k := keep[id]; int(k) != id {
				s := h.rows[k] // shown or hidden
				s.c.add(hr.c)
				s.acc.add(hr.acc)
			}
		}
	}
	for _, g := range groups {
		if g.n > 1 {
			if lineOf == nil {
				lineOf = make(map[*row]int32)
			}
			rc.linkGroup(g, trees, keeps, lineOf)
		}
	}
	ranks = make(map[int][]int32, len(rc.hist))
	for ev, h := range rc.hist {
		ranks[ev] = h.walkRanks(trees[ev])
	}
	return list, hidden, ranks, lineOf
}

// order returns the rows in the order perf report shows them: by
// Children, then by period, descending (setup_overhead), then as
// compareKeys orders them.
func (r *Rows) order() []*row {
	return sortedParallel(slices.Clone(r.list), func(a, b *row) int {
		if c := cmp.Compare(b.acc.Period, a.acc.Period); c != 0 {
			return c
		}
		if c := cmp.Compare(b.c.Period, a.c.Period); c != 0 {
			return c
		}
		return r.compareKeys(a, b, []Counts{a.c}, []Counts{b.c})
	}, func(s *row) *row { return s })
}

// compareKeys orders two rows of equal overhead: by each sort key in
// turn but the elided ones (command names, tids, CPUs ascending; DSOs
// by short name and symbols by name, ascending, unresolved last), then
// by samples, descending: ca and cb, a row's own count or a group's
// line's, its leader's then each member's (-n's column is a sort key
// after them, perf_hpp__append_sort_keys, and compares a group's as
// the overhead does, __hpp__sort); then by address as a signed number;
// rows perf would not tell apart by then differ in a field the keys do
// not show, and the order they were made in decides.
func (r *Rows) compareKeys(x, y *row, ca, cb []Counts) int {
	a, b := &x.key, &y.key
	for i, k := range r.Keys {
		if r.elided != nil && r.elided[i] {
			continue
		}
		var c int
		switch k {
		case SortComm:
			c = strings.Compare(a.Comm, b.Comm)
		case SortPid:
			c = cmp.Compare(a.Tid, b.Tid)
		case SortCPU:
			c = cmp.Compare(a.CPU, b.CPU)
		case SortDSO:
			if c = unknownLast(a.DSO, b.DSO); c == 0 {
				c = strings.Compare(x.short, y.short)
			}
		case SortSym:
			if c = unknownLast(a.Sym, b.Sym); c == 0 {
				c = strings.Compare(bareSym(a.Sym), bareSym(b.Sym)) // sort__sym_sort
			}
		}
		if c != 0 {
			return c
		}
	}
	for i := range ca {
		if c := cmp.Compare(cb[i].Samples, ca[i].Samples); c != 0 {
			return c
		}
	}
	if a.entry != 0 && b.entry != 0 {
		// perf's output sort keeps its entries' order (histTree.walkRanks),
		// each event's tree its own.
		if a.Event != b.Event {
			return cmp.Compare(a.Event, b.Event)
		}
		rk := r.ranks[a.Event]
		return cmp.Compare(rk[a.entry-1], rk[b.entry-1])
	}
	if c := cmp.Compare(int64(a.Addr), int64(b.Addr)); c != 0 {
		return c
	}
	if c := strings.Compare(a.DSO, b.DSO); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Tid, b.Tid); c != 0 {
		return c
	}
	return cmp.Compare(x.seq, y.seq)
}

// tableLine is a line of a table: its row and, in a group's table, the
// counts of each member (nil: the row's own).
type tableLine struct {
	*row
	cs, accs []Counts
	entry    int32 // with linkGroup's pairs, the leader's entry plus one
}

// groupLines merges the rows of a group's events (first and the n-1
// after it, n > 1), as perf's group view shows them: one line per key, a count
// per member, ordered by the leader's period, then each member's
// (__hpp__sort), then by the keys. A line shows the row of the leader's
// entry, else a member's (perf's dummy leader entry copies it): the
// least event's, then the first entry's.
func (r *Rows) groupLines(first, n int) []tableLine {
	byKey := make(map[RowKey]int)
	var lines []tableLine
	for _, s := range slices.Concat(r.list, r.hiddenRows) {
		if s.key.Event < first || s.key.Event >= first+n {
			continue
		}
		k := s.key
		k.Event = first
		switch {
		case r.lineOf == nil:
			k.entry = 0 // the members' entries are matched by key
		case s.key.Event == first:
			// A leader entry is a line, whatever the keys of the member
			// entries paired with it: their levels and DSOs may differ
			// where perf's comparison does not look.
			k = RowKey{Event: first, entry: s.key.entry}
		default:
			if e, ok := r.lineOf[s]; ok {
				k = RowKey{Event: first, entry: e} // perf's pair (linkGroup)
			} else {
				k.entry = 0
			}
		}
		j, ok := byKey[k]
		if !ok {
			j = len(lines)
			byKey[k] = j
			lines = append(lines, tableLine{cs: make([]Counts, n), entry: k.entry})
			if r.children {
				lines[j].accs = make([]Counts, n)
			}
		}
		l := &lines[j]
		if rep := l.row; rep == nil || s.key.Event < rep.key.Event || s.key.Event == rep.key.Event && s.key.entry < rep.key.entry {
			l.row = s
		}
		l.cs[s.key.Event-first].add(s.c)
		if l.accs != nil {
			l.accs[s.key.Event-first].add(s.acc)
		}
	}
	// perf hides the line of a hidden leader entry, or of a dummy made
	// from a hidden member entry (hist_entry__new copies its mark): the
	// line's row.
	lines = slices.DeleteFunc(lines, func(l tableLine) bool { return l.row.filtered })
	for i := range lines {
		// Each line shows its merged key.
		s := *lines[i].row
		s.key.Event, s.key.entry = first, lines[i].entry
		lines[i].row = &s
	}
	slices.SortFunc(lines, func(a, b tableLine) int {
		if a.accs != nil {
			// The Children sort (__hpp__sort_acc) looks at the group
			// leader's alone.
			if c := cmp.Compare(b.accs[0].Period, a.accs[0].Period); c != 0 {
				return c
			}
		}
		for i := range a.cs {
			if c := cmp.Compare(b.cs[i].Period, a.cs[i].Period); c != 0 {
				return c
			}
		}
		return r.compareKeys(a.row, b.row, a.cs, b.cs)
	})
	return lines
}

// column is one key's column: its header and each row's text, which
// text writes to b.
type column struct {
	key, header string
	text        func(b *bytes.Buffer, s *row)
}

// columns returns the columns of the keys not elided. Their texts are
// written without fmt, as the flat table's are (writeRight).
func (r *Rows) columns() []column {
	var cols []column
	for _, k := range r.Keys {
		if _, ok := r.Elided[k]; ok {
			continue
		}
		switch k {
		case SortComm:
			cols = append(cols, column{k, "Command", func(b *bytes.Buffer, s *row) { b.WriteString(s.key.Comm) }})
		case SortPid:
			cols = append(cols, column{k, "    Pid:Command", func(b *bytes.Buffer, s *row) {
				var num [24]byte // "%7d:%s"
				writeRight(b, 7, strconv.AppendInt(num[:0], int64(s.key.Tid), 10))
				b.WriteByte(':')
				b.WriteString(s.thread.Comm)
			}})
		case SortCPU:
			cols = append(cols, column{k, "CPU", func(b *bytes.Buffer, s *row) {
				cpu := int64(s.key.CPU) // C's %3.3d
				if cpu < 0 {
					b.WriteByte('-')
					cpu = -cpu
				}
				var num [24]byte
				d := strconv.AppendInt(num[:0], cpu, 10)
				b.WriteString("000"[min(len(d), 3):])
				b.Write(d)
			}})
		case SortDSO:
			cols = append(cols, column{k, "Shared Object", func(b *bytes.Buffer, s *row) { b.WriteString(s.short) }})
		case SortSym:
			cols = append(cols, column{k, "Symbol", func(b *bytes.Buffer, s *row) {
				k := Key{Sym: s.key.Sym, Addr: s.key.Addr, Kernel: s.key.Kernel, Hyper: s.key.Hyper}
				b.WriteString(level(k))
				b.WriteByte(' ')
				var num [24]byte
				if k.Sym != symbols.Unknown {
					b.WriteString(k.Sym)
				} else {
					b.Write(k.appendSymbolName(num[:0]))
				}
				if s.obj.set {
					b.WriteString("+0x")
					b.Write(strconv.AppendUint(num[:0], s.obj.off(), 16))
				}
			}})
		}
	}
	return cols
}

// write writes the table as perf report --stdio -n --sort KEYS lays it
// out: per event, the header, then a row per key tuple with the
// overhead, the sample count and each shown key's column.
func (r *Rows) write(w io.Writer, res *Result) error {
	var b bytes.Buffer
	var elided []string
	for _, k := range []string{SortSym, SortDSO, SortComm} {
		if v, ok := r.Elided[k]; ok {
			elided = append(elided, fmt.Sprintf("# %s: %s\n", map[string]string{SortSym: "symbol", SortDSO: "dso", SortComm: "comm"}[k], v))
		}
	}
	res.writeTablePreamble(&b, elided...)
	ordered := r.order()
	cols := r.columns()
	for _, g := range res.eventGroups() {
		totals, sum := g.totals(r.Totals)
		if skipsEmpty(totals, len(res.Events)) {
			continue
		}
		// The lines: a group's (groupLines) or, for one event, its rows.
		var rows []*row
		var group []tableLine
		n := 0
		if g.n == 1 {
			rows = ordered
			if len(res.Events) > 1 {
				rows = nil
				for _, s := range ordered {
					if s.key.Event == g.first {
						rows = append(rows, s)
					}
				}
			}
			n = len(rows)
		} else {
			group = r.groupLines(g.first, g.n)
			n = len(group)
		}
		line := func(i int) tableLine {
			if group != nil {
				return group[i]
			}
			return tableLine{row: rows[i]}
		}
		widths := make([]int, len(cols))
		hasSym := slices.Contains(r.Keys, SortSym)
		var text bytes.Buffer
		for i, c := range cols {
			widths[i] = len(c.header)
			for j := range n {
				l := line(j)
				switch {
				case c.key == SortComm && l.commLen >= 0:
					widths[i] = max(widths[i], l.commLen)
				case c.key == SortSym:
					widths[i] = max(widths[i], symbolWidth(l.key.Sym))
				case c.key == SortCPU: // hists__calc_col_len: 3, whatever it prints
				default:
					text.Reset()
					c.text(&text, l.row)
					widths[i] = max(widths[i], text.Len())
				}
				if c.key == SortDSO && hasSym && l.key.Sym == symbols.Unknown {
					widths[i] = max(widths[i], unresolvedDSOWidth)
				}
			}
		}
		writeSamplesHeader(&b, res, g, sum, r.timeSlices)
		if r.children {
			fmt.Fprintf(&b, "# %*s  %*s  %*s", 8*g.n, "Children", 8*g.n, "Self", 12*g.n, "Samples")
		} else {
			fmt.Fprintf(&b, "# %*s  %*s", 8*g.n, "Overhead", 12*g.n, "Samples")
		}
		for i, c := range cols {
			fmt.Fprintf(&b, "  %-*s", widths[i], c.header)
		}
		b.WriteString("\n# ")
		if r.children {
			b.WriteString(strings.Repeat(".", 8*g.n) + "  ")
		}
		fmt.Fprintf(&b, "%s  %s", strings.Repeat(".", 8*g.n), strings.Repeat(".", 12*g.n))
		for i := range cols {
			fmt.Fprintf(&b, "  %s", strings.Repeat(".", widths[i]))
		}
		b.WriteString("\n#\n")
		if _, err := w.Write(b.Bytes()); err != nil {
			return err
		}
		b.Reset()
		err := writeLines(w, n, func(b *bytes.Buffer, i int) {
			l := line(i)
			var own [2]Counts // a row's own counts
			cs, accs := l.cs, l.accs
			if cs == nil {
				own[0], own[1] = l.c, l.acc
				cs, accs = own[:1], own[1:]
			}
			if r.children {
				writeShares(b, accs, totals)
			}
			writeGroupCounts(b, cs, totals)
			for i, c := range cols {
				b.WriteString("  ")
				start := b.Len()
				c.text(b, l.row)
				if c.key == SortSym || c.key == SortCPU {
					// perf's widths are the symbol's name's and 3: an
					// inlined function's " (inlined)", an object's
					// offset and a CPU of 4 digits or -1's "-001" go
					// past them (hist_entry__snprintf_alignment pads,
					// never cuts).
					writePad(b, widths[i]-(b.Len()-start)) // in bytes, as snprintf counts
					continue
				}
				cutPad(b, start, widths[i])
			}
			// perf ends a row at its last character, the header at its
			// last column's width.
			b.Truncate(len(bytes.TrimRight(b.Bytes(), " ")))
			b.WriteString("\n")
		})
		if err != nil {
			return err
		}
		b.WriteString(tableEnd)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// nameKey names k's symbol (and its end) from hint, when k has none
// and the hint holds it: a sample the rowCache answers needs no name,
// and naming every sample was 5 % of the -a recording's table by
// comm,dso,sym (a CPU profile).
func nameKey(k *Key, symEnd *uint64, hint rowHint) {
	if k.Sym != symbols.Unknown {
		return
	}
	if sym, ok := hint.symbol(); ok {
		k.Sym, k.Addr, *symEnd = sym.Name, sym.Start, sym.End
	}
}

// cumulateRows is cumulate for a table by sort keys: the sample (thread
// t, threadKey tk, its own row self at level kernel) and every distinct
// row of its callchain, in caller order, get its period in the Children
// column.
func (a *attributor) cumulateRows(e *event, t *machine.Thread, tk threadKey, self RowKey, kernel, hyper, filtered bool, c Counts) {
	rc := a.rows
	event := int(e.attr)
	// Each entry is counted as the walk comes to it: a chain the walk
	// finds void (walkCallerOrder) is one chainVoid found so, and is not
	// walked.
	var ts *treeSample
	if rc.hist != nil {
		ts = &treeSample{h: rc.tree(event), t: t, cpu: int32(e.cpu()), owner: a.execs.owner(e.pid), filtered: filtered, c: c}
	}
	// Without, a frame's row is kept beside its callchain slot
	// (accAnswer) for the thread key and event: a row's key never
	// changes, and it holds no symbol (histTreeApplies).
	var rows []accAnswer
	var of answerOf
	if ts == nil {
		rc.accStamp++
		rc.accumulate(self, rowLevel{kernel, hyper}, t, filtered, c)
		if !rc.comm && !rc.sym && !rowCacheOff {
			of, rows = answerOf{tk, int32(event)}, besideChain(a, &a.accAnswers)
		}
	}
	add := func(f *treeFrame) {
		if ts != nil {
			rc.cumulateTree(ts, f)
			return
		}
		r := rc.accumulate(rc.key(f.k, t, int32(e.cpu())), rowLevel{f.k.Kernel, f.k.Hyper}, t, filtered, c)
		if f.at >= 0 {
			rows[f.at] = accAnswer{of: of, r: r}
		}
	}
	// With perf's trees and the row cache, a frame's entry found before
	// is kept beside its callchain slot (frameAnswers): a frame it
	// answers is not named unless the answer no longer stands.
	if ts != nil && rc.cache != nil {
		ts.tk = tk
		ts.answers = besideChain(a, &a.frameAnswers)
		of = answerOf{ts.tk, int32(event)}
	}
	// frameHint is the row hint of a frame at ip of cpumode in the map of
	// st (nil: none), at symbol i of its table (-1: none); a frame in a
	// map sets the level the frames after it take (fill_callchain_info).
	frameHint := func(ip uint64, cpumode uint8, st *mapState, i int) rowHint {
		if st == nil {
			return rowHint{i: -1, addr: ip, noMap: true}
		}
		kernel, hyper = cpumode == machine.CPUModeKernel, false
		return rowHint{st: st, i: int32(i), addr: ip}
	}
	inlined := func(k Key, end uint64, base string) {
		kernel, hyper = false, false
		add(&treeFrame{k: k, end: end, inlined: true, base: base, at: -1})
	}
	cur := a.cursor
	if cur.holds(e) {
		// The frames perf's cursor holds (chainCursor), each named.
		cur.replay(event, func(cf *cursorFrame) {
			hint := frameHint(cf.ip, cf.cpumode, cf.st, int(cf.i))
			f := treeFrame{k: Key{Kernel: kernel, Hyper: hyper, Addr: cf.ip, Event: event}, hint: hint, at: -1}
			f.name()
			add(&f)
		}, inlined)
		return
	}
	cur.reset()
	// No frame of a chain an unknown marker empties makes a row or
	// marks one; their lookups are made (see cumulate).
	if chainVoid(e) {
		a.voidChainLookups(e)
		return
	}
	vers := frameVersions{m: a.m, e: e}
	a.walkCallerOrderUnwound(e, func(ip uint64, cpumode uint8) {
		// The frame's map, and its symbol once the table is final, from
		// the callchain cache (chainFrame).
		slot := a.chainFrame(ip, cpumode, &vers)
		i := -1
		if st := slot.st; st != nil {
			mp := st.key.m
			tb := a.stateTable(st)
			i = int(slot.sym)
			if !slot.symSet {
				i = a.sym.findIn(mp, tb, mp.MapIP(ip))
				slot.sym, slot.symSet = int32(i), st.final
			}
		}
		hint := frameHint(ip, cpumode, slot.st, i)
		cur.noteFrame(ip, cpumode, slot.st, nil, i) // rows name frames by their hint: no table kept
		at := int32(-1)
		switch {
		case ts != nil && ts.answers != nil:
			at = int32(a.chainAt)
			if ts.answers[at].of == of && rc.cumulateAnswered(ts, at, kernel, hint) {
				return
			}
		case rows != nil && (slot.st == nil || slot.symSet): // named for good
			at = int32(a.chainAt)
			if ans := &rows[at]; ans.r != nil && ans.of == of {
				ans.r.once(rc.accStamp, c)
				return
			}
		}
		f := treeFrame{k: Key{Kernel: kernel, Hyper: hyper, Addr: ip, Event: event}, hint: hint, at: at}
		f.name()
		add(&f)
	}, func(k Key, end uint64, base string) {
		cur.noteInlined(k, end, base)
		inlined(k, end, base)
	})
}

// accAnswer is a callchain frame's row in a children table without
// trees, for the thread key and event it was found for (nil r: none):
// naming each frame and hashing its RowKey was two thirds of the -a -g
// recording's -children -sort pid,dso (a CPU profile).
type accAnswer struct {
	of answerOf
	r  *accRow
}

// besideChain returns *slots, one beside each slot of the callchain
// cache (frameAnswer, accAnswer), made if need be.
func besideChain[T any](a *attributor, slots *[]T) []T {
	if a.chainFrames == nil {
		a.makeChainFrames()
	}
	if *slots == nil {
		*slots = make([]T, len(a.chainFrames))
	}
	return *slots
}

// cutPad cuts what was written to b after start to width runes and
// pads it with spaces to width runes, as fmt's "%-*.*s" with width for
// both writes a string.
func cutPad(b *bytes.Buffer, start, width int) {
	s := b.Bytes()[start:]
	n, i := 0, 0
	for i < len(s) && n < width {
		if s[i] < utf8.RuneSelf {
			i++
		} else {
			_, size := utf8.DecodeRune(s[i:])
			i += size
		}
		n++
	}
	b.Truncate(start + i)
	writePad(b, width-n)
}
