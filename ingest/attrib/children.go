package attrib

import (
	"iter"
	"slices"

	"github.com/kmapindex/kmapindex/ingest/machine"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/ingest/symbols"
)

// accumulator holds perf report --children's "Children" counts: one entry
// per (dso, symbol) row, found per frame through dense caches rather than
// by hashing keys (a callchain has tens of frames a sample). It is the
// default table's fast path; a table by other sort keys cumulates by
// RowKey (rowCounter.cumulate).
type accumulator struct {
	keys   entryKeys              // each entry's key, with the level of the first frame that reached it (which perf shows)
	counts []accCount             // each entry's counts, apart from the keys: the per-frame work touches only these
	byKey  map[Key]int32          // the entry of each key with a symbol, without its level
	noMap  *addrTable             // the entry of each address outside every map, by address and event
	addrs  map[dsoMode]*addrTable // the entries of addresses without a symbol, per DSO (addrEntry), by address and event
	stamp  uint32                 // the current sample's stamp (its ordinal + 1)
	// frames caches, per version of the maps, what a frame resolved to:
	// callchains repeat the same return addresses, and resolving and
	// symbolizing one took most of the time.
	frames    []frameSlot // 1<<frameBits of them
	frameBits uint
	// meta is, per entry, what perf's comparison of entries needs beyond
	// its key; anyInlined says an inlined function's entry was made.
	meta       entryMetas
	anyInlined bool
	log        *entryLog // each sample's entries, when set (see replay)
	// rep replays the log as it grows (replayrun.go); noRep says it was
	// stopped for good.
	rep   *concurrentReplay
	noRep bool
	// objects name the entries of object symbols (objectName): made in
	// symEntry, merged into as count counts them.
	objects map[int32]objectName
	objHits []entryHit // cumulate's, reused
	symIDs  map[symIDsKey]*symIDs
	// hiding says the current sample is filtered (a guest one): the
	// entries it makes are hidden, as perf hides a filtered sample's hist
	// entries, its callchain's too; hidden marks them.
	hiding bool
	hidden map[int32]bool
	// orders are, per event, perf's tree for addresses outside every
	// map once they lie far apart (farorder.go); movedSelf is the Self
	// column of the entries it made for a sample's own address.
	orders      []*noMapOrder
	trees       *treeWorker
	ranks       *rowRanks // finishTrees's
	movedSelf   map[int32]Counts
	noMapFrames []noMapFrame // cumulate's, reused
	made        []int32      // the entries in the order first counted, until every event has a tree
}

// execs counts each process's execs so far (COMM records with
// MiscCommExec).
type execs map[uint32]uint32

// owner tells apart the user maps a sample of process pid resolves in
// as perf's map objects are told apart: per process (a forked one has
// copies) and, in a process, per exec (whose MMAPs make new ones). The
// trees of hist entries compare it (histTree.foundFrom).
func (x execs) owner(pid uint32) int32 {
	return int32(pid&(1<<22-1) | x[pid]<<22)
}

// entryMeta is an entry's symbol's end and whether it is an inlined
// function's (whose span is the symbol it is inlined into).
type entryMeta struct {
	end     uint64
	inlined bool
	base    string // an inlined function's: the symbol it is inlined into
}

// entryLog is each sample's entries, as cumulate counted them: its self
// entry, then its callchain's in caller order, duplicates included. The
// entries are kept in blocks of logBlock or more (a sample's in one):
// one slice doubling as it grew kept up to twice their size.
type entryLog struct {
	blocks  [][]int32
	samples []loggedSample
	// hits are, per block, its entries in object symbols (few).
	hits [][]loggedHit
	// sealed, when set, is given each block once the next one starts,
	// with the samples logged in it and its hits; from is the first of
	// those samples.
	sealed func(block []int32, samples []loggedSample, hits []loggedHit)
	from   int
}

// entryHit is entry i of a sample's (count's ids) in an object symbol.
type entryHit struct {
	i int
	h objectName
}

// loggedHit is the entry at position pos of a log block in an object
// symbol.
type loggedHit struct {
	pos int32
	h   objectName
}

var logBlock = 1 << 16 // lowered by tests

// add logs a sample of period c and entries ids, hits of them in object
// symbols.
func (l *entryLog) add(ids []int32, hits []entryHit, c Counts, owner int32) {
	n := len(l.blocks)
	if n == 0 || len(l.blocks[n-1])+len(ids) > cap(l.blocks[n-1]) {
		if n > 0 && l.sealed != nil {
			l.sealed(l.blocks[n-1], l.samples[l.from:len(l.samples):len(l.samples)], l.hits[n-1])
		}
		l.from = len(l.samples)
		l.blocks = append(l.blocks, make([]int32, 0, max(logBlock, len(ids))))
		l.hits = append(l.hits, nil)
		n++
	}
	for _, h := range hits {
		l.hits[n-1] = append(l.hits[n-1], loggedHit{int32(len(l.blocks[n-1]) + h.i), h.h})
	}
	l.blocks[n-1] = append(l.blocks[n-1], ids...)
	l.samples = append(l.samples, loggedSample{int32(len(ids)), owner, c})
}

type loggedSample struct {
	n     int32 // entries in ids
	owner int32 // of the maps its user entries are in (execs.owner)
	c     Counts
}

// frameCacheBits sizes the frame cache (32 Ki slots of 16 bytes: it fits
// in a core's L2 cache, which a larger one did not, for no fewer misses;
// 24-byte slots took 3 % more time on the -a -g children table).
const frameCacheBits = 15

// frameSlot is a frame's resolution under one version of the maps it was
// looked up in (machine.Thread.MapsVersion or Machine.KernelVersion):
// with map (inMap) the entry of its symbol or address, counted under a
// final table; else no map, and the entry of its address (noMapEntry's,
// which keeps the level it was made with). tag packs the version, the
// cpumode, the event and whether it is in a map (frameTag): 16 bytes a
// slot.
type frameSlot struct {
	ip  uint64
	tag uint32
	id  int32
}

// frameTag packs what a frameSlot is for besides the address; ok is
// false for what does not fit (not cached then). A filled slot's tag is
// never 0.
func frameTag(ver uint64, cpumode uint8, event int, inMap bool) (tag uint32, ok bool) {
	if ver >= 1<<tagVerBits || event > maxSlotEvent || cpumode >= 1<<tagModeBits {
		return 0, false
	}
	tag = uint32(ver)<<(tagModeBits+tagEventBits+2) | uint32(cpumode)<<(tagEventBits+2) | uint32(event)<<2 | tagFilled
	if inMap {
		tag |= tagInMap
	}
	return tag, true
}

const (
	tagFilled = 1 << iota
	tagInMap

	tagEventBits = 5
	tagModeBits  = 3
	tagVerBits   = 32 - 2 - tagEventBits - tagModeBits

	maxSlotEvent = 1<<tagEventBits - 1
)

// accCount is one row's counts.
type accCount struct {
	c     Counts
	stamp uint32 // the last sample counted: each counts once per row
	noMap bool   // an address outside every map (noMapEntry's)
}

// symIDs caches the entries of a table's symbols for one event (id+1; 0:
// not yet looked up).
type symIDs struct {
	t     *symbols.Table
	event int
	ids   []int32
}

// symIDsKey is what the entries of a table's symbols depend on: the
// entry's key holds the map's DSO and level.
type symIDsKey struct {
	t      *symbols.Table
	event  int
	dso    string
	kernel bool
}

// accState is what a map state keeps for the accumulator.
type accState struct {
	syms   []*symIDs
	last   *symIDs
	byAddr *addrTable // frames in the map without a symbol, by address and event: its DSO's (accumulator.addrs)
}

func newAccumulator() *accumulator { return newAccumulatorBits(frameCacheBits) }

// newAccumulatorBits returns an accumulator whose frame cache has
// 1<<frameBits slots.
func newAccumulatorBits(frameBits uint) *accumulator {
	return &accumulator{byKey: make(map[Key]int32), noMap: newAddrTable(0),
		frames: make([]frameSlot, 1<<frameBits), frameBits: frameBits}
}

// entry returns the entry of k, made on first use. The entries of
// addresses outside every map are noMap's alone, and those of addresses
// without a symbol in a map addrs's (addrEntry): their keys are smaller.
func (ac *accumulator) entry(k Key) int32 {
	if isNoMapKey(&k) {
		return ac.noMapEntry(k.Addr, k.Kernel, k.Hyper, k.Event)
	}
	if k.Sym == symbols.Unknown && !k.Hyper && k.dup == 0 {
		return ac.addrKeyEntry(ac.addrsOf(dsoMode{k.DSO, k.Kernel}), k)
	}
	id := noLevel(k)
	if i, ok := ac.byKey[id]; ok {
		return i
	}
	i := ac.newEntry(k)
	ac.byKey[id] = i
	return i
}

// newEntry makes an entry of k.
func (ac *accumulator) newEntry(k Key) int32 {
	i := ac.keys.append(k)
	if len(ac.counts) == cap(ac.counts) {
		// Doubling: append grows a large slice by a quarter, which
		// copied and cleared the 514 k counts of a gcc build's children
		// table about 20 times on their way (90 ms of a run).
		ac.counts = slices.Grow(ac.counts, max(len(ac.counts), 256))
	}
	ac.counts = append(ac.counts, accCount{})
	ac.meta.append()
	if ac.hiding {
		if ac.hidden == nil {
			ac.hidden = make(map[int32]bool)
		}
		ac.hidden[i] = true
	}
	return i
}

// add counts c into entry i once per sample.
func (ac *accumulator) add(i int32, c Counts) {
	e := &ac.counts[i]
	if e.stamp != ac.stamp {
		e.stamp = ac.stamp
		e.c.add(c)
	}
}

// symEntry returns the entry of symbol i of table t in st's map, made
// for an address at, if it is new: perf's hist entry keeps it (he->ip),
// and an object symbol's row is named with its offset in the symbol
// (Result.objects). A sample's own entry is made at its map-relative
// address (al->addr), a callchain frame's at its raw one
// (fill_callchain_info).
func (ac *accumulator) symEntry(st *mapState, t *symbols.Table, i, event int, at uint64) int32 {
	as := &st.acc
	s := as.last
	if s == nil || s.t != t || s.event != event {
		s = nil
		for _, x := range as.syms {
			if x.t == t && x.event == event {
				s = x
			}
		}
		if s == nil {
			// Maps of one DSO (a library in each process) share their
			// symbols' entries, and so the cache of them.
			k := symIDsKey{t, event, st.key.m.DSO, st.key.kernel}
			if s = ac.symIDs[k]; s == nil {
				s = &symIDs{t: t, event: event, ids: make([]int32, t.Len())}
				if ac.symIDs == nil {
					ac.symIDs = make(map[symIDsKey]*symIDs)
				}
				ac.symIDs[k] = s
			}
			as.syms = append(as.syms, s)
		}
		as.last = s
	}
	if id := s.ids[i]; id != 0 {
		return id - 1
	}
	sym := t.Symbol(i)
	n := ac.keys.len()
	id := ac.entry(Key{DSO: st.key.m.DSO, Sym: sym.Name, Kernel: st.key.kernel, Addr: sym.Start, Event: event})
	m := ac.meta.at(id)
	m.end = sym.End
	ac.setMeta(id, m)
	if sym.Object && ac.keys.len() > n {
		if ac.objects == nil {
			ac.objects = make(map[int32]objectName)
		}
		ac.objects[id] = objectHit(st.key.m, sym.Start, at)
	}
	s.ids[i] = id + 1
	return id
}

// addrEntry returns the entry of an address without a symbol in st's map.
// The entries of such addresses are kept per DSO and level, which is all
// of their key but the address and event (addrsOf): the maps of one DSO
// (a library in each process) find them without hashing the key's names,
// as each map's first frame at an address did, 4 % of the attributor's
// time on the -a -g children table; and so are new ones (byKey held them
// too, and hashing their names into it took 0.18 s of a gcc build's
// children table, 120 k of whose entries are addresses in cc1).
func (ac *accumulator) addrEntry(st *mapState, addr uint64, event int) int32 {
	as := &st.acc
	if as.byAddr == nil {
		as.byAddr = ac.addrsOf(dsoMode{st.key.m.DSO, st.key.kernel})
	}
	if id, ok := as.byAddr.get(addr, uint32(event)); ok {
		return id // without making the key, as most frames are found
	}
	k := Key{DSO: st.key.m.DSO, Sym: symbols.Unknown, Kernel: st.key.kernel, Addr: addr, Event: event}
	if isNoMapKey(&k) {
		return ac.entry(k) // a map named as no map: noMap's entry
	}
	return ac.addrKeyEntry(as.byAddr, k)
}

// addrsOf returns the entries of addresses without a symbol in the maps
// of DSO d (at its level), by address and event.
func (ac *accumulator) addrsOf(d dsoMode) *addrTable {
	byAddr := ac.addrs[d]
	if byAddr == nil {
		if ac.addrs == nil {
			ac.addrs = make(map[dsoMode]*addrTable)
		}
		byAddr = newAddrTable(0)
		ac.addrs[d] = byAddr
	}
	return byAddr
}

// addrKeyEntry returns the entry of k, an address without a symbol, in
// byAddr (addrsOf's for its DSO and level), made on first use.
func (ac *accumulator) addrKeyEntry(byAddr *addrTable, k Key) int32 {
	if id, ok := byAddr.get(k.Addr, uint32(k.Event)); ok {
		return id
	}
	id := ac.newEntry(k)
	byAddr.set(k.Addr, uint32(k.Event), id)
	return id
}

// noMapEntry returns the entry of an address outside every map.
// Its level is the one the entry is made at: kernel, hyper ("H") or user.
func (ac *accumulator) noMapEntry(addr uint64, kernel, hyper bool, event int) int32 {
	if id, ok := ac.noMap.get(addr, uint32(event)); ok {
		return id
	}
	id := ac.newEntry(Key{DSO: symbols.Unknown, Sym: symbols.Unknown, Kernel: kernel, Hyper: hyper, Addr: addr, Event: event})
	ac.counts[id].noMap = true
	ac.noMap.set(addr, uint32(event), id)
	return id
}

// release lets go of what only counting and finishTrees read: the
// lookups of entries by key and address, the frame cache, perf's trees
// (once ranked). On a gcc build's children table they were 80 MB of the
// 190 MB live when its Children counts are gathered (result).
func (ac *accumulator) release() {
	ac.byKey, ac.noMap, ac.addrs, ac.frames, ac.symIDs = nil, nil, nil, nil, nil
	ac.orders, ac.trees, ac.made, ac.noMapFrames, ac.objHits = nil, nil, nil, nil, nil
}

// result returns the Children counts, a key each (the entries' keys are
// distinct: byKey, noMap and Key.dup tell them apart), and hides in res
// the rows of the entries a filtered sample made.
func (ac *accumulator) result(res *Result) keyChunks {
	m := keyChunks{}
	for i := range int32(ac.keys.len()) {
		if ac.counts[i].c == (Counts{}) {
			// Made for a frame of a callchain an unknown context marker
			// then emptied: perf, which resolves the chain before it
			// makes entries, has no such entry.
			continue
		}
		k := ac.keys.at(i)
		m.add(keyCounts{k, ac.counts[i].c})
		if ac.hidden[int32(i)] {
			res.hide(noLevel(k)) // as groupRows looks it up
		}
	}
	// The entries name the rows.
	for id, o := range ac.objects {
		if ac.counts[id].c != (Counts{}) {
			if res.objects == nil {
				res.objects = make(map[Key]objectName)
			}
			res.objects[noLevel(ac.keys.at(id))] = o
		}
	}
	return m
}

// cumulate adds the sample (period c; self, its self entry) to the
// Children column of its self entry and of every distinct entry of its
// callchain, as perf report --children does. perf resolves the callchain
// whole first (thread__resolve_callchain_sample) in caller order, which
// --children implies unless an order is given: from the outermost frame
// in, each frame with the cpumode of the nearest context marker before it
// (find_prev_cpumode), at most maxStack frames; an unknown marker empties
// the chain. Each frame is an entry (fill_callchain_info: its raw
// address, the level of the maps its map came from, else the level left
// by the frame before, starting from the sample's), counted once per
// sample (iter_add_next_cumulative_entry's duplicate check).
func (a *attributor) cumulate(e *event, self int32, selfObj objectName, kernel, hyper bool, event int, c Counts) {
	ac := a.acc
	ac.stamp = uint32(a.res.Samples) // the sample's ordinal + 1
	ids := append(a.cumIDs[:0], self)
	hits := ac.objHits[:0]
	if selfObj.set {
		hits = append(hits, entryHit{0, selfObj})
	}
	// The entries without a map, in ids's order, with their levels:
	// perf makes a second entry of such an address with the level it has
	// then (countNoMap).
	nm := ac.noMapFrames[:0]
	if ac.counts[self].noMap {
		nm = append(nm, noMapFrame{e.ip, packLevel(kernel, hyper)})
	}
	vers := frameVersions{m: a.m, e: e}
	// fromCache appends the entry of the frame at ip when the frame cache
	// has it, and reports whether it had. Most frames are its (97.5 % of
	// the -a -g recording's): the walk of a plain chain has it inlined.
	// The frames of one cpumode share their maps' version and their
	// slots' tag: a thread's maps do not change during a walk, the
	// kernel's may (a kernel load), so that its version is compared.
	segMode, segVer, segTag, segOK := uint8(0xff), uint64(0), uint32(0), false
	fromCache := func(ip uint64, cpumode uint8) bool {
		if cpumode != segMode || cpumode != machine.CPUModeUser && a.m.KernelVersion() != segVer {
			segMode, segVer = cpumode, vers.of(cpumode)
			segTag, segOK = frameTag(segVer, cpumode, event, false)
		}
		slot := &ac.frames[slotHash(ip, segVer, ac.frameBits)]
		if slot.ip != ip || slot.tag|tagInMap != segTag|tagInMap || !segOK {
			return false
		}
		if slot.tag&tagInMap != 0 {
			kernel, hyper = cpumode == machine.CPUModeKernel, false
		} else { // noMapEntry's, made already
			nm = append(nm, noMapFrame{ip, packLevel(kernel, hyper)})
		}
		ids = append(ids, slot.id)
		return true
	}
	// enter appends the entry of the frame at ip of cpumode, found in
	// the map of st (nil: none) at symbol i of its table t (-1: none),
	// and reports whether the frame cache may keep it.
	enter := func(ip uint64, cpumode uint8, st *mapState, t *symbols.Table, i int) (id int32, cache bool) {
		if st == nil {
			id = ac.noMapEntry(ip, kernel, hyper, event)
			ids = append(ids, id)
			nm = append(nm, noMapFrame{ip, packLevel(kernel, hyper)})
			return id, true
		}
		kernel, hyper = cpumode == machine.CPUModeKernel, false
		cache = true
		if i >= 0 {
			id = ac.symEntry(st, t, i, event, ip)
			if t.IsObject(i) {
				// Its map names the entry's row: not cached, so that
				// every frame in it is resolved.
				hits = append(hits, entryHit{len(ids), objectHit(st.key.m, t.Symbol(i).Start, ip)})
				cache = false
			}
		} else {
			id = ac.addrEntry(st, ip, event)
		}
		ids = append(ids, id)
		return id, cache
	}
	// inlined appends the entry of an inlined function's frame.
	inlined := func(k Key, end uint64, base string) {
		kernel, hyper = false, false
		id := ac.entry(k)
		ac.setMeta(id, entryMeta{end: end, inlined: true, base: base})
		ac.anyInlined = true
		ids = append(ids, id)
	}
	cur := a.cursor
	// resolve appends the entry of the frame at ip, made if need be, and
	// caches it.
	resolve := func(ip uint64, cpumode uint8) {
		ver := vers.of(cpumode)
		slot := &ac.frames[slotHash(ip, ver, ac.frameBits)]
		tag, cache := frameTag(ver, cpumode, event, false)
		st, t, i := a.lookUpFrame(&vers, ip, cpumode)
		// Cached only while nothing changed the maps it was found in (a
		// kernel load does).
		cache = cache && vers.of(cpumode) == ver
		cur.noteFrame(ip, cpumode, st, t, i)
		id, entered := enter(ip, cpumode, st, t, i)
		switch {
		case !cache || !entered:
		case st == nil:
			*slot = frameSlot{ip: ip, tag: tag, id: id}
		case st.final: // and only once the table is final
			*slot = frameSlot{ip: ip, tag: tag | tagInMap, id: id}
		}
	}
	frame := func(ip uint64, cpumode uint8) {
		// The cursor needs every frame's map and symbol: the frame
		// cache keeps only entries.
		if cur != nil || !fromCache(ip, cpumode) {
			resolve(ip, cpumode)
		}
	}
	// perf resets the cursor before it makes any entry: a chain an
	// unknown marker empties (chainVoid) makes no entry, so that the
	// frames before the marker make none either (their level would
	// stay); their lookups are made (voidChainLookups).
	ok := !chainVoid(e)
	if cur.holds(e) {
		cur.replay(event, func(f *cursorFrame) { enter(f.ip, f.cpumode, f.st, f.t, int(f.i)) }, inlined)
	} else {
		cur.reset()
		switch {
		case !ok:
			a.voidChainLookups(e)
		case hasUserStack(e) || e.has(sampleLBR):
			ok = a.walkCallerOrderUnwound(e, frame, func(k Key, end uint64, base string) {
				cur.noteInlined(k, end, base)
				inlined(k, end, base)
			})
		default: // walkCallerOrder, with frame inlined
			for ip, cpumode := range callerOrder(e.addrs, &ok) {
				frame(ip, cpumode)
			}
		}
	}
	if !ok {
		ids = ids[:1] // perf resets the cursor
		for len(hits) > 0 && hits[len(hits)-1].i >= len(ids) {
			hits = hits[:len(hits)-1]
		}
		cur.reset()
	}
	var owner int32
	if ac.log != nil { // only the replay tells maps apart: no lookup per sample else
		owner = a.execs.owner(e.pid)
	}
	ac.count(ids, hits, nm, event, c, owner)
	// The buffers are kept for the next sample when they grew: storing
	// them for every sample wrote three pointers under the collector's
	// barrier, 10 ms of the -a -g children table.
	if cap(ids) != cap(a.cumIDs) {
		a.cumIDs = ids
	}
	if cap(nm) != cap(ac.noMapFrames) {
		ac.noMapFrames = nm[:0]
	}
	if cap(hits) != cap(ac.objHits) {
		ac.objHits = hits
	}
}

// chainCursor is perf's callchain cursor as a children table needs it
// when some of the recording's events have callchains and some do not.
// perf report resolves a sample's callchain into one cursor
// (sample__resolve_callchain), and a sample without a callchain returns
// before resetting it: perf 6.1 walks what the last sample with a
// callchain left there (iter_next_cumulative_entry), so that such a
// sample counts in the Children column of that sample's frames, as
// resolved then, under its own event. frames are those, in caller order.
type chainCursor struct {
	chainless []bool // per event: its samples have no callchain
	frames    []cursorFrame
}

// cursorFrame is a frame of the cursor: at ip, of cpumode, in the map of
// st (nil: none) at symbol i of its table t then (-1: none); or an
// inlined function's (inline, with accumulator.setMeta's end and base).
type cursorFrame struct {
	ip      uint64
	cpumode uint8
	st      *mapState
	t       *symbols.Table
	i       int32
	inline  *Key
	end     uint64
	base    string
}

// newChainCursor returns the cursor of a recording of events attrs, nil
// when all or none of them have callchains (then no sample sees another's
// frames: the cursor is reset by every sample or never filled).
func newChainCursor(attrs []*perfdata.Attr) *chainCursor {
	c := &chainCursor{chainless: make([]bool, len(attrs))}
	n := 0
	for i, at := range attrs {
		if at.SampleType&perfdata.SampleFormatCallchain == 0 {
			c.chainless[i] = true
			n++
		}
	}
	if n == 0 || n == len(attrs) {
		return nil
	}
	return c
}

// The methods below do nothing on a nil cursor (none kept): callers
// need not check.

// holds reports whether sample e counts in the cursor's frames (its event
// has no callchain of its own).
func (c *chainCursor) holds(e *event) bool { return c != nil && c.chainless[e.attr] }

// reset empties the cursor, as thread__resolve_callchain does first.
func (c *chainCursor) reset() {
	if c != nil {
		c.frames = c.frames[:0]
	}
}

// noteFrame appends a frame at ip of cpumode, in the map of st (nil:
// none) at symbol i of table t (-1: none).
func (c *chainCursor) noteFrame(ip uint64, cpumode uint8, st *mapState, t *symbols.Table, i int) {
	if c != nil {
		c.frames = append(c.frames, cursorFrame{ip: ip, cpumode: cpumode, st: st, t: t, i: int32(i)})
	}
}

// noteInlined appends an inlined function's frame (entry key k, with
// accumulator.setMeta's end and base).
func (c *chainCursor) noteInlined(k Key, end uint64, base string) {
	if c != nil {
		c.frames = append(c.frames, cursorFrame{inline: &k, end: end, base: base})
	}
}

// replay walks the cursor's frames for a sample of event, in caller
// order: frame for each frame in a map or in none, inlined for each
// inlined function's, its key made the event's.
func (c *chainCursor) replay(event int, frame func(f *cursorFrame), inlined func(k Key, end uint64, base string)) {
	for i := range c.frames {
		f := &c.frames[i]
		if f.inline != nil {
			k := *f.inline
			k.Event = event
			inlined(k, f.end, f.base)
		} else {
			frame(f)
		}
	}
}

// count counts a sample of period c in its entries ids (its own, then
// its callchain's in caller order), each once; nm are those without a
// map, in order; owner, its user maps' (execs.owner).
func (ac *accumulator) count(ids []int32, hits []entryHit, nm []noMapFrame, event int, c Counts, owner int32) {
	tree := ac.treeStarted(event)
	next := hits
	for i, id := range ids {
		e := &ac.counts[id]
		if len(next) > 0 && next[0].i == i {
			if e.stamp != ac.stamp { // perf merges it into the entry
				o := ac.objects[id]
				o.note(next[0].h)
				ac.objects[id] = o
			}
			next = next[1:]
		}
		switch {
		case e.stamp == ac.stamp: // counted for the sample (i > 0)
		case e.noMap && (tree || e.stamp == 0):
			ac.countNoMap(i, id, event, c, nm[0])
			tree = ac.orders[event].started // it may start now
		case e.stamp == 0:
			ac.enter(id, event) // perf makes its entry now
			fallthrough
		default:
			e.stamp = ac.stamp
			e.c.add(c)
		}
		if e.noMap {
			nm = nm[1:]
		}
	}
	if ac.log != nil {
		ac.log.add(ids, hits, c, owner)
	}
}

// noMapFrame is a frame outside every map: its address, its entry's key
// (noMapEntry), which count passes on rather than read the key again (a
// cache miss a frame: about 4 % of the attributor's time on the -a -g
// children table), and its level (packLevel).
type noMapFrame struct {
	addr  uint64
	level uint8
}

// chainVoid reports whether an unknown context marker empties e's
// callchain in caller order (walkCallerOrder returns false): perf then
// resolves no frame of it, so the walk's frames must make no entry or
// row. Only a chain holding such a marker is walked to find out, and
// only the chain: unwound user frames (walkCallerOrderUnwound) come
// before it and cannot void it. A chain the decoder looked at already
// (sampleKnownMarkers) is not looked at again.
func chainVoid(e *event) bool {
	if e.has(sampleKnownMarkers) {
		return false
	}
	return !knownMarkers(e.addrs) && !walkCallerOrder(e.addrs, func(uint64, uint8) {})
}

// voidChainLookups makes the lookups perf makes in e's chain, which an
// unknown marker empties (chainVoid): thread__resolve_callchain_sample
// looks up each frame before the marker, in caller order
// (add_callchain_ip), and the marker then resets the cursor, as
// thread__resolve_callchain_unwind's frames before it are looked up
// too. The frames make no entry, but their lookups load what they find
// (the kernel, a module's file, a DSO's symbols, which fail the lookup
// that loads them) and leave a module's last lookup as perf's (findIn),
// which a later lookup of the same address answers with.
func (a *attributor) voidChainLookups(e *event) {
	if e.has(sampleLBR) {
		return // an LBR call stack is not voided so (walkLBRCallerOrder)
	}
	vers := frameVersions{m: a.m, e: e}
	a.walkCallerOrderUnwound(e, func(ip uint64, cpumode uint8) { a.lookUpFrame(&vers, ip, cpumode) }, func(Key, uint64, string) {})
}

// lookUpFrame is perf's lookup of a callchain frame at ip of cpumode
// (add_callchain_ip, thread__find_symbol), uncached: its map (which the
// lookup may load), the map's state (nil: no map), its symbol table then
// and the index of its symbol there (-1: none).
func (a *attributor) lookUpFrame(vers *frameVersions, ip uint64, cpumode uint8) (st *mapState, t *symbols.Table, i int) {
	mp, found := vers.resolve(cpumode, ip)
	if !found {
		return nil, nil, -1
	}
	st = a.cnt.state(mp, cpumode == machine.CPUModeKernel)
	t = a.stateTable(st)
	return st, t, a.sym.findIn(mp, t, mp.MapIP(ip))
}

// sampleKnownMarkers marks a SAMPLE event (event.kf) whose callchain
// the decoder found no unknown context marker in (knownMarkers).
const sampleKnownMarkers = 0x20

// walkCallerOrder calls frame for each frame of chain in caller order
// (callerOrder). It returns false when an unknown marker empties the
// chain; the frames reported before are then void.
func walkCallerOrder(chain []uint64, frame func(ip uint64, cpumode uint8)) bool {
	valid := true
	for ip, cpumode := range callerOrder(chain, &valid) {
		frame(ip, cpumode)
	}
	return valid
}

// callerOrder yields the frames of chain in caller order, as perf report
// --children resolves them (thread__resolve_callchain_sample with
// ORDER_CALLER): from the outermost frame in, each with the cpumode of
// the nearest context marker before it (find_prev_cpumode), at most
// maxStack frames. At an unknown marker, which empties the chain, it
// stops and sets *valid to false: the frames yielded before are void.
// It is small enough to be inlined with its loop's body, which then
// makes no call per frame (9 M frames on the -a -g recording; its
// children table took 0.6-1.5 % less time than with walkCallerOrder's).
func callerOrder(chain []uint64, valid *bool) iter.Seq2[uint64, uint8] {
	return func(yield func(uint64, uint8) bool) {
		cpumode, ok := markerBefore(chain, len(chain), machine.CPUModeUser)
		for j, n := len(chain)-1, 0; ok && j >= 0 && n < maxStack; j-- {
			if ip := chain[j]; ip < contextMax {
				n++
				if !yield(ip, cpumode) {
					return
				}
			} else {
				cpumode, ok = markerBefore(chain, j, cpumode)
			}
		}
		*valid = ok
	}
}

// markerBefore returns the cpumode of the context marker nearest before
// index ent of chain (none: cpumode), and false for an unknown marker.
func markerBefore(chain []uint64, ent int, cpumode uint8) (uint8, bool) {
	for ent--; ent >= 0; ent-- {
		if chain[ent] >= contextMax {
			return contextMode(chain[ent])
		}
	}
	return cpumode, true
}

// slotHash picks the slot of an address under a version of the maps (the
// frame cache) or in an address space (the sample cache:
// sampleSlotIndex), in a cache of 1<<bits slots.
func slotHash(ip, key uint64, bits uint) uint64 {
	return ((ip ^ key<<20) * 0x9e3779b97f4a7c15) >> (64 - bits)
}
