package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/attrib"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/perfevent"
	"github.com/kmapindex/kmapindex/resolver"
)

const topUsage = `usage: kbench top [-F HZ] [-g] [-d SECONDS] [-n ROWS] [-sort KEYS] [-p PID]

Sample every CPU (or the threads of -p PID) as kbench record does and
resolve the samples live with package resolver: one goroutine applies the
side band and publishes versions, another resolves the samples against
them. On a terminal the table is redrawn every second, like perf top
--sort dso,sym; at the end (after -d SECONDS, or at SIGINT) the final
table is printed. Lost samples are counted and shown. With -g the samples
carry call chains, and the table stays flat (self), as perf top
--no-children.

`

// topKey is one row of the table: the fields of the -sort keys.
type topKey struct {
	comm   string
	pid    string // "pid:comm", as perf's pid sort key prints it
	dso    string
	sym    string
	kernel bool
}

// topSample is what resolving a sample needs, copied out of the ring.
type topSample struct {
	cpumode  uint8
	pid, tid uint32
	ip       uint64
}

// topCounts accumulates samples per row; the resolver goroutine writes
// it and the display reads it.
type topCounts struct {
	mu      sync.Mutex
	rows    map[topKey]uint64
	samples uint64
}

func runTop(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("top", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, topUsage)
		fs.PrintDefaults()
	}
	freq := fs.Uint64("F", perfevent.DefaultFreq, "sample at `HZ` samples per second")
	callchain := fs.Bool("g", false, "sample call chains (frame pointers); the table stays flat")
	dur := fs.Float64("d", 0, "stop after `SECONDS` and print the final table (0: at SIGINT)")
	nrows := fs.Int("n", 20, "show the top `ROWS` rows (0: all)")
	sortKeys := fs.String("sort", "dso,sym", "sort and group by these `KEYS`: comm, pid, dso, sym")
	pid := fs.Int("p", 0, "sample the threads of process `PID` instead of every CPU")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(stderr, "kbench top: unexpected arguments:", fs.Args())
		return errUsage
	}
	keys, err := parseTopKeys(*sortKeys)
	if err != nil {
		fmt.Fprintln(stderr, "kbench top:", err)
		return errUsage
	}
	if *freq == 0 || *dur < 0 || *nrows < 0 {
		fmt.Fprintln(stderr, "kbench top: -F must be positive, -d and -n not negative")
		return errUsage
	}
	sess, err := perfevent.Open(perfevent.Options{Freq: *freq, Callchain: *callchain, SystemWide: *pid == 0, Pid: *pid})
	if err != nil {
		return err
	}
	defer sess.Close()

	// The writer side: the side band of what runs now, then the kernel's
	// symbols, as perf top loads them.
	r := resolver.New(resolver.Options{})
	warns, err := sess.Synthesize(func(rec perfdata.Record) error {
		if err := r.Apply(rec); err != nil {
			fmt.Fprintf(stderr, "kbench top: warning: %v\n", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, w := range warns {
		fmt.Fprintf(stderr, "kbench top: warning: %s\n", w)
	}
	if ks, err := kallsyms.ReadFile("/proc/kallsyms"); err != nil {
		fmt.Fprintf(stderr, "kbench top: warning: no kernel symbols: %v\n", err)
	} else {
		r.LoadKallsyms(ks)
	}
	r.Publish()

	counts := &topCounts{rows: make(map[topKey]uint64)}
	batches := make(chan []topSample, 64)
	resolved := make(chan struct{})
	go func() { // the reader side
		defer close(resolved)
		for b := range batches {
			v := r.View() // at least as new as the batch's side band
			counts.mu.Lock()
			for _, s := range b {
				counts.rows[topRow(v, s, keys)]++
			}
			counts.samples += uint64(len(b))
			counts.mu.Unlock()
		}
	}()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *dur > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(*dur*float64(time.Second)))
		defer cancel()
	}
	start := time.Now()
	live := false
	if f, ok := stdout.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		live = true
		go func() {
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					fmt.Fprint(stdout, "\x1b[H\x1b[2J")
					writeTopTable(stdout, counts, sess.Stats(), *freq, time.Since(start), *nrows)
				}
			}
		}()
	}

	var batch []topSample
	changed := false
	runErr := sess.Run(ctx, func(ev *perfevent.Event) error {
		switch rec := ev.Record.(type) {
		case *perfdata.Sample:
			if changed {
				r.Publish()
				changed = false
			}
			batch = append(batch, topSample{uint8(rec.CPUMode()), rec.Pid, rec.Tid, rec.IP})
		case *perfdata.FinishedRound:
			if len(batch) > 0 {
				batches <- batch
				batch = nil
			}
		case *perfdata.Mmap, *perfdata.Comm, *perfdata.Fork, *perfdata.Exit, *perfdata.Ksymbol:
			if err := r.Apply(rec); err != nil {
				fmt.Fprintf(stderr, "kbench top: warning: %v\n", err)
			}
			changed = true
		}
		return nil
	})
	if len(batch) > 0 {
		batches <- batch
	}
	close(batches)
	<-resolved
	if runErr != nil && !errors.Is(runErr, context.Canceled) && !errors.Is(runErr, context.DeadlineExceeded) {
		return runErr
	}
	if live {
		fmt.Fprint(stdout, "\x1b[H\x1b[2J")
	}
	writeTopTable(stdout, counts, sess.Stats(), *freq, time.Since(start), *nrows)
	return nil
}

// parseTopKeys checks the -sort keys.
func parseTopKeys(s string) ([]string, error) {
	keys := strings.Split(s, ",")
	for _, k := range keys {
		switch k {
		case "comm", "pid", "dso", "sym":
		default:
			return nil, fmt.Errorf("unknown sort key %q (want comm, pid, dso, sym)", k)
		}
	}
	return keys, nil
}

// topRow resolves one sample into its row.
func topRow(v *resolver.View, s topSample, keys []string) topKey {
	var k topKey
	var loc resolver.Location
	resolvedLoc := false
	for _, key := range keys {
		switch key {
		case "comm", "pid":
			comm := ":" + strconv.Itoa(int(int32(s.tid)))
			if t, ok := v.Thread(s.tid); ok {
				comm = t.Comm
			}
			if key == "comm" {
				k.comm = comm
			} else {
				k.pid = strconv.Itoa(int(int32(s.pid))) + ":" + comm
			}
		case "dso", "sym":
			if !resolvedLoc {
				loc, resolvedLoc = v.Resolve(s.cpumode, s.pid, s.tid, s.ip), true
			}
			k.kernel = s.cpumode == resolver.CPUModeKernel
			if key == "dso" {
				k.dso = topDSO(loc)
			} else {
				k.sym = loc.Symbol.Name
				if k.sym == "" { // perf prints the address in the DSO (map_ip)
					addr := s.ip
					if loc.Found {
						addr = loc.Offset
					}
					k.sym = fmt.Sprintf("%#018x", addr)
				}
			}
		}
	}
	return k
}

// topDSO is the DSO name perf top prints: "[kernel]" for the kernel
// (perf top --stdio shows it so here), else the short name perf report
// prints.
func topDSO(loc resolver.Location) string {
	switch k := loc.Map.Kind; {
	case !loc.Found:
		return "[unknown]"
	case k == index.KindKernel || k == index.KindKcore:
		return "[kernel]"
	default:
		return attrib.ShortName(loc.Map.DSO, k != index.KindUser && k != index.KindAnon)
	}
}

// writeTopTable prints the header and the top rows by samples (ties by
// row text, for a stable order).
func writeTopTable(w io.Writer, c *topCounts, st perfevent.Stats, freq uint64, elapsed time.Duration, n int) {
	c.mu.Lock()
	type row struct {
		k topKey
		n uint64
	}
	rows := make([]row, 0, len(c.rows))
	for k, v := range c.rows {
		rows = append(rows, row{k, v})
	}
	total := c.samples
	c.mu.Unlock()
	slices.SortFunc(rows, func(a, b row) int {
		return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.k.comm, b.k.comm), strings.Compare(a.k.pid, b.k.pid),
			strings.Compare(a.k.dso, b.k.dso), strings.Compare(a.k.sym, b.k.sym), boolCompare(a.k.kernel, b.k.kernel))
	})
	fmt.Fprintf(w, "kbench top: %d samples in %.1f s (%.0f/s), %d Hz cpu-clock; lost: %d samples in %d LOST records\n",
		total, elapsed.Seconds(), float64(total)/max(elapsed.Seconds(), 1e-9), freq, st.Lost, st.LostRecords)
	fmt.Fprintln(w, strings.Repeat("-", 79))
	if n > 0 && len(rows) > n {
		rows = rows[:n]
	}
	for _, r := range rows {
		var b strings.Builder
		fmt.Fprintf(&b, "%7.2f%%  %8d  ", 100*float64(r.n)/float64(max(total, 1)), r.n)
		if r.k.comm != "" {
			fmt.Fprintf(&b, "%-16s  ", r.k.comm)
		}
		if r.k.pid != "" {
			fmt.Fprintf(&b, "%-22s  ", r.k.pid)
		}
		if r.k.dso != "" {
			fmt.Fprintf(&b, "%-24s  ", r.k.dso)
		}
		if r.k.sym != "" {
			level := "[.]"
			if r.k.kernel {
				level = "[k]"
			}
			fmt.Fprintf(&b, "%s %s", level, r.k.sym)
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// boolCompare orders false before true.
func boolCompare(a, b bool) int {
	switch {
	case a == b:
		return 0
	case b:
		return -1
	}
	return 1
}
