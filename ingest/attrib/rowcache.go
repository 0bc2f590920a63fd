package attrib

import (
	"slices"
	"unsafe"

	"github.com/kmapindex/kmapindex/ingest/machine"
	"github.com/kmapindex/kmapindex/ingest/symbols"
)

// A rowCache finds a sample's row in a table by sort keys from what
// attribution knows of it (rowHint: its map's counts and its symbol, or
// its address where it has none) instead of from its key; so too, in a
// children table, each callchain entry's. rowCounter.add hashed each
// sample's RowKey, three strings and more, or with the comm key searched
// perf's tree of hist entries: on the 2.91 M-sample -a recording, -sort
// pid,dso,sym and comm,dso,sym took 6 times as long as the dso,sym table,
// and the -a -g recording's children table by comm,dso,sym 9.9 s (perf
// 13.9 s).
//
// A key holds the map's rowClass (DSO, level, symbol table: a final
// table's symbol i is one DSO's one symbol in every map of them, so the
// processes of a build share their answers), the symbol's index or the
// address (map-relative for a sample, the ip for a callchain entry, as
// perf's entries compare them), and the thread's command name, tid and
// CPU as the keys need them. The comm key compares names
// (sort__comm_cmp), so a key holds the name at the sample, not the
// thread's entry.
//
// Without a tree, the answer never changes. With one (the comm key, and
// sym only with dso), perf's search finds the entry equal to the key, or
// makes one, wherever the tree's shape put the entries, as long as the
// entries it compares lie in the walk as the comparison orders them;
// then the answer stays until an entry changes its name. What breaks
// that order:
//   - a command-name entry renamed in place (a thread's first name,
//     machine.OnCommRename): the entries holding it compare by the new
//     name. The answers cached are void (gen), and each of those entries
//     is checked against its nearest neighbours in the walk; one out of
//     place is poisoned (histTree.poison), and so is each entry a search
//     that compared a poisoned one made out of place. The entries not
//     poisoned stay in order among themselves (a search that compares
//     none of the poisoned lands between neighbours in order), so a
//     cached answer stands while no entry on the path from the root to
//     it is poisoned (treeAnswer): the search for its key compares those
//     entries alone. On the -a -g recording a thread renamed from its pid
//     to "test" put one entry out of place a third of the way through;
//     turning the cache off there, or refusing the names about it, left
//     most of its callchain entries to perf's search.
//   - _sort__addr_cmp's signed difference orders no addresses 2^63 or
//     more apart as unsigned and as signed numbers (addrSpan.wide): the
//     addresses each DSO's entries compare are spanned as entries are
//     made (addrSpans). With the dso key before sym, entries of two DSOs,
//     or with and without a map, compare by the keys up to dso, whose
//     order holds, so a wide DSO leaves the others in order: its answers
//     are void and its keys refused (classWide). So too entries without a
//     map, by the values of the keys before sym (comm, pid, cpu: their
//     group, noMapGroup): those of two groups compare no addresses, and a
//     group whose span is wide has its keys refused (noMapWide). On the
//     -a -g recording, whose callchains hold junk addresses, 5 of 27
//     command names' groups were wide, and the 1.06 M callchain entries
//     of the other 22 were left to perf's search while one span held
//     them all. With sym first, a wide span turns the cache off
//     (treeOff).
//   - an inlined function's entry found from other maps takes the name
//     of the function it is inlined into (foundFrom): the first inlined
//     callchain entry turns the cache off.
//
// Off, every key searches the tree for the rest of the run, as perf
// does.
//
// With sym but not dso the comparison is no order at all (addresses of
// every DSO and level compare with each other): there the cache is
// strict, an answer standing while the tree is as it was when it was
// given (histTree.version: no entry made or changed in what it compares),
// as perf's search then ends where it ended. A table's entries are mostly
// made early: on the -a recording, -sort sym took 1.46 s without the
// cache and 0.89 s with it, -a -g -children -sort comm,sym 8.46 and 3.03
// s (scripts/abbench.sh 3). A gcc build's, made throughout, gain nothing.
//
// The cache is direct-mapped, a slot per key's hash, overwritten by the
// next key of the slot: a gcc build's addresses without a symbol are
// hundreds of thousands, most seen a few times, and a Go map of them
// made its -sort pid,dso,sym table 12 % slower and 116 MB larger.
type rowCache struct {
	slots []rowSlot
	bits  uint // len(slots) is 1<<bits
	// treeOff says the tree's order may be broken; gen counts the voids
	// of the answers cached before, by renames and wide DSOs (from 1: a
	// slot never filled has gen 0).
	tree bool // the counter searches perf's trees (rowCounter.hist)
	// strict says the tree's comparison is no order (sym without dso):
	// an answer stands while the tree is as it was (histTree.version),
	// as perf's search then ends where it ended.
	strict  bool
	treeOff bool
	// bySym says the keys hold the symbol: without the sym key a row
	// is its map's whatever the symbol or address, and the cache keys
	// hold neither. (Keyed by them, -sort comm,dso on a generated
	// recording of 1 M samples among many symbols missed 45 % of its
	// lookups and ran 436 ms against 275 ms without the cache.)
	bySym bool
	gen   uint64
	// names numbers the command names the keys hold (from 1); last
	// remembers a few entries' names and numbers, as samples come in
	// runs of a thread.
	names map[string]int32
	last  [8]namedComm
	// classes numbers the rowClasses of the maps whose symbols the keys
	// hold (from 1; mapState.rowClass remembers a map's).
	classes map[rowClass]int32
	// dsoFirst says the dso key comes before sym: entries of two DSOs
	// compare no addresses. wideDSOs are the DSOs (short names) whose
	// span is wide, classWide the classes of theirs (by number), and
	// classDSO each class's short name.
	dsoFirst  bool
	wideDSOs  map[string]bool
	classWide []bool
	classDSO  []string
	// noMapWide are the groups of entries without a map whose span is
	// wide; groupBy masks a threadKey's fields to its group's: all bits
	// (-1) for the keys before sym, none for the others (noMapGroup).
	noMapWide map[threadKey]bool
	groupBy   threadKey
}

// rowClass is what a sample's row takes of its map beyond its symbol: the
// DSO, the level it was sampled at and the symbol table.
type rowClass struct {
	dso    string
	kernel bool
	table  *symbols.Table
}

// namedComm is a command-name entry, its name when last seen and the
// name's number.
type namedComm struct {
	e    *machine.CommEntry
	name string
	id   int32
}

// rowSlot is a key and its answer.
type rowSlot struct {
	k rowCacheKey
	v rowCacheVal
}

// rowCacheBits sizes the cache: at most 64 Ki slots of 56 bytes, fewer
// for a recording of less than 16 MiB (cacheBits; resize). 256 Ki slots
// were no faster on the gcc recording's tables by sort keys.
const rowCacheBits = 16

// rowHint is what sample knows of a sample's row beyond its key: its
// map's counts, its symbol's index in the map's table (-1: none) and its
// map-relative address, which names a row without a symbol; or no st.
type rowHint struct {
	st    *mapState
	i     int32
	addr  uint64
	noMap bool // a callchain entry without a map (frameKey)
}

// rowCacheKey is a sample's row, as a rowHint and the sample's thread
// and CPU tell it (the fields the keys do not use are zero).
type rowCacheKey struct {
	class    int32 // the map's (rowClass)
	i, event int32
	threadKey
	addr uint64 // without a symbol
}

// threadKey is what a cache key takes of a sample's thread and CPU, the
// same for its callchain's entries: the number of the thread's command
// name (rowCache.names), its tid and the CPU, zero for the keys not
// sorted by.
type threadKey struct{ comm, tid, cpu int32 }

// rowCacheVal is a cached row: the tree's entry, or without a tree the
// row; gen is the cache's when it was cached.
type rowCacheVal struct {
	gen uint64
	id  int32
	// seen is the tree's mark (seenNow) when the answer last stood
	// (stands).
	seen uint32
	r    *row
}

// newRowCache returns the cache for rc, or nil where it does not apply:
// children tables without trees (their callchain entries are found by
// key, see accAnswer). Trees searched with sym but not dso, whose
// comparison is no order, get a strict one.
func newRowCache(rc *rowCounter, children bool) *rowCache {
	if rowCacheOff || children && rc.hist == nil {
		return nil
	}
	sym := slices.Index(rc.histKeys, SortSym)
	before := func(key string) int32 { // -1 if key comes before sym, else 0
		if i := slices.Index(rc.histKeys, key); i >= 0 && (sym < 0 || i < sym) {
			return -1
		}
		return 0
	}
	return &rowCache{slots: make([]rowSlot, 1<<rowCacheBits), bits: rowCacheBits, tree: rc.hist != nil, strict: rc.hist != nil && rc.sym && !rc.dso, bySym: rc.sym,
		gen: 1, names: make(map[string]int32), classes: make(map[rowClass]int32),
		dsoFirst: slices.Index(rc.histKeys, SortDSO) < sym, wideDSOs: make(map[string]bool),
		classWide: []bool{false}, classDSO: []string{""},
		noMapWide: make(map[threadKey]bool), groupBy: threadKey{comm: before(SortComm), tid: before(SortPid), cpu: before(SortCPU)}}
}

// noMapGroup is the group of the entries without a map that a sample of
// thread key tk searches among: the keys before sym tell groups apart,
// so that entries of two groups compare no addresses.
func (c *rowCache) noMapGroup(tk threadKey) threadKey {
	return threadKey{comm: tk.comm & c.groupBy.comm, tid: tk.tid & c.groupBy.tid, cpu: tk.cpu & c.groupBy.cpu}
}

// slot returns k's slot.
func (c *rowCache) slot(k *rowCacheKey) *rowSlot {
	h := k.addr * 0x9e3779b97f4a7c15
	h ^= (uint64(uint32(k.i)) | uint64(uint32(k.tid))<<32) * 0x94d049bb133111eb
	h ^= (uint64(uint32(k.comm)) | uint64(uint32(k.class))<<32) * 0xbf58476d1ce4e5b9
	h ^= (uint64(uint32(k.cpu)) | uint64(uint32(k.event))<<32) * 0xd6e8feb86659fd93
	h ^= h >> 29
	h *= 0x9e3779b97f4a7c15
	return &c.slots[h>>(64-c.bits)]
}

// resize makes c, empty, 2^bits slots.
func (c *rowCache) resize(bits uint) {
	if c != nil {
		c.slots, c.bits = make([]rowSlot, 1<<bits), bits
	}
}

// rowCacheOff turns the cache off, and the rows kept beside the
// callchain cache for children tables without trees (accAnswer; tests).
var rowCacheOff bool

// rowCacheChecks, on, checks each answer the cache gives from a tree
// against perf's search (tests).
var rowCacheChecks answerChecks

// answerChecks counts the answers checked, those for entries without a
// map, and those perf's search would not give (bad).
type answerChecks struct {
	on               bool
	done, noMap, bad int
}

// check checks answer id for an entry searched as e in h.
func (c *answerChecks) check(h *histTree, id int32, e histEntry) {
	c.done++
	if e.noMap {
		c.noMap++
	}
	if found, _, _ := h.search(&h.tree, &e); found != id {
		c.bad++
	}
}

// key returns the cache key of a sample of event in thread t on cpu with
// hint h, and whether the cache may answer it: its map's table is final,
// and a tree's order holds.
func (c *rowCache) key(h rowHint, tk threadKey, event int) (rowCacheKey, bool) {
	if c == nil || h.st == nil || !h.st.final || c.tree && c.treeOff {
		return rowCacheKey{}, false
	}
	if h.st.rowClass == 0 { // st is of the cache's run
		h.st.rowClass = c.classOf(rowClass{h.st.key.m.DSO, h.st.key.kernel, h.st.table})
	}
	if c.refuses(h.st.rowClass, tk) {
		return rowCacheKey{}, false
	}
	k := rowCacheKey{class: h.st.rowClass, event: int32(event), threadKey: tk}
	if c.bySym {
		k.i = h.i
		if h.i < 0 {
			k.addr = h.addr
		}
	}
	return k, true
}

// frameKey is key for callchain entry f of a sample of thread t on cpu
// (cumulateTree): a frame's entry is the sample's of its symbol; one
// without a symbol is keyed by its ip (i -2), which it compares, not its
// map-relative address (i -1); one without a map by its ip (i -3). The
// gcc recording's callchains hold 1.48 M entries without a map: 94 % of
// its children table's searches of perf's tree before they were cached.
func (c *rowCache) frameKey(f *treeFrame, tk threadKey) (rowCacheKey, bool) {
	if f.inlined || c == nil {
		return rowCacheKey{}, false
	}
	if f.hint.noMap {
		// Keyed by its ip alone (class -1): entries without a map
		// compare no level, while their addresses are ordered.
		if c.refuses(noMapClass, tk) {
			return rowCacheKey{}, false
		}
		return rowCacheKey{class: noMapClass, i: -3, addr: f.k.Addr, event: int32(f.k.Event), threadKey: tk}, true
	}
	k, ok := c.key(f.hint, tk, f.k.Event)
	if ok && k.i < 0 {
		k.i = -2
	}
	return k, ok
}

// noMapClass is the class of the keys of entries without a map.
const noMapClass = -1

// refuses reports whether the cache refuses keys of class, of a sample
// of thread key tk, now: its tree's order may be broken for them (wide
// spans of addresses, or off).
func (c *rowCache) refuses(class int32, tk threadKey) bool {
	switch {
	case c.tree && c.treeOff:
		return true
	case class == noMapClass:
		return len(c.noMapWide) > 0 && c.noMapWide[c.noMapGroup(tk)]
	}
	return c.classWide[class]
}

// classOf returns the number of class k.
func (c *rowCache) classOf(k rowClass) int32 {
	id, ok := c.classes[k]
	if !ok {
		id = int32(len(c.classes) + 1)
		c.classes[k] = id
		short := ShortName(k.dso, k.kernel) // as histEntry's
		c.classDSO, c.classWide = append(c.classDSO, short), append(c.classWide, c.wideDSOs[short])
	}
	return id
}

// nameOf returns the number of e's name.
func (c *rowCache) nameOf(e *machine.CommEntry) int32 {
	m := &c.last[uintptr(unsafe.Pointer(e))>>4%uintptr(len(c.last))]
	if m.e == e && m.name == e.Name {
		return m.id
	}
	id, ok := c.names[e.Name]
	if !ok {
		id = int32(len(c.names) + 1)
		c.names[e.Name] = id
	}
	*m = namedComm{e, e.Name, id}
	return id
}

// get returns the cached answer for k, if any and not void.
func (c *rowCache) get(k rowCacheKey) (rowCacheVal, bool) {
	s := c.slot(&k)
	return s.v, s.v.gen == c.gen && s.k == k
}

// treeAnswer returns the entry of h cached for k, if any, not void, and
// standing (stands).
func (c *rowCache) treeAnswer(h *histTree, k rowCacheKey) (int32, bool) {
	s := c.slot(&k)
	if s.v.gen != c.gen || s.k != k || !c.stands(h, s.v.id, &s.v.seen) {
		return 0, false
	}
	return s.v.id, true
}

// stands reports whether an answer, entry id of h, given or last found
// standing when h's mark was *seen (seenNow), stands now, and then sets
// *seen to the mark. Strict, it stands while the tree is as it was
// (histTree.version). Else while no poisoned entry lies on the path from
// the root to it, checked again only once a path may have gained one
// (histTree.poisonEpoch): checked at each new version instead, the walks
// up the paths were 6 % of the -a -g recording's children table by
// comm,dso,sym (a CPU profile), whose entries are made throughout.
func (c *rowCache) stands(h *histTree, id int32, seen *uint32) bool {
	if c.strict {
		return *seen == h.version
	}
	if h.npoisoned > 0 && *seen != h.poisonEpoch {
		if !h.cleanFrom(h.nodes[id]) {
			return false
		}
		*seen = h.poisonEpoch
	}
	return true
}

// seenNow is h's mark for an answer that stands now (stands): its
// version in a strict cache, else its poison epoch.
func (c *rowCache) seenNow(h *histTree) uint32 {
	if c.strict {
		return h.version
	}
	return h.poisonEpoch
}

// put caches v for k.
func (c *rowCache) put(k rowCacheKey, v rowCacheVal) {
	v.gen = c.gen
	*c.slot(&k) = rowSlot{k, v}
}

// renamed handles e's rename in place from old (machine.OnCommRename)
// for the trees of rc: if entries hold it, the answers cached are void,
// and each of them that no longer lies strictly between its nearest
// neighbours in its tree's walk that are neither poisoned nor holding e
// is poisoned.
func (c *rowCache) renamed(rc *rowCounter, e *machine.CommEntry, old string) {
	if c == nil || rc.hist == nil || c.treeOff {
		return
	}
	held := false
	for _, h := range rc.hist {
		for _, id := range h.byComm[e] {
			held = true
			// Among the neighbours neither poisoned nor renamed: the
			// entries holding e keep their order among themselves.
			if !h.inPlace(h.nodes[id], func(id int32) bool { return h.entries[id].comm == e }) {
				h.poison(id)
			}
		}
	}
	if held {
		c.gen++
		c.regroup(rc, old, e)
	}
}

// regroup moves the spans of the groups of entries without a map named
// old into those of e's new name, which the entries holding e compare in
// now (their addresses stay in old's spans too: a span only grows).
func (c *rowCache) regroup(rc *rowCounter, old string, e *machine.CommEntry) {
	from, ok := c.names[old]
	if !ok || c.groupBy.comm == 0 || !c.dsoFirst {
		return
	}
	to := c.nameOf(e)
	for _, h := range rc.hist {
		var moves []spanGroup
		for g := range h.spans {
			if g.noMap && g.group.comm == from {
				moves = append(moves, g)
			}
		}
		for _, g := range moves {
			ng := g
			ng.group.comm = to
			s := h.spans[ng]
			if s == nil {
				s = &addrSpans{}
				h.spans[ng] = s
			}
			s.ips.merge(&h.spans[g].ips)
			if s.ips.wide() {
				c.noMapWide[ng.group] = true
			}
		}
	}
}

// made notes entry id of h, just made, in the spans of the addresses
// its DSO's entries compare, and refuses the DSO, or turns the cache
// off, when they are wide.
func (c *rowCache) made(h *histTree, id int32) {
	if c == nil || c.treeOff || c.strict {
		return
	}
	e := &h.entries[id]
	g := spanGroup{dso: e.dso, noMap: e.noMap}
	switch {
	case !c.dsoFirst:
		g = spanGroup{} // sym compares every entry's addresses with every other's
	case e.noMap:
		g.group = c.entryGroup(e)
	}
	s := h.spans[g]
	if s == nil {
		s = &addrSpans{}
		h.spans[g] = s
	}
	if e.sym {
		s.syms.add(e.start)
		s.syms.add(e.end)
	} else {
		s.ips.add(e.ip)
	}
	if !s.syms.wide() && !s.ips.wide() {
		return
	}
	switch {
	case !c.dsoFirst:
		c.treeOff = true
	case g.noMap:
		if !c.noMapWide[g.group] {
			c.noMapWide[g.group] = true
			c.gen++
		}
	case c.wideDSOs[g.dso]:
	default:
		c.wideDSOs[g.dso] = true
		for i, short := range c.classDSO {
			c.classWide[i] = c.classWide[i] || short == g.dso
		}
		c.gen++
	}
}

// spanGroup is the entries whose addresses compare with each other's:
// one DSO's (by short name), or those without a map of one group
// (noMapGroup), when the dso key comes before sym (rowCache.dsoFirst);
// else all.
type spanGroup struct {
	dso   string
	noMap bool
	group threadKey
}

// entryGroup is noMapGroup for entry e: the values it holds of the keys
// before sym, its command's name as it is now.
func (c *rowCache) entryGroup(e *histEntry) threadKey {
	var tk threadKey
	if c.groupBy.comm != 0 {
		tk.comm = c.nameOf(e.comm)
	}
	tk.tid, tk.cpu = e.tid&c.groupBy.tid, e.cpu&c.groupBy.cpu
	return tk
}

// addrSpans are the spans of a group's symbol bounds and of its
// addresses without a symbol.
type addrSpans struct{ syms, ips addrSpan }

// addrSpan is the smallest and largest of some addresses, as unsigned
// and as signed numbers.
type addrSpan struct {
	lo, hi   uint64
	slo, shi int64
	set      bool
}

// merge adds o's addresses to s: its extremes, unsigned and signed,
// which are addresses of o's.
func (s *addrSpan) merge(o *addrSpan) {
	if o.set {
		for _, a := range [...]uint64{o.lo, o.hi, uint64(o.slo), uint64(o.shi)} {
			s.add(a)
		}
	}
}

func (s *addrSpan) add(a uint64) {
	if !s.set {
		s.lo, s.hi, s.slo, s.shi, s.set = a, a, int64(a), int64(a), true
		return
	}
	s.lo, s.hi = min(s.lo, a), max(s.hi, a)
	s.slo, s.shi = min(s.slo, int64(a)), max(s.shi, int64(a))
}

// wide reports whether the span's addresses may be ones _sort__addr_cmp
// does not order: its signed difference orders addresses that all lie
// less than 2^63 apart, as unsigned numbers or as signed ones (a
// system-wide recording's kernel and user addresses).
func (s *addrSpan) wide() bool {
	return s.set && s.hi-s.lo >= 1<<63 && uint64(s.shi-s.slo) >= 1<<63
}

// A frameAnswer is a callchain frame's entry in perf's tree, kept beside
// the frame's slot in the callchain cache (attributor.frameAnswers) for
// the thread key and event it was found for: a frame the cache answers
// is then neither named nor keyed, and its answer needs no lookup in the
// row cache. On the -a -g recording's children table by comm,dso,sym,
// naming and keying each frame, and the row cache's slot it missed in
// the processor's cache, were 40 % of the time (a CPU profile). A
// sample's own entry is kept so too, beside its slot of the sample cache
// (attributor.selfAnswers).
// An answer kept for the sample's thread key and event (of) stands while
// the row cache's answers do (gen, treeOff, stands: frameAnswer).
type frameAnswer struct {
	gen  uint64 // the cache's when kept; 0: none
	of   answerOf
	id   int32
	seen uint32 // as rowCacheVal's
}

// answerOf is what a callchain frame's kept answer (frameAnswer,
// accAnswer) answers for besides the frame: the sample's thread key and
// event.
type answerOf struct {
	tk    threadKey
	event int32
}

// frameAnswer returns a's entry of h, if the answer stands.
func (c *rowCache) frameAnswer(h *histTree, a *frameAnswer) (int32, bool) {
	if a.gen != c.gen || c.treeOff || !c.stands(h, a.id, &a.seen) {
		return 0, false
	}
	return a.id, true
}

// keepAnswer keeps id, the entry of h found for frame f (key ck,
// cacheable or not when found; seen, as rowCacheVal's), beside f's callchain slot in answers, unless f is
// in an object symbol (whose map names its row, see cumulate) or its key
// is no longer one the cache answers: finding the entry may have refused
// its DSO (made). The walk counts each frame before it looks up the next
// (cumulateRows), so that f's slot is still f's.
func (c *rowCache) keepAnswer(answers []frameAnswer, f *treeFrame, ck rowCacheKey, cacheable bool, id int32, seen uint32) {
	if answers == nil || f.at < 0 || !cacheable || f.obj.set {
		return
	}
	c.keep(&answers[f.at], ck, id, seen)
}

// keep keeps id, the entry found for cacheable key ck (seen, as
// rowCacheVal's), in a (nil: nowhere), unless the key is no longer one
// the cache answers.
func (c *rowCache) keep(a *frameAnswer, ck rowCacheKey, id int32, seen uint32) {
	if a == nil || c.refuses(ck.class, ck.threadKey) {
		return
	}
	*a = frameAnswer{gen: c.gen, of: answerOf{ck.threadKey, ck.event}, id: id, seen: seen}
}

// strictSeen is the seen of an answer perf's search in h just gave: the
// tree's version when the cache is strict (the answer stands while it
// lasts), else 0 (its path not yet checked for poison, see stands).
// An entry the search made is found again by its key too: linking it
// rotates only its own path's entries, each raised or lowered away from
// it, so that its path holds no entry its key's search did not compare.
func (c *rowCache) strictSeen(h *histTree) uint32 {
	if c != nil && c.strict {
		return h.version
	}
	return 0
}
