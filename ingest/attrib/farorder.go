package attrib

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/kmapindex/kmapindex/ingest/rbtree"
	"github.com/kmapindex/kmapindex/ingest/symbols"
)

// A children table's entries of addresses outside every map compare by
// their wrapped difference (_sort__addr_cmp: right - left, as a signed
// number). While every such address of an event lies on one arc of less
// than 2^63, going round the address space, that is an order, perf's
// tree of hist entries finds each address's one entry, and its in-order
// walk, which orders the rows the output sort finds equal, is that
// arc's order: the accumulator's keys and tableOrder's signed addresses
// give perf's table. Frame-pointer walks through code built without
// frame pointers read garbage "return addresses" from all over the
// space, though, and once two lie 2^63 or more apart the comparison is
// no order: perf's search can miss an address's entry and make a second
// one (a row of its own), and the walk follows the tree's shape. From
// that moment on, per event, perf's tree is rebuilt as perf has it
// (package rbtree, its entries kept compact: entryTree): the entries made
// so far, in the order they were made (which is perf's, and whose
// comparisons were consistent until then), then each entry as it is
// made, and a search per sample for each address outside every map, as
// hists__findnew_entry searches. Entries with a map compare consistently
// with everything, so they are found without a search. The tree is kept
// by a goroutine of its own (treeWorker), fed in batches: the searches
// read a node a level from memory, and on the -a -g recording, done by
// the attributor, they took its children table from 0.61 to 0.81 s; the
// core the decoder leaves idle does them instead (0.72 s). It counts the samples of the
// addresses it searched for per tree entry, merged into the
// accumulator's entries at the end (finishTrees).

// noMapOrder is one event's arc of addresses outside every map, until
// it reaches 2^63 and the event's tree starts.
type noMapOrder struct {
	arc     addrArc
	started bool
}

// addrArc is the shortest arc, going up from lo for span bytes round
// the address space, that holds every address added.
type addrArc struct {
	lo, span uint64
	any      bool
}

// add adds addr and reports whether the arc stays shorter than 2^63 (so
// that the addresses' wrapped differences are an order). The shortest
// arc holding the old one and addr is one of its two extensions.
func (a *addrArc) add(addr uint64) bool {
	switch {
	case !a.any:
		a.lo, a.any = addr, true
	case addr-a.lo <= a.span:
	default:
		up := addr - a.lo            // lo up to addr
		down := a.lo + a.span - addr // addr up to the old end
		if up <= down {
			a.span = up
		} else {
			a.lo, a.span = addr, down
		}
	}
	return a.span < 1<<63
}

// countNoMap counts the sample (period c) for accumulator entry id, of
// frame f outside every map, not counted for the sample yet: the i-th of
// the sample's entries (0: its own). Once its event's tree started, the
// tree's worker finds the entry perf counts it in.
func (ac *accumulator) countNoMap(i int, id int32, event int, c Counts, f noMapFrame) {
	o := ac.noMapOrder(event)
	if !o.started {
		if ac.counts[id].stamp == 0 {
			if !o.arc.add(f.addr) {
				ac.startTree(o, event)
			} else {
				ac.made = append(ac.made, id)
			}
		}
		if !o.started {
			ac.add(id, c)
			return
		}
	}
	ac.counts[id].stamp = ac.stamp // for the sample's later frames
	ac.trees.search(id, event, f.addr, c, f.level, i == 0, ac.hiding)
}

// noMapOrder returns event's noMapOrder, made on first use.
func (ac *accumulator) noMapOrder(event int) *noMapOrder {
	for event >= len(ac.orders) {
		ac.orders = append(ac.orders, nil)
	}
	if ac.orders[event] == nil {
		ac.orders[event] = &noMapOrder{}
	}
	return ac.orders[event]
}

// treeStarted reports whether event's tree started.
func (ac *accumulator) treeStarted(event int) bool {
	return event < len(ac.orders) && ac.orders[event] != nil && ac.orders[event].started
}

// startTree starts event's tree as perf has it now: the event's entries
// counted so far, in the order they were first counted (ac.made), which
// is the order perf made them in.
func (ac *accumulator) startTree(o *noMapOrder, event int) {
	o.started = true
	if ac.trees == nil {
		ac.trees = newTreeWorker()
	}
	for _, id := range ac.made {
		if int(ac.keys.ptr(id).event) == event {
			ac.sendInsert(id, event)
		}
	}
}

// enter notes an entry with a map counted for the first time, when
// perf makes it: in its event's tree, if the event has one, else in
// ac.made for a tree started later.
func (ac *accumulator) enter(id int32, event int) {
	if ac.treeStarted(event) {
		ac.sendInsert(id, event)
		return
	}
	ac.made = append(ac.made, id)
}

// sendInsert has the worker link entry id into its event's tree.
func (ac *accumulator) sendInsert(id int32, event int) {
	k := ac.keys.at(id)
	if k.DSO == symbols.Unknown {
		ac.trees.insert(id, event, k.Addr, nil)
		return
	}
	nk := namedKey{name: ShortName(k.DSO, k.Kernel)}
	if k.Sym != symbols.Unknown {
		nk.sym, nk.end = true, ac.meta.at(id).end
	}
	ac.trees.insert(id, event, k.Addr, &nk)
}

// finishTrees waits for the trees' worker and merges its counts: an
// address's first tree entry's into its accumulator entry, the others'
// into entries of their own (Key.dup, with the level and hidden mark of
// the frame that made them; their Self column in movedSelf). It returns
// the ranking of the rows of addresses outside every map by their trees'
// in-order walks (ac.ranks), to run once it returned and before release
// lets go of the trees. rank is nil when there are no trees.
func (ac *accumulator) finishTrees() (rank func()) {
	arcs := ac.crossingArcs()
	w := ac.trees
	if w == nil {
		if len(arcs) == 0 {
			return nil
		}
		return func() {
			ac.ranks = newRowRanks(0)
			ac.rankArcs(arcs)
		}
	}
	w.close()
	hiding := ac.hiding
	defer func() { ac.hiding = hiding }()
	events := slices.Sorted(maps.Keys(w.trees))
	n := 0 // the ranks
	for _, ev := range events {
		wt := w.trees[ev]
		for te := range int32(wt.entries.len()) {
			x := wt.entries.ptr(te)
			ow := &x.owner
			if !ow.noMap {
				continue
			}
			n++
			if ow.dup == 0 {
				ac.counts[ow.id].c.add(x.counts)
				continue
			}
			k := ac.keys.at(ow.id)
			k.dup = ow.dup
			k.Kernel, k.Hyper = unpackLevel(ow.level)
			ac.hiding = ow.hidden
			id := ac.newEntry(k)
			ac.counts[id].c, ac.counts[id].noMap = x.counts, true
			if self := wt.selfOf(te); self != (Counts{}) {
				if ac.movedSelf == nil {
					ac.movedSelf = make(map[int32]Counts)
				}
				ac.movedSelf[id] = self
			}
			ow.id = id
		}
	}
	return func() {
		// One rank per entry of an address, sized up front: the map's
		// growth was half of its making in a CPU profile of the -a -g
		// children table, whose trees then finished 2 ms sooner (22.2 ->
		// 20.2 ms).
		ac.ranks = newRowRanks(n)
		for _, ev := range events {
			wt := w.trees[ev]
			i := int32(0)
			for node := wt.t.tree.First(); node != nil; node = node.Next() {
				// An entry of an address is ranked by the address its
				// node holds, the event and its dup: reading its key
				// missed the cache once more a node.
				if ow := wt.entries.ptr(node.Value).owner; ow.noMap {
					ac.ranks.setNoMap(wt.t.key(node.Value).a, int(ev), ow.dup, i)
				}
				i++
			}
		}
		ac.rankArcs(arcs)
	}
}

// crossingArcs returns, by event, the start of the arc of addresses
// outside every map of each event whose tree did not start and whose
// arc holds both 2^63-1 and 2^63. Those addresses' wrapped differences
// are an order, the arc's from its start, which perf's tree walks; but
// as signed numbers, the order tableOrder falls back on, the arc's part
// from 2^63 on comes first. Stack words read as return addresses (ASCII text, such
// as 0x64706b42464f564e and 0xe3a4bae49088e688 in a foreign recording)
// make such arcs.
func (ac *accumulator) crossingArcs() map[int]uint64 {
	var arcs map[int]uint64
	for ev, o := range ac.orders {
		if o == nil || o.started || !o.arc.any {
			continue
		}
		if a := o.arc; 1<<63-a.lo <= a.span { // holds 1<<63, and 1<<63-1 before it
			if arcs == nil {
				arcs = make(map[int]uint64)
			}
			arcs[ev] = a.lo
		}
	}
	return arcs
}

// rankArcs ranks the entries of addresses outside every map of the
// events of arcs (crossingArcs) by their place on the event's arc.
func (ac *accumulator) rankArcs(arcs map[int]uint64) {
	if len(arcs) == 0 {
		return
	}
	type onArc struct {
		off, addr uint64
		event     int
	}
	var all []onArc
	ac.noMap.each(func(addr uint64, tag uint32, _ int32) {
		if lo, ok := arcs[int(tag)]; ok {
			all = append(all, onArc{addr - lo, addr, int(tag)})
		}
	})
	slices.SortFunc(all, func(x, y onArc) int { return cmp.Compare(x.off, y.off) })
	for i, x := range all {
		ac.ranks.setNoMap(x.addr, x.event, 0, int32(i))
	}
}

// stopTrees stops the trees' worker, if any.
func (ac *accumulator) stopTrees() {
	if ac.trees != nil {
		ac.trees.close()
	}
	ac.stopReplay()
}

// treeWorker keeps the trees on a goroutine of its own: ops come in
// batches, and its state is read once it is done.
type treeWorker struct {
	ops, free chan *treeBatch
	batch     *treeBatch
	done      chan struct{}
	closed    bool
	trees     map[int32]*workerTree // per event
}

// workerTree is an event's tree, and per tree entry its accumulator
// entry and the counts of the searches that found it.
type workerTree struct {
	t *entryTree
	// entries are, per tree entry, its owner and counts: in chunks that
	// never move (a gcc build's -a -g recording made 1.2 M, and slices
	// that doubled allocated 117 MB for them, copying as they grew).
	entries chunked[treeEntry]
	// selfs are, per tree entry, the counts of the searches for a
	// sample's own address, made at the first such search: samples
	// outside every map are few or none (none of a gcc build's 1.48 M),
	// and 16 bytes a tree entry were 6.6 MB of its children table.
	selfs chunked[Counts] // empty until the first such search
	// last is, per accumulator entry of an address (its index), the
	// tree entry its last search found, and moved then + 1: a search
	// for the address ends there again until a rotation changes that
	// (rotated).
	last   []lastSearch
	moved  uint32          // bumped when a rotation may have changed any search's end (voidAll)
	below  []*rbtree.Node  // rotated's, reused
	inTree []bool          // per accumulator entry of an address: it has a tree entry
	dups   map[int32]int32 // per accumulator entry of an address: its tree entries after the first
}

// treeEntry is a tree entry's owner, and the counts of the searches
// that found it (those for a sample's own address: workerTree.selfs).
type treeEntry struct {
	owner  treeOwner
	counts Counts
}

type treeOwner struct {
	id, dup int32
	level   uint8
	noMap   bool
	hidden  bool
}

// lastSearch is 8 bytes, not 16 with a 64-bit count: one per
// accumulator entry, they were 9.7 MB of a gcc build's children table.
type lastSearch struct {
	moves uint32
	found int32
}

// voidAll voids every last search's answer: moved is bumped, and once it
// would wrap round, the answers are voided one by one and it starts over.
func (wt *workerTree) voidAll() {
	if wt.moved+1 == math.MaxUint32 {
		clear(wt.last)
		wt.moved = 0
		return
	}
	wt.moved++
}

// treeOp is an insertion (an entry made: its key, for an entry with a
// map the rest of it in the batch's named[arg]) or a search (an address's
// occurrence in a sample, with the sample's counts, the batch's
// counts[arg], whether it is the sample's own entry, and the level and
// hidden mark a new entry would have). It holds no pointer, and the
// counts and names are kept apart, a sample's counts once for its
// searches in a row: the attributor sends an op for every frame outside
// every map once an event's tree started (0.9 M on the -a -g recording),
// 24 bytes each where they were 56.
type treeOp struct {
	a     uint64 // the address, or an entry with a map's: its key's
	id    int32
	event int32
	arg   uint32
	kind  uint8
	flags uint8 // a search's opSelf, opHidden and level (packLevel) << 2
}

const (
	opInsert = iota
	opInsertNamed
	opSearch
)

const (
	opSelf = 1 << iota
	opHidden
	opLevelShift = iota
)

// treeBatch is ops sent together, and the counts and keys they refer to.
type treeBatch struct {
	ops    []treeOp
	counts []Counts
	named  []namedKey
}

// namedKey is what an entry with a map's tree key holds beyond its
// address: its DSO's short name and, for a symbol's entry, its end.
type namedKey struct {
	end  uint64
	name string
	sym  bool
}

const treeBatchOps = 2048

func newTreeWorker() *treeWorker {
	w := &treeWorker{ops: make(chan *treeBatch, 8), free: make(chan *treeBatch, 10), done: make(chan struct{}), trees: map[int32]*workerTree{}}
	w.batch = &treeBatch{ops: make([]treeOp, 0, treeBatchOps)}
	go w.run()
	return w
}

// search queues a search for an address's entry id, of event, in a
// sample of counts c; level and hidden are those of an entry it makes,
// self says it is the sample's own.
func (w *treeWorker) search(id int32, event int, addr uint64, c Counts, level uint8, self, hidden bool) {
	b := w.batch
	if n := len(b.counts); n == 0 || b.counts[n-1] != c {
		b.counts = append(b.counts, c)
	}
	flags := level << opLevelShift
	if self {
		flags |= opSelf
	}
	if hidden {
		flags |= opHidden
	}
	w.queue(treeOp{kind: opSearch, a: addr, id: id, event: int32(event), arg: uint32(len(b.counts) - 1), flags: flags})
}

// insert queues the insertion of entry id, of event, at address addr:
// with nk, an entry with a map, of symbol start addr if nk.sym.
func (w *treeWorker) insert(id int32, event int, addr uint64, nk *namedKey) {
	op := treeOp{kind: opInsert, a: addr, id: id, event: int32(event)}
	if nk != nil {
		op.kind, op.arg = opInsertNamed, uint32(len(w.batch.named))
		w.batch.named = append(w.batch.named, *nk)
	}
	w.queue(op)
}

// queue adds op to the batch, and sends the batch once full.
func (w *treeWorker) queue(op treeOp) {
	w.batch.ops = append(w.batch.ops, op)
	if len(w.batch.ops) == treeBatchOps {
		w.ops <- w.batch
		select {
		case b := <-w.free:
			b.ops, b.counts, b.named = b.ops[:0], b.counts[:0], b.named[:0]
			w.batch = b
		default:
			w.batch = &treeBatch{ops: make([]treeOp, 0, treeBatchOps)}
		}
	}
}

// close sends what is queued and waits for the worker; again, nothing.
func (w *treeWorker) close() {
	if w.closed {
		return
	}
	w.closed = true
	if len(w.batch.ops) > 0 {
		w.ops <- w.batch
	}
	close(w.ops)
	<-w.done
}

func (w *treeWorker) run() {
	defer close(w.done)
	for b := range w.ops {
		for i := range b.ops {
			w.apply(&b.ops[i], b)
		}
		select {
		case w.free <- b:
		default:
		}
	}
}

func (w *treeWorker) apply(op *treeOp, b *treeBatch) {
	wt := w.trees[op.event]
	if wt == nil {
		wt = &workerTree{t: &entryTree{names: map[string]int32{}}, dups: map[int32]int32{}}
		wt.t.tree.Rotated = wt.rotated
		w.trees[op.event] = wt
	}
	if int(op.id) >= len(wt.inTree) {
		// Doubling (see accumulator.newEntry). Neither is ever cut
		// short, so the elements grown into are zero.
		n := max(int(op.id)+1, 2*len(wt.inTree))
		wt.inTree = slices.Grow(wt.inTree, n-len(wt.inTree))[:n]
		wt.last = slices.Grow(wt.last, n-len(wt.last))[:n]
	}
	key := treeKey{a: op.a, noMap: true}
	if op.kind != opSearch {
		if op.kind == opInsertNamed {
			nk := &b.named[op.arg]
			key = treeKey{a: op.a, b: nk.end, sym: nk.sym, dso: wt.t.intern(nk.name)}
		}
		if wt.t.find(key) == int32(wt.entries.len()) {
			wt.newOwner(treeOwner{id: op.id, noMap: key.noMap})
			wt.inTree[op.id] = wt.inTree[op.id] || key.noMap
		}
		return
	}
	te := wt.last[op.id].found
	if wt.last[op.id].moves != wt.moved+1 {
		te = wt.t.find(key)
		if te == int32(wt.entries.len()) { // made
			ow := treeOwner{id: op.id, level: op.flags >> opLevelShift, noMap: true, hidden: op.flags&opHidden != 0}
			if wt.inTree[op.id] {
				wt.dups[op.id]++
				ow.dup = wt.dups[op.id]
			}
			wt.newOwner(ow)
			wt.inTree[op.id] = true
		}
		wt.last[op.id] = lastSearch{wt.moved + 1, te}
	}
	c := b.counts[op.arg]
	x := wt.entries.ptr(te)
	x.counts.add(c)
	if op.flags&opSelf != 0 {
		wt.self(te).add(c)
	}
}

// rotated keeps last right after a rotation of the tree: it voids the
// answers the rotation may have changed, not all of them. (On the -a -g
// recording, whose 0.9 M searches walked the tree 425 k times when any
// rotation voided every answer, they walk it 82 k times, most of them
// first searches; the worker's CPU time fell by a quarter.)
//
// A search for an address ends at the first entry of that address on
// its path, and its path to an entry E follows E's ancestors. A rotation
// gives one more ancestor, the risen node R, to the lowered node and its
// subtree on the side away from R, and to no other node; the others keep
// their ancestors or lose some, which changes no search's end. A search
// for E's address that ended at E still does unless it compares with R
// otherwise than E's side of R says: the same address, or the other way.
//
// R with a map compares with every E as E's side of it says: the tree's
// in-order walk orders each pair of entries holding one with a map as
// the comparison does. Linking a new entry keeps that (it goes between
// the two entries on its path it falls between, and a comparison with an
// entry with a map is an order in which nullCmp puts every entry outside
// every map on one side of them all), and rotations keep the walk. So
// only an R outside every map is checked, against each entry of an
// address below it; past rotationCheckMax of them, every answer is voided.
func (wt *workerTree) rotated(risen, lowered *rbtree.Node) {
	r := wt.t.key(risen.Value)
	if !r.noMap {
		return
	}
	left := risen.Left() == lowered
	below := append(wt.below[:0], lowered)
	if left {
		below = append(below, lowered.Left())
	} else {
		below = append(below, lowered.Right())
	}
	for seen := 0; len(below) > 0; {
		n := below[len(below)-1]
		below = below[:len(below)-1]
		if n == nil {
			continue
		}
		if seen++; seen > rotationCheckMax {
			wt.voidAll()
			break
		}
		if n != lowered {
			below = append(below, n.Left(), n.Right())
		}
		e := wt.t.key(n.Value)
		if !e.noMap {
			continue
		}
		// find's comparison, node first: below 0 goes left. The entry
		// being linked has no owner yet, and is never below: the
		// rebalancing raises its ancestors and lowers nodes off its path
		// (rbtree's TestRotatedReportsNewAncestors checks it).
		if c := wt.t.compare(r, e); c == 0 || (c < 0) != left {
			if te := n.Value; int(te) < wt.entries.len() && int(wt.entries.ptr(te).owner.id) < len(wt.last) {
				wt.last[wt.entries.ptr(te).owner.id].moves = 0
			}
		}
	}
	wt.below = below[:0]
}

// rotationCheckMax bounds the entries rotated checks (lowered by tests).
var rotationCheckMax = 64

func (wt *workerTree) newOwner(ow treeOwner) {
	wt.entries.append(treeEntry{owner: ow})
	if wt.selfs.len() > 0 {
		wt.selfs.append(Counts{})
	}
}

// self returns the address of tree entry te's counts of searches for a
// sample's own address, making selfs if need be.
func (wt *workerTree) self(te int32) *Counts {
	for wt.selfs.len() < wt.entries.len() { // at the first call: newOwner keeps them in step after
		wt.selfs.append(Counts{})
	}
	return wt.selfs.ptr(te)
}

// selfOf returns tree entry te's counts of searches for a sample's own
// address.
func (wt *workerTree) selfOf(te int32) Counts {
	if wt.selfs.len() == 0 {
		return Counts{}
	}
	return wt.selfs.at(te)
}

// rankKey tells apart the rows Result.noMapRanks orders: those of
// addresses outside every map, and the rows of one key perf's tree kept
// apart (Key.dup).
type rankKey struct {
	dso, sym   string
	addr       uint64
	event, dup int32
}

func rankKeyOf(k Key) rankKey { return rankKey{k.DSO, k.Sym, k.Addr, int32(k.Event), k.dup} }

// rowRanks holds the ranks of Result.noMapRanks: those of rows without a
// map by address, event and dup alone, in a table without strings (a gcc
// build's -a -g children table ranks 382 k such rows; keyed by their
// names too, making and reading the ranks took 0.33 s of its CPU, the
// table 2.96 s against 2.89 so), the others by their whole rankKey.
// Rows without a map whose event and dup do not fit a tag (noMapTag)
// are rare's.
type rowRanks struct {
	noMap *addrTable
	rare  map[noMapRank]int32
	named map[rankKey]int32
}

// noMapRank is the rankKey of a row without a map (DSO and symbol
// symbols.Unknown).
type noMapRank struct {
	addr       uint64
	event, dup int32
}

// newRowRanks returns ranks with room for n rows without a map.
func newRowRanks(n int) *rowRanks {
	return &rowRanks{noMap: newAddrTable(n), rare: map[noMapRank]int32{}, named: map[rankKey]int32{}}
}

// noMapTag packs a row's event and dup into an addrTable tag, if they fit.
func noMapTag(event int, dup int32) (uint32, bool) {
	if event < 0 || event >= 1<<16 || dup < 0 || dup >= 1<<15 {
		return 0, false
	}
	return uint32(event) | uint32(dup)<<16, true
}

func isNoMapKey(k *Key) bool { return k.DSO == symbols.Unknown && k.Sym == symbols.Unknown }

// set ranks the row of key k.
func (r *rowRanks) set(k *Key, rank int32) {
	if isNoMapKey(k) {
		r.setNoMap(k.Addr, k.Event, k.dup, rank)
	} else {
		r.named[rankKeyOf(*k)] = rank
	}
}

// setNoMap ranks the row without a map of address addr, event and dup.
func (r *rowRanks) setNoMap(addr uint64, event int, dup, rank int32) {
	if tag, ok := noMapTag(event, dup); ok {
		r.noMap.set(addr, tag, rank)
	} else {
		r.rare[noMapRank{addr, int32(event), dup}] = rank
	}
}

// get returns the rank of the row of key k, if it has one; a nil r has
// none.
func (r *rowRanks) get(k *Key) (int32, bool) {
	if r == nil {
		return 0, false
	}
	var rank int32
	var ok bool
	if isNoMapKey(k) {
		return r.getNoMap(k.Addr, k.Event, k.dup)
	}
	if len(r.named) > 0 {
		rank, ok = r.named[rankKeyOf(*k)]
	}
	return rank, ok
}

// getNoMap returns the rank of the row without a map of address addr,
// event and dup, if it has one (setNoMap's).
func (r *rowRanks) getNoMap(addr uint64, event int, dup int32) (int32, bool) {
	if tag, ok := noMapTag(event, dup); ok {
		return r.noMap.get(addr, tag)
	}
	rank, ok := r.rare[noMapRank{addr, int32(event), dup}]
	return rank, ok
}

// selfColumn returns the children table's Self column when entries made
// for samples' own addresses took some of bySym's counts (movedSelf):
// bySym with those moved to their rows; nil when none did.
func (ac *accumulator) selfColumn(bySym map[Key]Counts) map[Key]Counts {
	if ac.movedSelf == nil {
		return nil
	}
	self := make(map[Key]Counts, len(bySym)+len(ac.movedSelf))
	for k, c := range bySym {
		self[k] = c
	}
	for pe, moved := range ac.movedSelf {
		k := ac.keys.at(pe)
		k.dup = 0
		// The sample's key has the sample's level, which the entry,
		// first made for a callchain, may not.
		for _, lv := range [][2]bool{{k.Kernel, k.Hyper}, {false, false}, {true, false}, {false, true}} {
			k.Kernel, k.Hyper = lv[0], lv[1]
			if c, ok := self[k]; ok {
				c.Samples -= moved.Samples
				c.Period -= moved.Period
				self[k] = c
				k.dup = ac.keys.ptr(pe).dup
				self[k] = moved
				break
			}
		}
	}
	return self
}

// packLevel packs an entry's level for cumulate's list of them.
func packLevel(kernel, hyper bool) uint8 {
	var l uint8
	if kernel {
		l |= 1
	}
	if hyper {
		l |= 2
	}
	return l
}

func unpackLevel(l uint8) (kernel, hyper bool) { return l&1 != 0, l&2 != 0 }

// entryTree is perf's tree of a children table's hist entries by dso,sym
// (hists->entries_in), searched as hists__findnew_entry searches, its
// entries kept small: a search for an address reads a node and its key
// at each level, adjacent in memory. (histTree holds what any sort key
// compares, 112 bytes an entry: on the -a -g recording, with 32 k
// entries and 0.9 M searches, 239 k of them walking the tree, this one
// took the children table's peak RSS from 58.9 to 54.4 MB.)
type entryTree struct {
	tree  rbtree.Tree
	nodes [][]treeNode // in blocks, which do not move
	n     int
	names map[string]int32 // the DSOs' short names, by id
	short []string
}

// treeNode is a node and what perf's comparison reads of its entry.
type treeNode struct {
	node rbtree.Node
	key  treeKey
}

// treeKey is what sort__dso_cmp and sort__sym_cmp read of an entry: its
// DSO's short name (an id into short) unless noMap; with sym, its
// symbol's start (a) and end (b), else its address (a). An inlined
// function's entry compares as its symbol's: the tree is then replayed
// whole (accumulator.replay), and these answers are not used.
type treeKey struct {
	a, b  uint64
	dso   int32
	noMap bool
	sym   bool
}

const treeBlock = 1024

func (t *entryTree) key(i int32) *treeKey { return &t.nodes[i/treeBlock][i%treeBlock].key }

// find returns the entry perf's search for k ends in, made (and linked
// where the search ended) if it finds none.
func (t *entryTree) find(k treeKey) int32 {
	found, parent, left := t.search(&k)
	if found != nil {
		return found.Value
	}
	if t.n%treeBlock == 0 {
		t.nodes = append(t.nodes, make([]treeNode, treeBlock))
	}
	tn := &t.nodes[t.n/treeBlock][t.n%treeBlock]
	tn.key, tn.node.Value = k, int32(t.n)
	t.n++
	t.tree.Link(&tn.node, parent, left)
	return tn.node.Value
}

// search returns the entry perf's search for k ends in, or nil and
// where it fell off the tree.
func (t *entryTree) search(k *treeKey) (found, parent *rbtree.Node, left bool) {
	for n := t.tree.Root(); n != nil; {
		parent = n
		c := t.compare(t.key(n.Value), k)
		if c == 0 {
			return n, nil, false
		}
		if c < 0 {
			n, left = n.Left(), true
		} else {
			n, left = n.Right(), false
		}
	}
	return nil, parent, left
}

// compare is hist_entry__cmp(l, r) by dso,sym: histTree.compare's
// dsoCmp and symCmp on treeKeys.
func (t *entryTree) compare(l, r *treeKey) int {
	if l.noMap || r.noMap {
		if c := nullCmp(!l.noMap, !r.noMap); c != 0 {
			return c
		}
	} else if l.dso != r.dso {
		if c := strings.Compare(t.short[r.dso], t.short[l.dso]); c != 0 {
			return c
		}
	}
	switch {
	case !l.sym && !r.sym:
		return addrCmp(l.a, r.a)
	case !l.sym || !r.sym:
		return nullCmp(l.sym, r.sym)
	case l.a != r.a:
		return addrCmp(l.a, r.a)
	}
	return addrCmp(l.b, r.b)
}

// intern returns the id of a DSO's short name.
func (t *entryTree) intern(short string) int32 {
	d, ok := t.names[short]
	if !ok {
		d = int32(len(t.short))
		t.names[short] = d
		t.short = append(t.short, short)
	}
	return d
}
