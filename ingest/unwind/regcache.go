package unwind

// RegCache is libunwind's register-state cache of an address space
// (struct dwarf_rs_cache, src/dwarf/Gparser.c of libunwind 1.6), which
// perf keeps one of per process (an unw_addr_space per maps, caching
// policy UNW_CACHE_GLOBAL) and flushes when the process execs
// (unwind__flush_access). It holds the rows of the last RegCacheSize DWARF
// steps that found one, keyed by the frame's ip as the cursor held it:
// not the address looked up, which is one less for a caller's frame.
// find_reg_state consults it before any lookup, so a later frame at that
// ip takes the cached row even where its own lookup would find another
// or none: a return address at the start of a function (after a call that
// ended the function before it, or a garbage word) takes the row of the
// function's entry, which a sample there looked up before, and the
// unwind goes on where the lookup alone would stop. Replacement is
// round-robin over the slots (rs_new). The zero value is empty; a flush
// (unw_flush_cache) is a new one.
type RegCache struct {
	ips  [RegCacheSize]uint64
	rows [RegCacheSize]*rowInfo
	slot map[uint64]uint8 // ip -> its slot, for the valid ones
	head int              // the slot rs_new fills next
}

// RegCacheSize is libunwind's default cache size
// (1 << DWARF_DEFAULT_LOG_UNW_CACHE_SIZE); perf does not change it.
const RegCacheSize = 1 << 7

// lookup is rs_lookup: the row cached for ip, or nil.
func (c *RegCache) lookup(ip uint64) *rowInfo {
	if s, ok := c.slot[ip]; ok {
		return c.rows[s]
	}
	return nil
}

// insert is rs_new: ip's row takes the next slot round-robin, evicting
// the row there.
func (c *RegCache) insert(ip uint64, r *rowInfo) {
	if c.slot == nil {
		c.slot = make(map[uint64]uint8, RegCacheSize)
	}
	h := c.head
	c.head = (h + 1) % RegCacheSize
	if c.rows[h] != nil {
		delete(c.slot, c.ips[h]) // an ip is in one slot at most: inserted on a miss only
	}
	c.ips[h], c.rows[h] = ip, r
	c.slot[ip] = uint8(h)
}
