package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/kmapindex/kmapindex/ingest/kmodsec"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
	"github.com/kmapindex/kmapindex/perfevent"
)

const recordUsage = `usage: kbench record [-F HZ] [-g] [-a | -p PID] [-o FILE] [-d SECONDS] [-kmodsec [-kmodsec-type N]] [-m PAGES] [-- CMD...]

Sample with perf_event_open (cpu-clock, by frequency, as perf record does
where there is no hardware PMU) and write a perf.data file that perf 6.1
reads, with the side-band records perf record synthesizes: the kernel
and module maps and, with -a or -p, the running processes' COMM, FORK and
executable MMAP2 records. With a command (after --), only the command and
its children are sampled (from its exec), unless -a is given too; without
a command or -p, every CPU is sampled (-a) until SIGINT or -d.

`

// runRecord implements "kbench record".
func runRecord(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("record", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, recordUsage)
		fs.PrintDefaults()
	}
	freq := fs.Uint64("F", perfevent.DefaultFreq, "sample at `HZ` samples per second")
	callchain := fs.Bool("g", false, "record call chains (frame pointers)")
	all := fs.Bool("a", false, "sample every CPU (the default without -p or a command)")
	pid := fs.Int("p", 0, "sample the threads of process `PID`")
	out := fs.String("o", "perf.data", "write the recording to `FILE`")
	dur := fs.Float64("d", 0, "stop after `SECONDS` (0: at the command's exit or SIGINT)")
	withKmodsec := fs.Bool("kmodsec", false, "also write PERF_RECORD_KMOD_SEC_MAP records for every loaded module's sections (perf 6.1 refuses the file)")
	kmodsecType := fs.Uint("kmodsec-type", kmodsec.DefaultType, "record type `N` of the KMOD_SEC_MAP records")
	pages := fs.Int("m", perfevent.DefaultPages, "ring-buffer data `PAGES` per CPU (a power of two)")
	root := fs.String("root", "/", "read proc/, sys/ and lib/modules/ below `ROOT` for the side band")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	command := fs.Args()
	if *pid != 0 && len(command) > 0 {
		fmt.Fprintln(stderr, "kbench record: -p and a command exclude each other")
		return errUsage
	}
	if *pid != 0 && *all {
		fmt.Fprintln(stderr, "kbench record: -p and -a exclude each other")
		return errUsage
	}
	if *freq == 0 {
		fmt.Fprintln(stderr, "kbench record: -F must be positive")
		return errUsage
	}
	if *kmodsecType == 0 || *kmodsecType > 0xffffffff {
		fmt.Fprintln(stderr, "kbench record: -kmodsec-type out of range")
		return errUsage
	}
	opts := perfevent.Options{
		Freq: *freq, Callchain: *callchain, SystemWide: *all, Pid: *pid,
		Command: command, Pages: *pages, Root: *root, RawOnly: true,
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
	}
	if f, ok := stdout.(*os.File); ok {
		opts.Stdout = f
	}
	if f, ok := stderr.(*os.File); ok {
		opts.Stderr = f
	}
	sess, err := perfevent.Open(opts)
	if err != nil {
		return err
	}
	defer sess.Close()

	// perf record keeps the previous recording as FILE.old.
	if st, err := os.Stat(*out); err == nil && st.Mode().IsRegular() && st.Size() > 0 {
		if err := os.Rename(*out, *out+".old"); err != nil {
			return err
		}
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	defer f.Close()
	attr := sess.Attr()
	wo := perfdata.WriterOptions{
		Callchains: attr.SampleType&perfdata.SampleFormatCallchain != 0,
		CPU:        attr.SampleType&perfdata.SampleFormatCPU != 0,
		AttrFlags:  attr.Flags,
		SampleFreq: attr.SamplePeriod,
		IDs:        attr.IDs,
		NrCPUs:     uint32(len(sess.CPUs())),
		Version:    version(),
		Cmdline:    append([]string{"kbench", "record"}, args...),
	}
	if h, err := os.Hostname(); err == nil {
		wo.Hostname = h
	}
	wo.OSRelease, wo.Arch = uname()
	w, err := perfdata.NewWriter(f, wo)
	if err != nil {
		return err
	}

	// The side band, with the KMOD_SEC_MAP records after the module maps.
	var kmodRecs [][]byte
	if *withKmodsec {
		recs, warns, err := perfevent.KmodSecRecords(*root)
		if err != nil {
			return err
		}
		for _, m := range warns {
			fmt.Fprintf(stderr, "kbench record: warning: %s\n", m)
		}
		for _, r := range recs {
			kmodRecs = append(kmodRecs, kmodsec.Encode(r, binary.LittleEndian, uint32(*kmodsecType), w.Attr().IDHdrSize()))
		}
	}
	writeKmod := func() error {
		for _, b := range kmodRecs {
			if err := w.WriteRaw(b); err != nil {
				return err
			}
		}
		kmodRecs = nil
		return nil
	}
	warns, err := sess.Synthesize(func(r perfdata.Record) error {
		if m, ok := r.(*perfdata.Mmap); !ok || m.CPUMode() != perfdata.CPUModeKernel {
			if err := writeKmod(); err != nil {
				return err
			}
		}
		return recordWriteSynth(w, r)
	})
	if err != nil {
		return err
	}
	if err := writeKmod(); err != nil {
		return err
	}
	for _, m := range warns {
		fmt.Fprintf(stderr, "kbench record: warning: %s\n", m)
	}
	// PERF_RECORD_FINISHED_INIT ends the synthesized records, as in perf
	// 6.1.
	fin := binary.LittleEndian.AppendUint32(nil, uint32(perfdata.RecordFinishedInit))
	fin = binary.LittleEndian.AppendUint16(fin, 0)
	if err := w.WriteRaw(binary.LittleEndian.AppendUint16(fin, 8)); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *dur > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(*dur*float64(time.Second)))
		defer cancel()
	}
	err = sess.Run(ctx, func(ev *perfevent.Event) error {
		if _, ok := ev.Record.(*perfdata.FinishedRound); ok {
			return w.WriteFinishedRound()
		}
		return w.WriteRaw(ev.Raw)
	})
	if err != nil {
		return err
	}
	if pid := sess.Pid(); pid != 0 {
		select {
		case <-sess.Exited():
		default: // -d or a signal ended the recording: end the command too
			if p, err := os.FindProcess(pid); err == nil {
				p.Signal(syscall.SIGTERM)
			}
		}
	}
	// PERF_RECORD_LOST_SAMPLES per event that lost samples, as perf
	// record writes them at its end (zero sample_id trailer).
	lost, err := sess.LostSamples()
	if err != nil {
		return err
	}
	var lostSamples uint64
	for _, l := range lost {
		rec := binary.LittleEndian.AppendUint32(nil, uint32(perfdata.RecordLostSamples))
		rec = binary.LittleEndian.AppendUint16(rec, 0)
		rec = binary.LittleEndian.AppendUint16(rec, uint16(16+w.Attr().IDHdrSize()))
		rec = binary.LittleEndian.AppendUint64(rec, l.Lost)
		rec = append(rec, make([]byte, w.Attr().IDHdrSize())...)
		if err := w.WriteRaw(rec); err != nil {
			return err
		}
		lostSamples += l.Lost
	}
	st := sess.Stats()
	if err := sess.Close(); err != nil {
		return err
	}
	// The build ids of the DSOs the samples hit, found as perf record
	// finds them: by replaying the recording once it is written
	// (process_buildids), not while the ring buffers wait.
	ids, err := recordBuildIDs(w, f, *root)
	if err != nil {
		return err
	}
	if err := w.SetBuildIDs(ids); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	size, _ := f.Seek(0, io.SeekCurrent)
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "[ perf record: Woken up %d times to write data ]\n", st.Wakeups)
	if st.Lost > 0 || lostSamples > 0 {
		fmt.Fprintf(stderr, "Warning:\nLost %d samples in %d PERF_RECORD_LOST records (the events count %d lost samples): the ring buffers overflowed; try -m or a lower -F\n",
			st.Lost, st.LostRecords, lostSamples)
	}
	fmt.Fprintf(stderr, "[ perf record: Captured and wrote %.3f MB %s (%d samples) ]\n", float64(size)/1024/1024, *out, st.Samples)
	return nil
}

// recordWriteSynth writes one synthesized record.
func recordWriteSynth(w *perfdata.Writer, r perfdata.Record) error {
	switch x := r.(type) {
	case *perfdata.Mmap:
		return w.WriteMmap(x)
	case *perfdata.Comm:
		return w.WriteComm(x)
	case *perfdata.Fork:
		return w.WriteFork(x)
	case *perfdata.Exit:
		return w.WriteExit(x)
	}
	return fmt.Errorf("record: cannot write a synthesized %s record", r.RecordInfo().Type)
}
