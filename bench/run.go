package bench

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/kmapindex/kmapindex/corpus"
	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/mapset"
	"github.com/kmapindex/kmapindex/ingest/attrib"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

// ImplResult is one implementation's run over a corpus.
type ImplResult struct {
	Impl         string `json:"impl"`
	MapsDigest   string `json:"maps_digest"`   // SHA-256 of the canonical kernel maps
	AttribDigest string `json:"attrib_digest"` // SHA-256 of the canonical attribution
	// Build and Resolve are the medians of BuildRuns and ResolveRuns:
	// building the kernel maps, resolving every sample, timed Rounds
	// times with the implementations alternating.
	Build         time.Duration   `json:"build_ns"`
	Resolve       time.Duration   `json:"resolve_ns"`
	BuildRuns     []time.Duration `json:"build_runs_ns"`
	ResolveRuns   []time.Duration `json:"resolve_runs_ns"`
	SamplesPerSec float64         `json:"samples_per_sec"` // at the median resolve time
}

// Rounds is how many times Run times each phase of each implementation,
// alternating which goes first: one timing on a shared machine is noise.
const Rounds = 5

// RunResult is the outcome of Run on one corpus.
type RunResult struct {
	Corpus string `json:"corpus"`
	// Source says where the samples came from: "perf.data" (the corpus's
	// recording, attributed by ingest/attrib) or "synthetic" (addresses
	// drawn from the kernel maps, see SyntheticSamples).
	Source       string       `json:"source"`
	Maps         int          `json:"maps"`
	Samples      int          `json:"samples"`
	Unknown      int          `json:"unknown"` // samples no map holds
	Impls        []ImplResult `json:"impls"`
	Identical    bool         `json:"identical"`     // every digest equal across implementations
	Speedup      float64      `json:"speedup"`       // list resolve time / btree resolve time
	BuildSpeedup float64      `json:"build_speedup"` // list build time / btree build time
}

// RunOptions configure Run.
type RunOptions struct {
	// Samples and Seed make the synthetic samples of a corpus without a
	// perf.data file.
	Samples int
	Seed    uint64
	// Progress, if set, is told how far attributing a corpus's perf.data
	// has come: its file offset out of size, for implementation impl.
	Progress func(impl string, offset, size int64)
}

// Run builds c's kernel maps with each implementation and compares their
// canonical forms, then attributes the corpus's samples with each: the
// samples of its perf.data through ingest/attrib (as perf script would),
// or else synthetic addresses looked up in the kernel maps.
func Run(c *corpus.Corpus, opts RunOptions) (RunResult, error) {
	f, err := c.FS.Open(path.Join(c.Dir, PerfDataFile))
	if errors.Is(err, fs.ErrNotExist) {
		ms, err := c.KernelMaps(mapset.BTree)
		if err != nil {
			return RunResult{}, err
		}
		return RunSynthetic(c, SyntheticSamples(ms.Slice(), opts.Samples, opts.Seed))
	}
	if err != nil {
		return RunResult{}, fmt.Errorf("run: %w", err)
	}
	f.Close()
	return runRecording(c, opts.Progress)
}

// PerfDataFile is the recording inside a corpus directory.
const PerfDataFile = "perf.data"

// runRecording attributes the corpus's perf.data with each implementation.
func runRecording(c *corpus.Corpus, progress func(impl string, offset, size int64)) (RunResult, error) {
	return runImpls(c, PerfDataFile, func(im mapset.Impl, ms mapset.Set, r *ImplResult, res *RunResult) error {
		rd, size, closeFn, err := openRecording(c)
		if err != nil {
			return err
		}
		opts := attrib.Options{Impl: im, Kallsyms: c.Symbols, KallsymsFile: path.Join(c.Dir, "kallsyms"), Kcore: c.Kcore(), DebugDir: "-"}
		if progress != nil {
			opts.Progress = func(off int64) { progress(im.Name, off, size) }
		}
		t0 := time.Now()
		ar, err := attrib.Run(rd, opts)
		closeFn()
		if err != nil {
			return fmt.Errorf("run %s: %w", path.Join(c.Dir, PerfDataFile), err)
		}
		r.Resolve = time.Since(t0)
		r.AttribDigest = ar.Digest()
		res.Samples, res.Unknown = int(ar.Samples), int(ar.Unknown)
		return nil
	})
}

// runImpls builds c's kernel maps on each implementation (timed, from
// inputs read once), lets attribute fill in the rest of that
// implementation's result, and compares the results.
func runImpls(c *corpus.Corpus, source string, attribute func(im mapset.Impl, ms mapset.Set, r *ImplResult, res *RunResult) error) (RunResult, error) {
	res := RunResult{Corpus: c.Dir, Source: source, Identical: true}
	if c.Meta.Name != "" {
		res.Corpus = c.Meta.Name
	}
	in, err := c.KernelInputs()
	if err != nil {
		return res, err
	}
	impls := mapset.All
	results := make([]ImplResult, len(impls))
	for round := range Rounds {
		for j := range impls {
			i := j
			if round%2 == 1 {
				i = len(impls) - 1 - j // alternate which implementation goes first
			}
			im := impls[i]
			r, ms, err := buildMaps(in, im)
			if err != nil {
				return res, err
			}
			res.Maps = ms.Len()
			if err := attribute(im, ms, &r, &res); err != nil {
				return res, err
			}
			prev := &results[i]
			if round > 0 && (r.MapsDigest != prev.MapsDigest || r.AttribDigest != prev.AttribDigest) {
				return res, fmt.Errorf("run %s: %s gave other digests in round %d", res.Corpus, im.Name, round+1)
			}
			prev.Impl, prev.MapsDigest, prev.AttribDigest = r.Impl, r.MapsDigest, r.AttribDigest
			prev.BuildRuns = append(prev.BuildRuns, r.Build)
			prev.ResolveRuns = append(prev.ResolveRuns, r.Resolve)
		}
	}
	for _, r := range results {
		r.Build, r.Resolve = median(r.BuildRuns), median(r.ResolveRuns)
		if s := r.Resolve.Seconds(); s > 0 {
			r.SamplesPerSec = float64(res.Samples) / s
		}
		res.add(r)
	}
	return res, nil
}

// median returns the median of ds (the lower middle of an even count).
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// Spread returns the fastest and slowest of ds.
func Spread(ds []time.Duration) (lo, hi time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	return slices.Min(ds), slices.Max(ds)
}

// buildMaps times building the kernel maps with im from inputs read
// beforehand.
func buildMaps(in *corpus.KernelInputs, im mapset.Impl) (ImplResult, mapset.Set, error) {
	t0 := time.Now()
	ms, err := in.Build(im)
	if err != nil {
		return ImplResult{}, nil, err
	}
	return ImplResult{Impl: im.Name, Build: time.Since(t0), MapsDigest: ms.Digest()}, ms, nil
}

// add appends r, clearing Identical when a digest differs from the first
// implementation's, and sets Speedup once both are in.
func (res *RunResult) add(r ImplResult) {
	if len(res.Impls) > 0 && (r.MapsDigest != res.Impls[0].MapsDigest || r.AttribDigest != res.Impls[0].AttribDigest) {
		res.Identical = false
	}
	res.Impls = append(res.Impls, r)
	if len(res.Impls) == 2 && res.Impls[0].Resolve > 0 {
		res.Speedup = float64(res.Impls[1].Resolve) / float64(res.Impls[0].Resolve)
	}
	if len(res.Impls) == 2 && res.Impls[0].Build > 0 {
		res.BuildSpeedup = float64(res.Impls[1].Build) / float64(res.Impls[0].Build)
	}
}

// openRecording opens the corpus's perf.data: random access when its FS
// allows, else as a stream. It returns the file's size too.
func openRecording(c *corpus.Corpus) (*perfdata.Reader, int64, func(), error) {
	name := path.Join(c.Dir, PerfDataFile)
	f, err := c.FS.Open(name)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("run: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, nil, fmt.Errorf("run: %w", err)
	}
	var r *perfdata.Reader
	if ra, ok := f.(io.ReaderAt); ok {
		r, err = perfdata.NewFileReader(ra, st.Size())
	} else {
		r, err = perfdata.NewReader(f)
	}
	if err != nil {
		f.Close()
		return nil, 0, nil, fmt.Errorf("run: %s: %w", name, err)
	}
	return r, st.Size(), func() { r.Close(); f.Close() }, nil
}

// RunSynthetic builds c's kernel maps with each implementation, looks up
// samples in each and compares the canonical maps and per-map counts. The
// B-tree resolves through its flat Snapshot behind a last-hit cache (the
// ingest hot path, see package mapset); the list walks itself.
func RunSynthetic(c *corpus.Corpus, samples []uint64) (RunResult, error) {
	return runImpls(c, "synthetic", func(_ mapset.Impl, ms mapset.Set, r *ImplResult, res *RunResult) error {
		maps := ms.Slice()
		counts := make([]int, len(maps)+1) // last: unknown
		pos := make(map[uint64]int, len(maps))
		for i, m := range maps {
			pos[m.Start] = i
		}
		t0 := time.Now()
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
		r.AttribDigest = index.Digest(Attribution(maps, counts))
		res.Samples, res.Unknown = len(samples), counts[len(maps)]
		return nil
	})
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
