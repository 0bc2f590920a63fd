package attrib

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/machine"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/ingest/symbols"
	"github.com/kmapindex/kmapindex/ingest/unwind"
	"github.com/kmapindex/kmapindex/internal/regular"
)

// DWARF callchains (perf record --call-graph dwarf): the sample carries
// the user registers and a copy of the user stack, and perf unwinds them
// as it reads the sample (thread__resolve_callchain: the kernel's chain,
// then unwind__get_entries' frames, in callee order). The decoder keeps
// the registers and stack in the spare capacity of the event's callchain
// slice (after its len), in pooled memory (see payloadArena), so that
// events stay as small as they were; walkCallchain unwinds them after
// the kernel's frames, with package unwind, and expands each frame into
// the inlined functions perf's addr2line names there.

// needsUnwind reports whether perf would unwind samples of attr
// (thread__resolve_callchain_unwind: both REGS_USER and STACK_USER).
func needsUnwind(at *perfdata.Attr) bool {
	const both = perfdata.SampleFormatRegsUser | perfdata.SampleFormatStackUser
	return at != nil && at.SampleType&both == both
}

// userPayloadWords is the size of a sample's payload: its tag (see
// payloadArena), the register mask, the register count and values, the
// stack's size in bytes and its words.
func userPayloadWords(regs int, dyn uint64) int {
	return 4 + regs + int(dyn+7)/8
}

// stackMapped flags a payload's register count when the stack is not
// copied behind the registers but lies in the recording's mapping
// (perfdata.Reader.MappedData), at the offset that follows its size.
const stackMapped = 1 << 63

// withUserPayload returns the callchain (copied from rec) with the
// sample's user registers and stack after its end, in memory from
// slab's payload arena; nil when perf would not unwind it: no registers
// (abi 0) or an empty stack. With mapped, the mapping whose bytes rec's
// stay valid in (perfdata.Reader.RecordsStable), the stack stays there
// and the payload holds its offset.
func withUserPayload(slab *addrSlab, rec *perfdata.Sample, mapped []byte) []uint64 {
	n := len(rec.Callchain)
	dyn := min(rec.StackUserDyn, uint64(len(rec.StackUser)))
	if rec.RegsUserABI == 0 || dyn == 0 {
		return nil
	}
	off, inMap := mappedOffset(mapped, rec.StackUser[:dyn])
	words := userPayloadWords(len(rec.RegsUser), dyn)
	if inMap {
		words = 5 + len(rec.RegsUser)
	}
	b, tag := slab.payload.take(n + words)
	copy(b, rec.Callchain)
	p := b[n:]
	p[0] = tag
	p[1] = rec.Attr.SampleRegsUser
	p[2] = uint64(len(rec.RegsUser))
	k := copy(p[3:], rec.RegsUser)
	p[3+k] = dyn
	if inMap {
		p[2] |= stackMapped
		p[4+k] = off
	} else {
		copy(wordBytes(p[4+k:]), rec.StackUser[:dyn])
	}
	return b[:n]
}

// mappedOffset returns the offset of b in mapped, if b lies within it.
func mappedOffset(mapped, b []byte) (uint64, bool) {
	if len(mapped) == 0 || len(b) == 0 {
		return 0, false
	}
	off := uintptr(unsafe.Pointer(unsafe.SliceData(b))) - uintptr(unsafe.Pointer(unsafe.SliceData(mapped)))
	if off >= uintptr(len(mapped)) || uintptr(len(b)) > uintptr(len(mapped))-off {
		return 0, false
	}
	return uint64(off), true
}

// payloadOf returns what withUserPayload stored behind e.addrs: the
// payload p, its register count k (the registers are p[3:3+k], the
// stack's size p[3+k]) and whether the stack lies in the recording's
// mapping (at offset p[4+k]) or is copied behind it; ok is false when
// there is no payload, or it is cut short.
func payloadOf(e *event) (p []uint64, k uint64, inMap, ok bool) {
	p = e.addrs[len(e.addrs):cap(e.addrs)]
	if len(p) < 4 {
		return nil, 0, false, false
	}
	inMap = p[2]&stackMapped != 0
	k = p[2] &^ stackMapped
	need := 4 + k
	if inMap {
		need++
	}
	return p, k, inMap, uint64(len(p)) >= need
}

// mappedStackSize is the size of e's user stack when it lies in the
// recording's mapping (withUserPayload), else 0.
func mappedStackSize(e *event) int {
	if p, k, inMap, ok := payloadOf(e); ok && inMap {
		return int(p[3+k])
	}
	return 0
}

// wordBytes views words as bytes (in the host's order, which both
// withUserPayload and userPayload use).
func wordBytes(w []uint64) []byte {
	if len(w) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 8*len(w))
}

// userPayload decodes what withUserPayload stored behind e.addrs; the
// stack aliases the event's memory, valid until releasePayload, or
// mapped, the mapping withUserPayload was given.
func userPayload(e *event, s *unwind.Sample, mapped []byte) bool {
	p, k, inMap, ok := payloadOf(e)
	if !ok {
		return false
	}
	s.Regs = unwind.NewRegs(p[1], p[3:3+k])
	dyn := p[3+k]
	var stack []byte
	if inMap {
		if off := p[4+k]; off <= uint64(len(mapped)) {
			stack = mapped[off:]
		}
	} else {
		stack = wordBytes(p[4+k:])
	}
	if uint64(len(stack)) < dyn {
		return false
	}
	s.Stack = stack[:dyn:dyn]
	return true
}

// Payload memory. A recording's user stacks are most of its bytes
// (8 KiB a sample by default): instead of fresh memory for each, the
// decoder fills 512 KiB blocks, counts the payloads in each, and a
// block whose payloads have all been delivered is filled again. A
// payload's tag (its first word) is its offset in its block, from
// which releasePayload finds the block; unpooledTag marks memory of
// its own.
const (
	payloadBlockWords = 1 << 16
	unpooledTag       = ^uint64(0)
	maxPooledBlocks   = 128 // 64 MiB; beyond: plain memory for the garbage collector
	maxFreeBlocks     = 32  // 16 MiB kept between runs
)

type payloadBlock struct {
	words  []uint64
	pooled bool         // registered in payloads; else plain memory
	refs   atomic.Int64 // payloads not yet released, plus one while an arena fills it
}

// payloads holds the pooled blocks by the address of their first word,
// and the free ones. Blocks whose events were never delivered (a Run
// that failed) stay registered, leaving fewer to pool.
var payloads = struct {
	mu     sync.Mutex
	byBase map[uintptr]*payloadBlock
	free   []*payloadBlock
	freed  chan struct{} // signalled when a block is freed
}{freed: make(chan struct{}, 1)}

// payloadArena is the decoder's block being filled; noWait counts the
// blocks to take without waiting for a free one, after a wait failed.
type payloadArena struct {
	cur    *payloadBlock
	off    int
	noWait int
}

// take returns n words for one payload and its tag.
func (ar *payloadArena) take(n int) ([]uint64, uint64) {
	if n > payloadBlockWords {
		return make([]uint64, n), unpooledTag
	}
	if ar.cur == nil || ar.off+n > len(ar.cur.words) {
		ar.seal()
		ar.cur = ar.newBlock()
	}
	b := ar.cur.words[ar.off : ar.off+n : ar.off+n]
	tag := uint64(ar.off)
	ar.off += n
	if !ar.cur.pooled {
		return b, unpooledTag
	}
	ar.cur.refs.Add(1)
	return b, tag
}

// newBlock returns a pooled block if one can be had, else plain memory.
func (ar *payloadArena) newBlock() *payloadBlock {
	var b *payloadBlock
	if ar.noWait > 0 {
		ar.noWait--
		b = pooledBlock()
	} else if b = newPayloadBlock(); b == nil {
		ar.noWait = 2 // the ordering queue holds the pool: do not wait for the next ones
	}
	if b == nil {
		b = &payloadBlock{words: make([]uint64, payloadBlockWords)}
	}
	return b
}

// seal drops the arena's hold on its block.
func (ar *payloadArena) seal() {
	if ar.cur != nil && ar.cur.pooled {
		ar.cur.unref()
	}
	ar.cur, ar.off = nil, 0
}

// newPayloadBlock returns a free block, or a new one while fewer than
// maxPooledBlocks exist; beyond, it waits for one to be freed as long as
// samples are being delivered (the attributor frees blocks as it goes,
// so the decoder keeps to its pace), and returns nil once they are not:
// the events queued for ordering may hold every block.
func newPayloadBlock() *payloadBlock {
	for range 1000 {
		if b := pooledBlock(); b != nil {
			return b
		}
		before := payloadsReleased.Load()
		select {
		case <-payloads.freed:
		case <-time.After(time.Millisecond):
			if payloadsReleased.Load() == before {
				return nil // no delivery meanwhile
			}
		}
	}
	return nil
}

// payloadsReleased counts the payloads delivered, for newPayloadBlock.
var payloadsReleased atomic.Int64

// pooledBlock is newPayloadBlock without waiting.
func pooledBlock() *payloadBlock {
	payloads.mu.Lock()
	defer payloads.mu.Unlock()
	var b *payloadBlock
	switch {
	case len(payloads.free) > 0:
		b = payloads.free[len(payloads.free)-1]
		payloads.free = payloads.free[:len(payloads.free)-1]
	case len(payloads.byBase) < maxPooledBlocks:
		b = &payloadBlock{words: make([]uint64, payloadBlockWords), pooled: true}
		if payloads.byBase == nil {
			payloads.byBase = make(map[uintptr]*payloadBlock)
		}
		payloads.byBase[uintptr(unsafe.Pointer(&b.words[0]))] = b
	default:
		return nil
	}
	b.refs.Store(1)
	return b
}

// unref releases one hold on b; the last one frees it.
func (b *payloadBlock) unref() {
	if b.refs.Add(-1) != 0 {
		return
	}
	payloads.mu.Lock()
	defer payloads.mu.Unlock()
	if len(payloads.free) < maxFreeBlocks {
		payloads.free = append(payloads.free, b)
		select {
		case payloads.freed <- struct{}{}:
		default:
		}
	} else {
		delete(payloads.byBase, uintptr(unsafe.Pointer(&b.words[0])))
	}
}

// releasePayload hands e's payload memory back once e was delivered.
func releasePayload(e *event) {
	if cap(e.addrs) <= len(e.addrs) {
		return
	}
	payloadsReleased.Add(1)
	tag := e.addrs[len(e.addrs):cap(e.addrs)][0]
	if tag == unpooledTag {
		return
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(e.addrs))) - uintptr(tag)*8
	payloads.mu.Lock()
	b := payloads.byBase[base]
	payloads.mu.Unlock()
	if b != nil {
		b.unref()
	}
}

// hasUserStack reports whether e carries a user stack to unwind.
func hasUserStack(e *event) bool { return cap(e.addrs) > len(e.addrs) }

// chainReset reports whether perf empties the kernel's chain of a sample
// (an unknown context marker within the first maxStack frames:
// add_callchain_ip resets the cursor). thread__resolve_callchain then
// still appends the unwound user frames, so a DWARF sample keeps those.
func chainReset(chain []uint64) bool {
	n := 0
	for _, ip := range chain {
		if ip >= contextMax {
			if _, ok := contextMode(ip); !ok {
				return true
			}
			continue
		}
		if n++; n > maxStack {
			return false
		}
	}
	return false
}

// dwarfState is the unwinder of a Run: the binaries' unwind tables
// (opened once each) and reused buffers.
type dwarfState struct {
	cache  unwind.Cache
	u      unwind.Unwinder
	sample unwind.Sample
	ips    []uint64
	files  map[string]*unwind.File // by DSO name; nil entries: none
	// symsrc names each DSO's symbol source, which perf runs addr2line
	// on, and inl holds its answers, opened at first use (nil: none);
	// inlined is the name of the inlined frame being reported, "" for a
	// real one.
	symsrc   map[string]string
	inl      map[string]*unwind.Inlines
	inlNames map[inlineKey]inlineAnswer // inlineNames' answers
	// recent holds some of inlNames' entries, direct-mapped by address,
	// which are quicker to find there.
	recent  *[recentSlots]recentNames
	inlined string
	// own is the name of the symbol of the frame inlineFrames reports,
	// while ownSet (frameName's answer).
	own    string
	ownSet bool
	// ready holds the address spaces unwinding is set up for; notReady
	// the machine generation (plus one) at which one was found not to be.
	ready    map[uintptr]bool
	notReady map[uintptr]uint64
	// regCaches are libunwind's register-state caches, one per address
	// space (machine.Thread.AddressSpace), as perf has one per process.
	regCaches map[uint64]*unwind.RegCache
	// bases caches dsoBase, each answer for the version of the thread's
	// maps it was found in (machine.Thread.MapsVersion).
	bases map[baseKey]baseAt

	// find is userMap as the unwinder's Finder, made once; e is the
	// sample being unwound.
	find unwind.Finder
	e    *event
	// hits caches userMap's answers for the address space hitMaps in
	// machine generation hitGen (Resolve's answers hold for one
	// generation); miss is the answer for an address no map holds.
	hits    []mapHit
	hitMaps uintptr
	hitGen  uint64
	miss    mapHit
}

// mapHit is a map the unwind found: the machine's, and the unwinder's
// view of it (its file and load base). inl is its DSO's addr2line
// answers, once inlSet says they were looked up.
type mapHit struct {
	mp     index.Map
	um     unwind.Mapping
	inl    *unwind.Inlines
	inlSet bool
}

// recentSlots is the size of dwarfState.recent (a power of two).
const recentSlots = 1 << 12

type recentNames struct {
	key    inlineKey
	frames inlineAnswer
}

// maxHits bounds the maps dwarfState keeps in hits.
const maxHits = 32

type baseAt struct{ gen, base uint64 }

// inlineKey is an address of a file addr2line answers for.
type inlineKey struct {
	in   *unwind.Inlines
	addr uint64
}

type baseKey struct {
	maps uintptr
	dso  string
}

// dsoBase is what perf's read_unwind_spec_eh_frame takes as the load
// address of a DSO: the start minus the page offset of the lowest map of
// that DSO in the thread's maps (which may be a stale map of the image
// before an exec, as in perf).
func (a *attributor) dsoBase(e *event, dso string) uint64 {
	d := a.dw
	t := a.m.SampleThread(e.pid, e.tid)
	key := baseKey{t.MapsID(), dso}
	// The thread's maps version: the machine's generation changed with
	// every MMAP of any process, and a recording of a busy system
	// rescanned the maps of each DSO at nearly every sample (7 % of a
	// --call-graph dwarf -a script).
	gen := t.MapsVersion()
	if b, ok := d.bases[key]; ok && b.gen == gen {
		return b.base
	}
	var base uint64
	for mp := range t.Maps().All() { // by address, no copy
		if mp.DSO == dso && mp.Kind == index.KindUser {
			base = mp.Start - mp.Pgoff
			break
		}
	}
	if len(d.bases) > 1<<16 {
		clear(d.bases) // bounded: stale address spaces go
	}
	d.bases[key] = baseAt{gen, base}
	return base
}

// unwindUser reports the user frames perf unwinds for e after its
// kernel chain (unwind__get_entries), resolved in the thread's maps:
// callee order, or with callerOrder root first, each frame's inlined
// functions outermost first, as perf's get_entries reports (and looks up)
// a caller-order chain (a children table's): addr2line's answers depend
// on the order it is asked in (unwind.Inlines.answer). Nothing when the
// sample carries no user stack.
func (a *attributor) unwindUser(e *event, frame func(ip uint64, mp *index.Map), callerOrder bool) {
	if !hasUserStack(e) {
		return
	}
	if a.dw == nil {
		a.dw = a.newDwarfState()
	}
	d := a.dw
	if !a.unwindReady(e) || !userPayload(e, &d.sample, a.mapped) {
		return
	}
	d.e = e
	a.checkHits()
	d.u.Cache = d.regCache(a.m.SampleThread(e.pid, e.tid).AddressSpace())
	d.ips = d.u.Unwind(&d.sample, d.find, d.ips[:0])
	for i := range d.ips {
		ip := d.ips[i]
		if callerOrder {
			ip = d.ips[len(d.ips)-1-i]
		}
		h, ok := a.userMap(ip)
		if !ok {
			frame(ip, nil)
		} else if !a.inlineFrames(ip, h, frame, callerOrder) {
			frame(ip, &h.mp)
		}
	}
	d.e = nil
}

// regCache returns the register-state cache of address space as, made
// empty at its first use.
func (d *dwarfState) regCache(as uint64) *unwind.RegCache {
	c := d.regCaches[as]
	if c == nil {
		if d.regCaches == nil {
			d.regCaches = make(map[uint64]*unwind.RegCache)
		}
		c = new(unwind.RegCache)
		d.regCaches[as] = c
	}
	return c
}

// flushRegCache empties the register-state cache of thread (pid, tid)'s
// address space before a COMM record that execs is applied, as perf's
// __thread__set_comm flushes libunwind's caches (unwind__flush_access),
// for a thread already named only.
func (a *attributor) flushRegCache(pid, tid uint32) {
	if a.dw == nil {
		return // no DWARF sample yet: no cache
	}
	if t := a.m.SampleThread(pid, tid); t.CommSet() {
		delete(a.dw.regCaches, t.AddressSpace()) // the next use makes an empty one
	}
}

// newDwarfState makes the unwinder of a Run, at its first DWARF sample.
func (a *attributor) newDwarfState() *dwarfState {
	d := &dwarfState{files: make(map[string]*unwind.File), inl: make(map[string]*unwind.Inlines), symsrc: make(map[string]string), inlNames: make(map[inlineKey]inlineAnswer),
		ready: make(map[uintptr]bool), notReady: make(map[uintptr]uint64), bases: make(map[baseKey]baseAt),
		hits: make([]mapHit, 0, maxHits), recent: new([recentSlots]recentNames)}
	d.find = func(addr uint64) (unwind.Mapping, bool) {
		h, ok := a.userMap(addr)
		return h.um, ok
	}
	return d
}

// checkHits empties the map cache when the sample's address space or the
// machine's generation is not the one it holds.
func (a *attributor) checkHits() {
	d := a.dw
	id, gen := a.m.SampleThread(d.e.pid, d.e.tid).MapsID(), a.m.Generation()
	if id != d.hitMaps || gen != d.hitGen {
		d.hits, d.hitMaps, d.hitGen = d.hits[:0], id, gen
	}
}

// userMap is the machine's map of addr in the thread of the sample being
// unwound (Resolve), with the unwinder's view of it; the answer is valid
// until the next call.
func (a *attributor) userMap(addr uint64) (*mapHit, bool) {
	d := a.dw
	if gen := a.m.Generation(); gen != d.hitGen {
		d.hits, d.hitGen = d.hits[:0], gen
	}
	for i := range d.hits {
		if h := &d.hits[i]; h.mp.Contains(addr) {
			return h, true
		}
	}
	e := d.e
	mp, ok := a.m.Resolve(machine.CPUModeUser, e.pid, e.tid, addr)
	if !ok {
		d.miss = mapHit{mp: mp}
		return &d.miss, false
	}
	f := a.unwindFile(mp)
	base := mp.Start - mp.Pgoff
	if f != nil {
		base = a.dsoBase(e, mp.DSO)
	}
	h := mapHit{mp: mp, um: unwind.Mapping{Start: mp.Start, End: mp.End, Pgoff: mp.Pgoff, Base: base, File: f}}
	if gen := a.m.Generation(); gen != d.hitGen || !mp.Contains(addr) {
		d.miss = h // the machine changed meanwhile: not cached
		return &d.miss, true
	}
	if len(d.hits) == maxHits {
		d.hits = d.hits[:0]
	}
	d.hits = append(d.hits, h)
	return &d.hits[len(d.hits)-1], true
}

// inlineFrames reports the frames perf's append_inlines makes of an
// unwound address with a symbol: one per function addr2line -i -f names
// there, innermost first (outermost first with outerFirst); each is the
// frame's own symbol when the (demangled) name is the symbol's, else an
// inlined frame, which d.inlined names while frame runs. false when there
// are none (no symbol, no addr2line answer): the frame is then reported
// as it is.
func (a *attributor) inlineFrames(ip uint64, h *mapHit, frame func(ip uint64, mp *index.Map), outerFirst bool) bool {
	names, own := a.inlineNames(ip, h)
	if names == nil {
		return false
	}
	d := a.dw
	d.own, d.ownSet = own, true // the frame's own symbol, for frameName
	for i := range names {
		d.inlined = names[i]
		if outerFirst {
			d.inlined = names[len(names)-1-i]
		}
		frame(ip, &h.mp)
	}
	d.inlined, d.own, d.ownSet = "", "", false
	return true
}

// inlineNames returns the frames append_inlines makes of an unwound
// address: "" for the frame's own symbol, else an inlined function's
// name; nil for none. own is the name of the frame's own symbol when
// there are frames. Answers are kept per file and address, with the
// symbol's name: naming the frame looked it up again, a sixth of a
// shallow-stacked script's attribution.
func (a *attributor) inlineNames(ip uint64, h *mapHit) (names []string, own string) {
	if !h.inlSet {
		h.inl, h.inlSet = a.inlinesOf(h.mp, h.um.File), true
	}
	in := h.inl
	if in == nil {
		return nil, ""
	}
	d := a.dw
	mp := h.mp
	addr := mp.MapIP(ip) + h.um.File.TextOffset()
	key := inlineKey{in, addr}
	slot := &d.recent[(addr^addr>>12)&(recentSlots-1)]
	if slot.key == key {
		return slot.frames.names, slot.frames.own
	}
	if f, ok := d.inlNames[key]; ok {
		*slot = recentNames{key, f}
		return f.names, f.own
	}
	var f inlineAnswer
	if sym, ok := a.sym.symbol(mp, ip); ok {
		if funcs, ok := in.Funcs(addr); ok && len(funcs) > 0 {
			f.names, f.own = make([]string, len(funcs)), sym.Name
			for i, n := range funcs {
				if n = symbols.Demangle(n); n != sym.Name {
					f.names[i] = n
				}
			}
		}
	}
	if len(d.inlNames) >= 1<<18 {
		clear(d.inlNames) // bounded
		*d.recent = [recentSlots]recentNames{}
	}
	d.inlNames[key] = f
	*slot = recentNames{key, f}
	return f.names, f.own
}

// inlineAnswer is inlineNames' answer for an address: the frames, and
// the name of the frame's own symbol.
type inlineAnswer struct {
	names []string
	own   string
}

// inlinesOf returns the addr2line answers for a map whose unwind file is
// f: those of its DSO's symbol source, opened at first use; nil for none.
func (a *attributor) inlinesOf(mp index.Map, f *unwind.File) *unwind.Inlines {
	if f == nil || strings.HasPrefix(mp.DSO, "[") || strings.HasPrefix(mp.DSO, machine.PerfMapPrefix) {
		return nil
	}
	d := a.dw
	in, seen := d.inl[mp.DSO]
	if !seen {
		src := d.symsrc[mp.DSO]
		var ok bool
		if in, ok = a.sym.prefetch.inlines(mp.DSO, a.sym.buildIDs[mp.DSO], src); !ok {
			in, _ = unwind.OpenInlines(src, a.sections)
		}
		d.inl[mp.DSO] = in
	}
	return in
}

// inlinedName is the name of the inlined frame being reported, "" for
// a real frame.
func (a *attributor) inlinedName() string {
	if a.dw == nil {
		return ""
	}
	return a.dw.inlined
}

// closeUnwind closes the binaries the unwind opened.
func (a *attributor) closeUnwind() {
	if a.dw != nil {
		a.dw.cache.Close()
	}
}

// unwindReady says whether perf has unwinding set up for the sample's
// process: unwind__prepare_access registers libunwind on a process's maps
// when a map whose file it can read as ELF (dso__type) is inserted, and
// until then unwind__get_entries reports nothing, not even the sampled
// IP. Once set up it stays so; kbench checks the maps when a sample
// needs them.
func (a *attributor) unwindReady(e *event) bool {
	d := a.dw
	t := a.m.SampleThread(e.pid, e.tid)
	id := t.MapsID()
	if d.ready[id] {
		return true
	}
	if d.notReady[id] == a.m.Generation()+1 {
		return false
	}
	for mp := range t.Maps().All() {
		if a.unwindFile(mp) != nil {
			d.ready[id] = true
			return true
		}
	}
	d.notReady[id] = a.m.Generation() + 1
	return false
}

// unwindFile returns the unwind tables and contents of a map's DSO, the
// file perf reads them from (dso__data_fd): the build-id cache's copy,
// else the file at the recorded path (try_to_open_dso: BUILD_ID_CACHE,
// then SYSTEM_PATH_DSO), with no build-id check; this process's vdso
// for [vdso]. nil for anonymous memory and absent files. Only a file of
// the recorded build id gives the DSO a symbol source for inlined
// frames: perf's symbols refuse another build (symsrc__init), as on a
// recording from another machine, whose frames libunwind still unwinds
// through this one's files.
func (a *attributor) unwindFile(mp index.Map) *unwind.File {
	if mp.Kind != index.KindUser || a.sym == nil || a.sym.noFiles {
		return nil
	}
	d := a.dw
	if f, ok := d.files[mp.DSO]; ok {
		return f
	}
	var f *unwind.File
	id := a.sym.buildIDs[mp.DSO]
	for _, cand := range dsoCandidates(a.sym.debugDir, a.sym.symfs, mp.DSO, id) {
		if !regular.Is(cand) {
			continue
		}
		if f = d.cache.Get(cand, symbols.FindDebug(cand)); f != nil {
			if _, syms, ok := symbolFiles(a.sym.debugDir, a.sym.symfs, mp.DSO, id); ok {
				d.symsrc[mp.DSO] = syms
			}
			break
		}
	}
	if f == nil && mp.DSO == machine.VDSOName && len(id) == 0 && a.sym.symfs == "" {
		// perf reads [vdso] from a copy of its own (machine__findnew_vdso)
		// unless the recording names it by build id: its DSO is then
		// "[vdso]" itself, which no file holds outside the build-id cache.
		f = d.cache.GetImage(mp.DSO, a.sym.vdsoImage)
	}
	d.files[mp.DSO] = f
	return f
}

// unwoundFrame is a user frame unwindUser reports: inlined names an
// inlined function's frame ("" for the frame's own symbol).
type unwoundFrame struct {
	ip      uint64
	mp      index.Map
	ok      bool
	inlined string
}

// walkCallerOrderUnwound is walkCallerOrder for a sample whose user stack
// perf unwinds: in caller order (perf report --children's), perf's
// thread__resolve_callchain takes the unwound entries first, outermost
// first (get_entries reverses them, and inline_list__append puts each
// frame's inlined functions at the head), then the sample's own chain.
// An inlined frame goes to inlined as its table key, made from the map
// the unwind found; every other frame to frame.
func (a *attributor) walkCallerOrderUnwound(e *event, frame func(ip uint64, cpumode uint8), inlined func(k Key, end uint64, base string)) bool {
	if hasUserStack(e) {
		fs := a.unwound[:0]
		a.unwindUser(e, func(ip uint64, mp *index.Map) {
			f := unwoundFrame{ip: ip, ok: mp != nil, inlined: a.inlinedName()}
			if mp != nil {
				f.mp = *mp
			}
			fs = append(fs, f)
		}, true)
		a.unwound = fs
		for _, f := range fs {
			if f.inlined != "" {
				inlined(a.inlinedKey(f, int(e.attr)))
			} else {
				frame(f.ip, machine.CPUModeUser)
			}
		}
	}
	if e.has(sampleLBR) {
		walkLBRCallerOrder(e.addrs, frame)
		return true
	}
	return walkCallerOrder(e.addrs, frame)
}

// inlinedSuffix ends the symbol of an inlined function's row, as perf
// prints it (hist_entry__sym_snprintf); the inline symbol's own name, which
// perf compares and sorts by, is without it (bareSym).
const inlinedSuffix = " (inlined)"

// bareSym is a row's symbol as perf's symbol keys see it: an inlined
// function's without inlinedSuffix.
func bareSym(sym string) string { return strings.TrimSuffix(sym, inlinedSuffix) }

// inlinedKey is the table entry perf makes of an inlined frame f: the
// inline symbol append_inlines creates, printed "name (inlined)"
// (hist_entry__sym_snprintf), in the frame's DSO, spanning the symbol
// it is inlined into. _sort__sym_cmp tells two inline symbols of one
// name apart unless their spans overlap, so the same function inlined
// into two others makes two entries: Addr keeps the span's start; end is
// the span's end; base is that symbol's name.
func (a *attributor) inlinedKey(f unwoundFrame, event int) (k Key, end uint64, base string) {
	k = Key{DSO: f.mp.DSO, Sym: f.inlined + inlinedSuffix, Event: event}
	if sym, ok := a.sym.symbol(f.mp, f.ip); ok {
		k.Addr, end, base = sym.Start, sym.End, sym.Name
	}
	return k, end, base
}
