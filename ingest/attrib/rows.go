package attrib

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/kmapindex/kmapindex/ingest/machine"
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
	rows                     map[RowKey]*row
	nmade                    int      // rows and Children rows made so far (their seq)
	totals                   []Counts // per event, filtered samples included
	// commThreads is, with the comm key, the thread of each row's first
	// sample: perf's hist entry keeps it, and sizes the column by its
	// command name at the end (see Rows.CommLen).
	commThreads map[RowKey]*machine.Thread
	// firstLevel, in perf's branch mode, tells rows apart without their
	// level and shows the first entry's: a target's row keeps the level of
	// the sample that first reached it (hist entries compare the symbol,
	// not the level).
	firstLevel bool
	// acc, in a children table, is the Children column: each sample's
	// period added once to every row of its self entry and callchain,
	// keyed as rows are (without a level when there is no map), with
	// the key of the first entry that reached it.
	acc       map[RowKey]*accRow
	accStamp  uint32
	accKeys   []RowKey // cumulateRows's, reused
	accLevels []rowLevel
	frames    []treeFrame // cumulateRows's with trees, reused
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
	filtered bool   // the sample that made it was filtered: perf hides the row
	comm     string // the command name it was made with (rowCounter.named)
	seq      int    // the order it was made in
	// thread, with the pid key, is the thread of the sample that made
	// it: perf's hist entry keeps it and shows its command name at the
	// end. A FORK that reuses a tid makes a new thread, so rows of one
	// tid can show two names.
	thread *machine.Thread
}

// row is a row's counts and whether perf hides it: a row is perf's hist
// entry, which takes its filtered mark from the sample that made it and
// then counts every later sample of its keys, filtered or not.
type row struct {
	c     Counts
	obj   objectName // an object symbol's row: what perf names it with
	acc   Counts     // with a tree of hist entries, in a children table: the Children column
	level rowLevel   // the level shown, the first entry's (rowCounter.firstLevel)
	made
}

// newRowCounter counts rows by keys, with the Children column if
// children.
func newRowCounter(keys []string, children bool) *rowCounter {
	rc := &rowCounter{rows: make(map[RowKey]*row), commThreads: make(map[RowKey]*machine.Thread)}
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
// symEnd) taken in thread t on cpu (-1: not sampled), filtered or not,
// and returns its row and the row's key; hint, if set, finds the row in
// the rowCache. A row the cache finds without a tree comes with the zero
// key: only children tables, which the cache does not serve, need it.
func (rc *rowCounter) add(k Key, symEnd uint64, t *machine.Thread, cpu, owner int32, filtered bool, c Counts, hint rowHint) (RowKey, *row) {
	for len(rc.totals) <= k.Event {
		rc.totals = append(rc.totals, Counts{})
	}
	rc.totals[k.Event].add(c)
	kernel, hyper := k.Kernel, k.Hyper
	if rc.firstLevel {
		k.Kernel, k.Hyper = false, false
	}
	ck, cacheable := rc.cache.key(rc, hint, t, cpu, k.Event)
	if rc.hist != nil {
		// The row is the hist entry's, keyed as its first sample made it:
		// perf compares no level, so a later sample at another level
		// counts in it too. Found by the entry's number, not its key.
		h := rc.tree(k.Event)
		id, ok := int32(0), false
		if cacheable {
			var v rowCacheVal
			if v, ok = rc.cache.get(ck); ok {
				// What find does to the entry it finds (foundFrom), for
				// one of no inlined function.
				id, h.entries[v.id].owner = v.id, ownerOf(kernel, owner)
			}
		}
		if !ok {
			e := rc.histEntry(k, kernel, symEnd, false, t, cpu)
			e.owner = ownerOf(kernel, owner)
			n := len(h.rows)
			id = rc.histRow(h, h.find(e), k, rowLevel{kernel, hyper}, t, cpu, filtered)
			if int(id) == n && rc.sym {
				rc.cache.made(h, id)
			}
			if cacheable {
				rc.cache.put(ck, rowCacheVal{id: id}, t)
			}
		}
		hr := h.rows[id]
		hr.r.c.add(c)
		if rc.acc != nil {
			hr.r.acc.add(c)
			rc.counted = append(rc.counted[:0], id) // cumulateTree's first
		}
		return hr.key, hr.r
	}
	if cacheable {
		if v, ok := rc.cache.get(ck); ok {
			v.r.c.add(c)
			return RowKey{}, v.r
		}
	}
	rk := rc.key(k, t, cpu)
	r := rc.rows[rk]
	if r == nil {
		r = &row{level: rowLevel{kernel, hyper}, made: rc.newMade(rk, filtered, t)}
		rc.rows[rk] = r
	}
	r.c.add(c)
	if cacheable {
		rc.cache.put(ck, rowCacheVal{r: r}, t)
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
		}
		rc.hist[event] = h
	}
	return h
}

// histRow makes the row of entry id of h if the search that returned it
// made the entry: keyed as k (at level kernel) in thread t on cpu made
// it, marked filtered or not; it returns id.
func (rc *rowCounter) histRow(h *histTree, id int32, k Key, lv rowLevel, t *machine.Thread, cpu int32, filtered bool) int32 {
	if int(id) == len(h.rows) {
		rk := rc.key(k, t, cpu)
		rk.entry = id + 1
		if rc.comm {
			rc.commThreads[rk] = t
		}
		r := &row{level: lv, made: rc.newMade(rk, filtered, t)}
		rc.rows[rk] = r
		if len(h.rows) == cap(h.rows) {
			h.rows = slices.Grow(h.rows, max(len(h.rows), 64)) // doubling (see accumulator.newEntry)
		}
		h.rows = append(h.rows, histRow{rk, r})
	}
	return id
}

// cumulateTree is cumulate with a tree of hist entries (perf's
// iter_add_next_cumulative_entry): each callchain entry of the sample in
// thread t on cpu (keys, with their symbols' ends, inlined or not, and
// levels) that no entry counted for the sample already compares equal to
// is searched in the tree, made if not found, and counts c in Children.
func (rc *rowCounter) cumulateTree(frames []treeFrame, t *machine.Thread, cpu, owner int32, filtered bool, c Counts) {
	if len(frames) == 0 {
		return
	}
	h := rc.tree(frames[0].k.Event)
	for _, f := range frames {
		e := rc.histEntry(f.k, f.k.Kernel, f.end, f.inlined, t, cpu)
		e.base, e.owner = f.base, ownerOf(f.k.Kernel, owner)
		if countedAlready(h, rc.counted, &e) {
			continue
		}
		id := rc.histRow(h, h.find(e), f.k, rowLevel{f.k.Kernel, f.k.Hyper}, t, cpu, filtered)
		r := h.rows[id].r
		r.acc.add(c)
		r.obj.note(f.obj)
		rc.counted = append(rc.counted, id)
	}
}

// treeFrame is a callchain entry for cumulateTree, at its key's level.
type treeFrame struct {
	k       Key
	end     uint64
	inlined bool
	base    string     // an inlined function's: the symbol it is inlined into
	obj     objectName // in an object symbol: the entry's (objectName)
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
	if rc.comm {
		if _, ok := rc.commThreads[rk]; !ok {
			rc.commThreads[rk] = t
		}
	}
	return rk
}

// newMade records a row of key k made now by a sample in thread t,
// filtered or not.
func (rc *rowCounter) newMade(k RowKey, filtered bool, t *machine.Thread) made {
	rc.nmade++
	m := made{filtered: filtered, seq: rc.nmade}
	if rc.pid {
		m.thread = t
	}
	if k.comm != nil {
		m.comm = k.comm.Name
	}
	return m
}

// cumulate adds c to the Children column of the rows in keys (the
// sample's own first) once each; levels are the keys' levels, shown when
// a row is new, and filtered marks new rows hidden, as perf marks the
// hist entries a filtered sample makes, its callchain's included.
func (rc *rowCounter) cumulate(keys []RowKey, levels []rowLevel, t *machine.Thread, filtered bool, c Counts) {
	rc.accStamp++
	for i, k := range keys {
		r := rc.acc[k]
		if r == nil {
			shown := k
			shown.Kernel, shown.Hyper = levels[i].kernel, levels[i].hyper
			r = &accRow{key: shown, made: rc.newMade(k, filtered, t)}
			rc.acc[k] = r
		}
		if r.stamp != rc.accStamp {
			r.stamp = rc.accStamp
			r.c.add(c)
		}
	}
}

// Rows is a table sorted by perf report --sort keys (Options.SortKeys or
// a Filter): Counts per row shown and the totals per event, filtered
// samples included; with Options.Children, Acc is the Children column.
// A row perf hides (its first sample was filtered) is not in Counts,
// though samples that pass the filter may have counted in it, as in perf.
type Rows struct {
	Keys   []string
	Counts map[RowKey]Counts
	Acc    map[RowKey]Counts // nil without Options.Children
	Totals []Counts
	// PidComm is, per row, the command name perf shows for the pid key:
	// that of the thread of the sample that made the row, at the end.
	PidComm map[RowKey]string
	// CommLen is, per row, the length of its thread's command name at the
	// end, from which perf sizes the comm column (hists__calc_col_len,
	// thread__comm_len); it prints the row's own name cut to that size.
	CommLen map[RowKey]int
	// Elided are the keys whose column perf leaves out because the filter
	// lists one value for them (sort__setup_elide), with that value.
	Elided map[string]string
	// objects are the offsets perf names the rows of object symbols with
	// (Result.objects), in tables without the Children column.
	objects map[RowKey]objectName
	// ranks are, per event with a histTree, its entries' positions in
	// perf's in-order walk (histTree.ranks).
	ranks map[int][]int32
}

func (rc *rowCounter) result(keys []string, f *Filter) *Rows {
	r := &Rows{Keys: keys, Counts: make(map[RowKey]Counts), Totals: rc.totals, PidComm: make(map[RowKey]string), CommLen: make(map[RowKey]int), Elided: map[string]string{}}
	if rc.acc == nil || rc.hist != nil {
		// The rows are the entries of perf's trees, or by key; with
		// trees, an entry holds both columns of a children table.
		var named []namedRow
		var kept map[RowKey]RowKey
		if rc.hist != nil {
			named, kept, r.ranks = rc.histNamed()
		} else {
			named, kept = rc.named(slices.Collect(maps.Keys(rc.rows)), func(k RowKey) *made { return &rc.rows[k].made })
		}
		if rc.acc != nil {
			r.Acc = make(map[RowKey]Counts)
		}
		for _, e := range named {
			keep := rc.rows[kept[e.named]]
			if keep.filtered {
				continue
			}
			k := e.named
			if rc.firstLevel || k.DSO == "" && rc.sym || k.DSO == symbols.Unknown && (rc.acc != nil || rc.sym) {
				k.Kernel, k.Hyper = keep.level.kernel, keep.level.hyper // the level of the entry perf keeps
			}
			c, seen := r.Counts[k]
			c.add(rc.rows[e.key].c)
			r.Counts[k] = c
			if keep.obj.set && rc.sym && !seen {
				if r.objects == nil {
					r.objects = make(map[RowKey]objectName)
				}
				r.objects[k] = keep.obj
			}
			if rc.acc != nil {
				acc := r.Acc[k]
				acc.add(rc.rows[e.key].acc)
				r.Acc[k] = acc
			}
			if t := rc.commThreads[e.key]; t != nil && !seen {
				r.CommLen[k] = len(t.Comm)
			}
			if keep.thread != nil && !seen {
				r.PidComm[k] = keep.thread.Comm
			}
		}
	} else {
		// The rows are the Children column's, with the level it shows,
		// hidden as its entries are: perf's hist entry holds both columns
		// and takes its mark from the sample that made it, whichever.
		r.Acc = make(map[RowKey]Counts, len(rc.acc))
		named, kept := rc.named(slices.Collect(maps.Keys(rc.acc)), func(k RowKey) *made { return &rc.acc[k].made })
		for _, e := range named {
			keep := rc.acc[kept[e.named]]
			if keep.filtered {
				continue
			}
			shown := keep.key // with the level of the entry perf keeps
			shown.Comm, shown.comm = e.named.Comm, nil
			self, seen := r.Counts[shown]
			if s := rc.rows[e.key]; s != nil {
				self.add(s.c)
			}
			acc := r.Acc[shown]
			acc.add(rc.acc[e.key].c)
			r.Counts[shown], r.Acc[shown] = self, acc
			if t := rc.commThreads[e.key]; t != nil && !seen {
				r.CommLen[shown] = len(t.Comm)
			}
			if keep.thread != nil && !seen {
				r.PidComm[shown] = keep.thread.Comm
			}
		}
	}
	if f != nil {
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
	}
	return r
}

// histNamed is named for the rows of hist entries (rc.hist): each entry's
// row shows the row of the entry perf keeps it in (histTree.collapse),
// with its command name at the end; the rows kept come first. It returns
// the ranks of the entries kept too, per event.
func (rc *rowCounter) histNamed() ([]namedRow, map[RowKey]RowKey, map[int][]int32) {
	n := 0
	for _, h := range rc.hist {
		n += len(h.rows)
	}
	named, merged := make([]namedRow, 0, n), []namedRow(nil)
	kept := make(map[RowKey]RowKey, n)
	ranks := make(map[int][]int32, len(rc.hist))
	for ev, h := range rc.hist {
		keep, rk := h.collapse()
		ranks[ev] = rk
		for id, hr := range h.rows {
			k := h.rows[keep[id]].key
			shown := k
			if k.comm != nil {
				shown.Comm, shown.comm = k.comm.Name, nil
			}
			if he := &h.entries[keep[id]]; he.based {
				shown.Sym = he.name // the symbol it is inlined into (foundFrom)
			}
			if int(keep[id]) == id {
				named = append(named, namedRow{hr.key, shown})
				kept[shown] = k
			} else {
				merged = append(merged, namedRow{hr.key, shown})
			}
		}
	}
	return append(named, merged...), kept, ranks
}

// namedRow is a counted row's key and the key it shows: its command
// name as it is at the end.
type namedRow struct{ key, named RowKey }

// named names the rows of keys (madeOf returns what each keeps of its hist
// entry) by their threads' command names at the end, in the order perf
// collapses its hist entries, and returns for each shown key the key of
// the row perf keeps: rows that end with one name (a thread's first name
// renamed by its first COMM: perf's comm__override) merge into the one
// that sorts first by the name it had when it was made
// (hists__collapse_insert_entry keeps that entry, its filtered mark and
// its level), the first made among equals.
func (rc *rowCounter) named(keys []RowKey, madeOf func(RowKey) *made) ([]namedRow, map[RowKey]RowKey) {
	rows := make([]namedRow, len(keys))
	ms := make([]*made, len(keys)) // looked up once: a key hashes three strings
	for i, k := range keys {
		n := k
		if k.comm != nil {
			n.Comm, n.comm = k.comm.Name, nil
		}
		rows[i], ms[i] = namedRow{k, n}, madeOf(k)
	}
	sortIndexed(rows, func(i, j int) int {
		ma, mb := ms[i], ms[j]
		if c := strings.Compare(ma.comm, mb.comm); c != 0 {
			return c
		}
		return cmp.Compare(ma.seq, mb.seq) // entries equal when made merged then, into the first
	})
	kept := make(map[RowKey]RowKey)
	for _, r := range rows {
		if _, ok := kept[r.named]; !ok {
			kept[r.named] = r.key
		}
	}
	return rows, kept
}

// order sorts rows as perf report does: by period, descending, then by
// each key in turn (command names, tids, CPUs ascending; DSOs by short
// name and symbols by name, ascending, unresolved last), then by sample
// count, descending, then by address as a signed number.
func (r *Rows) order(keys []RowKey) {
	// Counts looked up once, not per comparison: hashing a key's
	// strings each time was most of sorting 50 k rows.
	type counted struct{ c, acc Counts }
	cs := make([]counted, len(keys))
	for i, k := range keys {
		cs[i] = counted{r.Counts[k], r.Acc[k]}
	}
	sortIndexed(keys, func(i, j int) int {
		a, b := &cs[i], &cs[j]
		if c := cmp.Compare(b.acc.Period, a.acc.Period); c != 0 {
			return c // overhead_children first (setup_overhead)
		}
		if c := cmp.Compare(b.c.Period, a.c.Period); c != 0 {
			return c
		}
		return r.compareKeys(keys[i], keys[j], a.c, b.c)
	})
}

// sortIndexed sorts s by compare, which is given the elements' positions
// in s as it was: so that a comparison can read values looked up once per
// element, and large elements move once.
func sortIndexed[T any](s []T, compare func(i, j int) int) {
	idx := make([]int, len(s))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, compare)
	sorted := make([]T, len(s))
	for n, i := range idx {
		sorted[n] = s[i]
	}
	copy(s, sorted)
}

// compareKeys orders two rows of equal overhead: by each sort key in
// turn, then by samples (ca and cb) and address; rows perf would not
// tell apart by then differ in a field the keys do not show, and any
// fixed order will do.
func (r *Rows) compareKeys(a, b RowKey, ca, cb Counts) int {
	for _, k := range r.Keys {
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
				c = strings.Compare(ShortName(a.DSO, a.Kernel), ShortName(b.DSO, b.Kernel))
			}
		case SortSym:
			if c = unknownLast(a.Sym, b.Sym); c == 0 {
				c = strings.Compare(a.Sym, b.Sym)
			}
		}
		if c != 0 {
			return c
		}
	}
	if c := cmp.Compare(cb.Samples, ca.Samples); c != 0 {
		return c
	}
	if a.entry != 0 && b.entry != 0 {
		// perf's output sort keeps its entries' order (histTree.ranks),
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
	return cmp.Compare(a.Tid, b.Tid)
}

// groupRows merges the rows of a group's events (first and the n-1 after
// it), as perf's group view shows them: one row per key, a count per
// member, ordered by the leader's period, then each member's
// (__hpp__sort), then by the keys.
func (r *Rows) groupRows(first, n int) ([]RowKey, map[RowKey][]Counts, map[RowKey][]Counts) {
	counts := make(map[RowKey][]Counts)
	// A merged row shows, by pid, the thread of the leader's entry, else
	// that of a member's (perf's dummy leader entry copies it): the least
	// event's, then the first entry's, whatever the map order.
	type pidName struct {
		from RowKey
		name string
	}
	pidNames := make(map[RowKey]pidName)
	spread := func(m map[RowKey]Counts, into map[RowKey][]Counts) {
		for k, c := range m {
			if k.Event < first || k.Event >= first+n {
				continue
			}
			orig := k
			ev := k.Event
			k.Event = first
			if n > 1 {
				k.entry = 0 // the members' entries are matched by key
			}
			if name, ok := r.PidComm[orig]; ok {
				if p, seen := pidNames[k]; !seen || orig.Event < p.from.Event || orig.Event == p.from.Event && orig.entry < p.from.entry {
					pidNames[k] = pidName{orig, name}
				}
			}
			cs := into[k]
			if cs == nil {
				cs = make([]Counts, n)
				into[k] = cs
			}
			cs[ev-first].add(c)
		}
	}
	spread(r.Counts, counts)
	var accs map[RowKey][]Counts
	if r.Acc != nil {
		accs = make(map[RowKey][]Counts)
		spread(r.Acc, accs)
		for k := range accs {
			if counts[k] == nil {
				counts[k] = make([]Counts, n)
			}
		}
	}
	for k, p := range pidNames {
		r.PidComm[k] = p.name
	}
	keys := make([]RowKey, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b RowKey) int {
		if accs != nil {
			// The Children sort (__hpp__sort_acc) looks at the group
			// leader's alone.
			var pa, pb uint64
			if x := accs[a]; x != nil {
				pa = x[0].Period
			}
			if x := accs[b]; x != nil {
				pb = x[0].Period
			}
			if c := cmp.Compare(pb, pa); c != 0 {
				return c
			}
		}
		ca, cb := counts[a], counts[b]
		for i := range ca {
			if c := cmp.Compare(cb[i].Period, ca[i].Period); c != 0 {
				return c
			}
		}
		return r.compareKeys(a, b, ca[0], cb[0])
	})
	return keys, counts, accs
}

// column is one key's column: its header and each row's text.
type column struct {
	key, header string
	text        func(RowKey) string
}

func (r *Rows) columns() []column {
	var cols []column
	for _, k := range r.Keys {
		if _, ok := r.Elided[k]; ok {
			continue
		}
		switch k {
		case SortComm:
			cols = append(cols, column{k, "Command", func(rk RowKey) string { return rk.Comm }})
		case SortPid:
			cols = append(cols, column{k, "    Pid:Command", func(rk RowKey) string {
				tid := strconv.Itoa(int(rk.Tid)) // "%7d:%s"
				return spaces[:max(7-len(tid), 0)] + tid + ":" + r.PidComm[rk]
			}})
		case SortCPU:
			cols = append(cols, column{k, "CPU", func(rk RowKey) string {
				if rk.CPU < 0 { // C's %3.3d
					return fmt.Sprintf("-%03d", -int64(rk.CPU))
				}
				return fmt.Sprintf("%03d", rk.CPU)
			}})
		case SortDSO:
			cols = append(cols, column{k, "Shared Object", func(rk RowKey) string {
				if rk.DSO == "" {
					return symbols.Unknown
				}
				return ShortName(rk.DSO, rk.Kernel)
			}})
		case SortSym:
			cols = append(cols, column{k, "Symbol", func(rk RowKey) string {
				name := level(Key{Kernel: rk.Kernel, Hyper: rk.Hyper}) + " " + Key{Sym: rk.Sym, Addr: rk.Addr}.SymbolName()
				if o, ok := r.objects[rk]; ok {
					name += "+0x" + strconv.FormatUint(o.off(), 16)
				}
				return name
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
	res.writeTablePreamble(&b)
	for _, k := range []string{SortSym, SortDSO, SortComm} {
		if v, ok := r.Elided[k]; ok {
			fmt.Fprintf(&b, "# %s: %s\n", map[string]string{SortSym: "symbol", SortDSO: "dso", SortComm: "comm"}[k], v)
		}
	}
	keys := make([]RowKey, 0, len(r.Counts))
	for k := range r.Counts {
		keys = append(keys, k)
	}
	r.order(keys)
	cols := r.columns()
	for _, g := range res.eventGroups() {
		totals, sum := g.totals(r.Totals)
		if sum.Samples == 0 && len(res.Events) > 1 {
			continue
		}
		var gkeys []RowKey
		counts := func(k RowKey) []Counts { return []Counts{r.Counts[k]} }
		accs := func(k RowKey) []Counts { return []Counts{r.Acc[k]} }
		if g.n == 1 {
			for _, k := range keys {
				if k.Event == g.first {
					gkeys = append(gkeys, k)
				}
			}
		} else {
			var m, am map[RowKey][]Counts
			gkeys, m, am = r.groupRows(g.first, g.n)
			counts = func(k RowKey) []Counts { return m[k] }
			accs = func(k RowKey) []Counts {
				if x := am[k]; x != nil {
					return x
				}
				return make([]Counts, g.n)
			}
		}
		widths := make([]int, len(cols))
		hasSym := slices.Contains(r.Keys, SortSym)
		for i, c := range cols {
			widths[i] = len(c.header)
			for _, k := range gkeys {
				if n, ok := r.CommLen[k]; ok && c.key == SortComm {
					widths[i] = max(widths[i], n)
				} else {
					widths[i] = max(widths[i], len(c.text(k)))
				}
				if c.key == SortDSO && hasSym && k.Sym == symbols.Unknown {
					widths[i] = max(widths[i], unresolvedDSOWidth)
				}
			}
		}
		if g.n == 1 {
			fmt.Fprintf(&b, "#\n# Samples: %d  of event '%s'\n#\n", sum.Samples, res.Events[g.first])
		} else {
			fmt.Fprintf(&b, "#\n# Samples: %d  of events '%s'\n#\n", sum.Samples, res.groupName(g))
		}
		if r.Acc != nil {
			fmt.Fprintf(&b, "# %*s  %*s  %*s", 8*g.n, "Children", 8*g.n, "Self", 12*g.n, "Samples")
		} else {
			fmt.Fprintf(&b, "# %*s  %*s", 8*g.n, "Overhead", 12*g.n, "Samples")
		}
		for i, c := range cols {
			fmt.Fprintf(&b, "  %-*s", widths[i], c.header)
		}
		b.WriteString("\n# ")
		if r.Acc != nil {
			b.WriteString(strings.Repeat(".", 8*g.n) + "  ")
		}
		fmt.Fprintf(&b, "%s  %s", strings.Repeat(".", 8*g.n), strings.Repeat(".", 12*g.n))
		for i := range cols {
			fmt.Fprintf(&b, "  %s", strings.Repeat(".", widths[i]))
		}
		b.WriteString("\n#\n")
		for _, k := range gkeys {
			cs := counts(k)
			if r.Acc != nil {
				writeShares(&b, accs(k), totals)
			}
			writeGroupCounts(&b, cs, totals)
			for i, c := range cols {
				b.WriteString("  ")
				writeLeftCut(&b, widths[i], c.text(k))
			}
			// perf ends a row at its last character, the header at its
			// last column's width.
			b.Truncate(len(bytes.TrimRight(b.Bytes(), " ")))
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	_, err := w.Write(b.Bytes())
	return err
}

// cumulateRows is cumulate for a table by sort keys: the sample (thread
// t, its own row self at level kernel) and every distinct row of its
// callchain, in caller order, get its period in the Children column.
func (a *attributor) cumulateRows(e *event, t *machine.Thread, self RowKey, kernel, hyper, filtered bool, c Counts) {
	rc := a.rows
	keys, levels := append(rc.accKeys[:0], self), append(rc.accLevels[:0], rowLevel{kernel, hyper})
	frames := rc.frames[:0]
	var obj objectName // the frame's, for add
	add := func(k Key, end uint64, inlined bool, base string) {
		if rc.hist != nil {
			frames = append(frames, treeFrame{k, end, inlined, base, obj})
			return
		}
		keys, levels = append(keys, rc.key(k, t, int32(e.cpu()))), append(levels, rowLevel{k.Kernel, k.Hyper})
	}
	// A chain an unknown marker empties is not walked: no frame of it
	// makes a row or marks one (see cumulate).
	ok := !chainVoid(e) && a.walkCallerOrderUnwound(e, func(ip uint64, cpumode uint8) {
		k := Key{DSO: symbols.Unknown, Sym: symbols.Unknown, Kernel: kernel, Hyper: hyper, Addr: ip, Event: int(e.attr)}
		var end uint64
		obj = objectName{}
		if mp, found := a.m.Resolve(cpumode, e.pid, e.tid, ip); found {
			kernel, hyper = cpumode == machine.CPUModeKernel, false
			k.DSO, k.Kernel, k.Hyper = mp.DSO, kernel, false
			if sym, ok := a.sym.symbol(mp, ip); ok {
				k.Sym, k.Addr, end = sym.Name, sym.Start, sym.End
				if sym.Object { // its entry made at the raw address
					obj = objectHit(mp, sym.Start, ip)
				}
			}
		}
		add(k, end, false, "")
	}, func(k Key, end uint64, base string) {
		kernel, hyper, obj = false, false, objectName{}
		add(k, end, true, base)
	})
	if rc.hist != nil {
		if !ok {
			frames = frames[:0] // perf resets the cursor
		}
		rc.cumulateTree(frames, t, int32(e.cpu()), a.execs.owner(e.pid), filtered, c)
		rc.frames = frames
		return
	}
	if !ok {
		keys, levels = keys[:1], levels[:1] // perf resets the cursor
	}
	rc.cumulate(keys, levels, t, filtered, c)
	rc.accKeys, rc.accLevels = keys, levels
}

// writeLeftCut writes s as fmt's "%-*.*s" with width for both does: cut
// to width runes, padded with spaces to width runes. Rows are written
// without fmt, as the flat table's are (writeRight).
func writeLeftCut(b *bytes.Buffer, width int, s string) {
	n := 0
	for i := range s {
		if n == width {
			s = s[:i]
			break
		}
		n++
	}
	b.WriteString(s)
	writePad(b, width-n)
}
