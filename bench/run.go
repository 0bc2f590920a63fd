package bench

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/kmapindex/kmapindex/corpus"
	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/mapset"
)

// ImplResult is one implementation's run over a corpus.
type ImplResult struct {
	Impl          string
	MapsDigest    string        // SHA-256 of the canonical kernel maps
	AttribDigest  string        // SHA-256 of the canonical attribution
	Build         time.Duration // building the kernel maps
	Resolve       time.Duration // resolving every sample
	SamplesPerSec float64
}

// RunResult is the outcome of Run on one corpus.
type RunResult struct {
	Corpus    string
	Maps      int
	Samples   int
	Unknown   int // samples no map holds
	Impls     []ImplResult
	Identical bool    // every digest equal across implementations
	Speedup   float64 // list resolve time / btree resolve time
}

// Run builds c's kernel maps with each implementation, resolves samples
// through each and compares the canonical maps and attributions. The
// B-tree resolves through its flat Snapshot with a last-hit Finder (the
// ingest hot path, see package mapset); the list walks itself.
func Run(c *corpus.Corpus, samples []uint64) (RunResult, error) {
	res := RunResult{Corpus: c.Dir, Samples: len(samples), Identical: true}
	if c.Meta.Name != "" {
		res.Corpus = c.Meta.Name
	}
	for _, im := range mapset.All {
		t0 := time.Now()
		ms, err := c.KernelMaps(im)
		if err != nil {
			return res, err
		}
		r := ImplResult{Impl: im.Name, Build: time.Since(t0), MapsDigest: ms.Digest()}
		maps := ms.Slice()
		counts := make([]int, len(maps)+1) // last: unknown
		pos := make(map[uint64]int, len(maps))
		for i, m := range maps {
			pos[m.Start] = i
		}
		t0 = time.Now()
		last := -1
		for _, a := range samples {
			m, ok := ms.Find(a)
			switch {
			case !ok:
				counts[len(maps)]++
			case last >= 0 && maps[last].Start == m.Start:
				counts[last]++
			default:
				last = pos[m.Start]
				counts[last]++
			}
		}
		r.Resolve = time.Since(t0)
		if s := r.Resolve.Seconds(); s > 0 {
			r.SamplesPerSec = float64(len(samples)) / s
		}
		r.AttribDigest = index.Digest(Attribution(maps, counts))
		res.Maps, res.Unknown = len(maps), counts[len(maps)]
		if len(res.Impls) > 0 && (r.MapsDigest != res.Impls[0].MapsDigest || r.AttribDigest != res.Impls[0].AttribDigest) {
			res.Identical = false
		}
		res.Impls = append(res.Impls, r)
	}
	if bt, l := res.Impls[0].Resolve, res.Impls[1].Resolve; bt > 0 {
		res.Speedup = float64(l) / float64(bt)
	}
	return res, nil
}

func idx(i, unknown int) int {
	if i < 0 {
		return unknown
	}
	return i
}

// Attribution is the canonical text of per-map sample counts: one line per
// map with samples ("count map"), then "count [unknown]".
func Attribution(maps []index.Map, counts []int) string {
	var b strings.Builder
	for i, m := range maps {
		if counts[i] > 0 {
			fmt.Fprintf(&b, "%d %s\n", counts[i], m)
		}
	}
	fmt.Fprintf(&b, "%d [unknown]\n", counts[len(maps)])
	return b.String()
}

// SyntheticSamples returns n sample addresses over maps, deterministic for
// a seed: bursts of up to 64 samples within one map (hot maps chosen with a
// skew toward the first-picked ones), and about 5% misses just outside
// maps' ends, which must be counted as [unknown].
func SyntheticSamples(maps []index.Map, n int, seed uint64) []uint64 {
	rng := rand.New(rand.NewPCG(seed, 0x73616d70))
	out := make([]uint64, 0, n)
	if len(maps) == 0 {
		for range n {
			out = append(out, rng.Uint64())
		}
		return out
	}
	hot := make([]int, 1+len(maps)/8)
	for i := range hot {
		hot[i] = rng.IntN(len(maps))
	}
	for len(out) < n {
		var m index.Map
		if rng.IntN(4) != 0 {
			m = maps[hot[rng.IntN(len(hot))]]
		} else {
			m = maps[rng.IntN(len(maps))]
		}
		burst := 1 + rng.IntN(64)
		for j := 0; j < burst && len(out) < n; j++ {
			if rng.IntN(20) == 0 {
				out = append(out, m.End+rng.Uint64N(64)) // may land in the next map; usually a miss
				continue
			}
			out = append(out, m.Start+rng.Uint64N(m.Size()))
		}
	}
	return out
}
