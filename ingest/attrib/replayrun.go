package attrib

// concurrentReplay replays a children table's log (accumulator.replay)
// on a goroutine of its own as the log's blocks fill, while the samples
// are still being attributed: replayed at the end, on one core, it took
// 0.37 s of CPU a run (pprof) of a --call-graph dwarf children table
// that took 0.72 s. The
// replayer reads the accumulator's entries' keys and meta; keys never
// change once made, and a meta that would change for an entry the replay
// may have read stops it for good (setMeta): the log is then replayed
// from the start at the end, as before.
type concurrentReplay struct {
	work       chan replayWork
	done       chan struct{}
	r          *replayer
	handedKeys int // the entries handed over so far, which the replay may read
}

// replayWork is a sealed block of the log with its samples and the
// entries' keys and meta as they were when it was sealed.
type replayWork struct {
	samples []loggedSample
	ids     []int32
	hits    []loggedHit
	keys    entryKeys
	meta    entryMetas
}

// startReplay makes the log hand its blocks to a replay as they fill.
func (ac *accumulator) startReplay() {
	ac.log.sealed = ac.handOver
}

// handOver hands a sealed block of the log to the replay, starting it at
// the first.
func (ac *accumulator) handOver(block []int32, samples []loggedSample, hits []loggedHit) {
	if ac.noRep {
		return
	}
	c := ac.rep
	if c == nil {
		c = &concurrentReplay{work: make(chan replayWork, 4), done: make(chan struct{}), r: newReplayer()}
		ac.rep = c
		go func() {
			defer close(c.done)
			for w := range c.work {
				c.r.feed(w.samples, w.ids, w.hits, &w.keys, &w.meta)
			}
		}()
	}
	n := ac.keys.len()
	c.handedKeys = n
	c.work <- replayWork{samples, block, hits, ac.keys.prefix(n), ac.meta.prefix(n)}
}

// setMeta sets entry id's meta. One the replay may have read already is
// not changed under it: the replay stops for good, and replay starts it
// over from the log's first block at the end.
func (ac *accumulator) setMeta(id int32, m entryMeta) {
	if ac.meta.at(id) == m {
		return
	}
	if c := ac.rep; c != nil && int(id) < c.handedKeys {
		ac.stopReplay()
		ac.noRep = true
	}
	ac.meta.set(id, m)
}

// stopReplay ends the replay, if one runs, and drops it.
func (ac *accumulator) stopReplay() {
	if c := ac.rep; c != nil {
		close(c.work)
		<-c.done
		ac.rep = nil
	}
}

// finishReplay hands the log's last block to the replay and returns the
// replay once it is done; nil when none ran.
func (ac *accumulator) finishReplay() *replayer {
	c := ac.rep
	if c == nil {
		return nil
	}
	if l := ac.log; len(l.blocks) > 0 {
		ac.handOver(l.blocks[len(l.blocks)-1], l.samples[l.from:], l.hits[len(l.hits)-1])
		l.sealed = nil
	}
	ac.stopReplay()
	return c.r
}
