package perfevent

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

// DefaultFreq is perf record's default sampling frequency (Hz).
const DefaultFreq = 4000

// DefaultPages is the number of ring-buffer data pages per CPU: 128 pages
// of 4 KiB, perf record's 512 KiB default for a privileged user.
const DefaultPages = 128

// Options say what a Session samples.
type Options struct {
	// Freq is the sampling frequency in Hz (sample_freq with freq = 1);
	// 0 means DefaultFreq.
	Freq uint64
	// Callchain adds PERF_SAMPLE_CALLCHAIN (frame-pointer call chains,
	// perf record -g).
	Callchain bool
	// SystemWide samples every task on every CPU of CPUs (perf record -a).
	// It is the default when there is neither Pid nor Command.
	SystemWide bool
	// Pid samples the threads of a running process (perf record -p):
	// one event per thread and CPU, inherited by the children they start.
	Pid int
	// Command is a command to run and sample (perf record -- CMD). Open
	// starts it held before its exec; Start lets it exec. Without
	// SystemWide its events are enabled by the kernel at that exec
	// (enable_on_exec), so the samples begin with the command itself.
	Command []string
	// Stdin, Stdout and Stderr are the command's (default: none, the
	// caller's stdout and stderr).
	Stdin          *os.File
	Stdout, Stderr *os.File
	// CPUs are the CPUs to open events on; default, every online CPU
	// (/sys/devices/system/cpu/online).
	CPUs []int
	// Pages is the number of ring-buffer data pages per CPU, a power of
	// two; 0 means DefaultPages.
	Pages int
	// Root is the file system root Synthesize reads proc/, sys/ and
	// lib/modules/ below ("/" when empty). The events themselves are
	// always the running machine's: Pid's threads and the CPUs come
	// from /proc and /sys.
	Root string
	// RawOnly delivers the kernel's records undecoded (Event.Record nil),
	// for a caller that only copies them, as perf record does; Stats
	// still count samples and lost records, from the record headers.
	RawOnly bool
}

// Event is one record read from a ring buffer.
type Event struct {
	// CPU is the CPU of the ring buffer the record came from.
	CPU int
	// Raw is the record as the kernel wrote it (header included,
	// little-endian on little-endian machines), valid only during the
	// callback. It is what perf record copies into perf.data.
	Raw []byte
	// Record is Raw decoded (a *perfdata.Sample, *Mmap, *Comm, *Fork,
	// *Exit, *Lost, ...; nil with Options.RawOnly), valid only during the
	// callback. At the end of
	// each pass over the ring buffers that read anything, Run and
	// ReadRound deliver an Event whose Record is a *perfdata.FinishedRound
	// and whose Raw is nil, where perf record writes
	// PERF_RECORD_FINISHED_ROUND.
	Record perfdata.Record
}

// Stats count what a Session has read.
type Stats struct {
	Records     uint64 // kernel records read
	Samples     uint64 // PERF_RECORD_SAMPLE records
	LostRecords uint64 // PERF_RECORD_LOST records
	Lost        uint64 // samples they say were lost
	Rounds      uint64 // passes that read something
	Wakeups     uint64 // polls that returned ready buffers
}

// Session is a set of open perf events, one ring buffer per CPU, and the
// command they sample, if any. Its methods are not safe for concurrent use,
// except Exited.
type Session struct {
	opts    Options
	tids    []int // the threads of Pid when opened
	attr    perfdata.Attr
	fds     []int // every event
	evs     []eventInfo
	rings   []*ring
	dec     *perfdata.Decoder
	cmd     *exec.Cmd
	release *os.File // write end of the command's start pipe
	exited  chan struct{}
	waitErr error
	started bool
	closed  bool
	pollfds []unix.PollFd
	stats   Stats
	round   perfdata.FinishedRound
	ev      Event
	scratch []byte
}

// eventInfo says where an event is open.
type eventInfo struct {
	fd, cpu, tid int
	id           uint64
}

// ring is one mmap'ed perf ring buffer.
type ring struct {
	cpu  int
	fd   int
	mem  []byte
	data []byte // the data area, a power of two long
	head *uint64
	tail *uint64
}

// Attribute flags of the events, as perf 6.1's evsel__config sets them
// for perf record -e cpu-clock.
const (
	flagEnableOnExec  = perfdata.AttrFlags(unix.PerfBitEnableOnExec)
	flagTask          = perfdata.AttrFlags(unix.PerfBitTask)
	flagExcludeGuest  = perfdata.AttrFlags(unix.PerfBitExcludeGuest)
	trackingFlags     = perfdata.AttrMmap | perfdata.AttrComm | flagTask | perfdata.AttrMmap2 | perfdata.AttrCommExec | perfdata.AttrKsymbol | perfdata.AttrBPFEvent
	baseFlags         = perfdata.AttrDisabled | perfdata.AttrInherit | perfdata.AttrFreq | perfdata.AttrSampleIDAll | flagExcludeGuest
	baseSampleType    = perfdata.SampleFormatIP | perfdata.SampleFormatTID | perfdata.SampleFormatTime | perfdata.SampleFormatPeriod
	perfTypeSoftware  = 1 // PERF_TYPE_SOFTWARE
	perfCountCPUClock = 0 // PERF_COUNT_SW_CPU_CLOCK
)

// Attr returns the perf_event_attr the events are opened with for opts,
// as perf 6.1 sets it for perf record -e cpu-clock (the default event
// where there is no hardware PMU, as in most VMs): sample_freq = Freq,
// sample_type IP|TID|TIME|PERIOD (CPU with SystemWide, CALLCHAIN with
// Callchain), read_format ID|LOST, disabled, inherit, freq, sample_id_all,
// exclude_guest, and the tracking bits (mmap, mmap2, comm, comm_exec,
// task, ksymbol, bpf_event); enable_on_exec for a command alone.
//
// One difference from perf: with SystemWide perf 6.1 moves the tracking
// bits to a second, dummy event; a Session tracks on its sampling event,
// so that the recording has one attr.
func (o *Options) Attr() perfdata.Attr {
	freq := o.Freq
	if freq == 0 {
		freq = DefaultFreq
	}
	st := baseSampleType
	if o.Callchain {
		st |= perfdata.SampleFormatCallchain
	}
	flags := baseFlags | trackingFlags
	if o.systemWide() {
		st |= perfdata.SampleFormatCPU
	} else if o.Pid == 0 && len(o.Command) > 0 {
		flags |= flagEnableOnExec
	}
	return perfdata.Attr{
		Type:         perfTypeSoftware,
		Size:         128, // PERF_ATTR_SIZE_VER7, as perf 6.1 writes
		Config:       perfCountCPUClock,
		SamplePeriod: freq,
		SampleType:   st,
		ReadFormat:   perfdata.ReadID | perfdata.ReadLost,
		Flags:        flags,
	}
}

func (o *Options) systemWide() bool {
	return o.SystemWide || (o.Pid == 0 && len(o.Command) == 0)
}

// ErrNotPermitted wraps the error of perf_event_open when the kernel does
// not let this process sample (EACCES, EPERM: perf_event_paranoid or
// missing CAP_PERFMON) or has no perf events (ENOENT, ENOSYS, EOPNOTSUPP).
var ErrNotPermitted = errors.New("perf_event_open not permitted or not supported")

// Open opens the events of opts (disabled), maps a ring buffer per CPU
// and, for a Command, starts it held before its exec. Call Synthesize,
// then Start, then Run (or ReadRound); Close at the end.
func Open(opts Options) (*Session, error) {
	if opts.Pid != 0 && len(opts.Command) > 0 {
		return nil, errors.New("perfevent: both a pid and a command")
	}
	if opts.Pages == 0 {
		opts.Pages = DefaultPages
	}
	if opts.Pages < 1 || opts.Pages&(opts.Pages-1) != 0 {
		return nil, fmt.Errorf("perfevent: %d ring-buffer pages: not a power of two", opts.Pages)
	}
	if opts.Root == "" {
		opts.Root = "/"
	}
	if len(opts.CPUs) == 0 {
		cpus, err := OnlineCPUs("/")
		if err != nil {
			return nil, err
		}
		opts.CPUs = cpus
	}
	s := &Session{opts: opts, attr: opts.Attr(), exited: make(chan struct{})}
	ok := false
	defer func() {
		if !ok {
			s.Close()
		}
	}()
	var tids []int
	switch {
	case opts.systemWide():
		tids = []int{-1}
	case opts.Pid != 0:
		var err error
		tids, err = Threads("/", opts.Pid)
		if err != nil {
			return nil, err
		}
		s.tids = tids
	default:
		if err := s.startCommand(); err != nil {
			return nil, err
		}
		tids = []int{s.cmd.Process.Pid}
	}
	if opts.systemWide() && len(opts.Command) > 0 {
		if err := s.startCommand(); err != nil {
			return nil, err
		}
	}
	ua := s.unixAttr()
	for _, cpu := range opts.CPUs {
		first := -1
		for _, tid := range tids {
			fd, err := unix.PerfEventOpen(&ua, tid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
			if errors.Is(err, unix.EINVAL) && len(s.fds) == 0 && s.attr.ReadFormat&perfdata.ReadLost != 0 {
				// Kernels before 6.0 have no PERF_FORMAT_LOST: perf
				// drops it (its missing-features fallback) and so do we.
				s.attr.ReadFormat &^= perfdata.ReadLost
				ua = s.unixAttr()
				fd, err = unix.PerfEventOpen(&ua, tid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
			}
			if err != nil {
				if tid > 0 && (errors.Is(err, unix.ESRCH)) {
					continue // the thread exited
				}
				return nil, openError(err, tid, cpu)
			}
			s.fds = append(s.fds, fd)
			id, err := eventID(fd)
			if err != nil {
				return nil, err
			}
			s.attr.IDs = append(s.attr.IDs, id)
			s.evs = append(s.evs, eventInfo{fd: fd, cpu: cpu, tid: tid, id: id})
			if first >= 0 {
				if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_OUTPUT, first); err != nil {
					return nil, fmt.Errorf("perfevent: PERF_EVENT_IOC_SET_OUTPUT on CPU %d: %w", cpu, err)
				}
				continue
			}
			first = fd
			r, err := mapRing(fd, cpu, opts.Pages)
			if err != nil {
				return nil, err
			}
			s.rings = append(s.rings, r)
		}
	}
	if len(s.rings) == 0 {
		return nil, fmt.Errorf("perfevent: no events opened (pid %d exited?)", opts.Pid)
	}
	for _, r := range s.rings {
		s.pollfds = append(s.pollfds, unix.PollFd{Fd: int32(r.fd), Events: unix.POLLIN})
	}
	s.dec = perfdata.NewDecoder(&s.attr, binary.NativeEndian)
	ok = true
	return s, nil
}

func openError(err error, tid, cpu int) error {
	what := fmt.Sprintf("perfevent: perf_event_open (pid %d, cpu %d)", tid, cpu)
	switch {
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM), errors.Is(err, unix.ENOENT),
		errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		return fmt.Errorf("%s: %w: %w (see /proc/sys/kernel/perf_event_paranoid)", what, ErrNotPermitted, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func (s *Session) unixAttr() unix.PerfEventAttr {
	a := &s.attr
	return unix.PerfEventAttr{
		Type:        a.Type,
		Size:        uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Config:      a.Config,
		Sample:      a.SamplePeriod,
		Sample_type: uint64(a.SampleType),
		Read_format: uint64(a.ReadFormat),
		Bits:        uint64(a.Flags),
	}
}

func eventID(fd int) (uint64, error) {
	var id uint64
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.PERF_EVENT_IOC_ID), uintptr(unsafe.Pointer(&id)))
	if e != 0 {
		return 0, fmt.Errorf("perfevent: PERF_EVENT_IOC_ID: %w", e)
	}
	return id, nil
}

func mapRing(fd, cpu, pages int) (*ring, error) {
	ps := os.Getpagesize()
	mem, err := unix.Mmap(fd, 0, (1+pages)*ps, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOMEM) {
			return nil, fmt.Errorf("perfevent: mmap of a %d-page ring buffer on CPU %d: %w (perf_event_mlock_kb?)", pages, cpu, err)
		}
		return nil, fmt.Errorf("perfevent: mmap of the ring buffer on CPU %d: %w", cpu, err)
	}
	meta := (*unix.PerfEventMmapPage)(unsafe.Pointer(&mem[0]))
	off, size := meta.Data_offset, meta.Data_size
	if size == 0 { // kernels before 4.1
		off, size = uint64(ps), uint64(pages*ps)
	}
	return &ring{
		cpu: cpu, fd: fd, mem: mem,
		data: mem[off : off+size],
		head: &meta.Data_head,
		tail: &meta.Data_tail,
	}, nil
}

// startCommand starts the command held: /bin/sh waits for a byte on a
// pipe, then execs the command (perf's evlist__prepare_workload holds
// its child the same way).
func (s *Session) startCommand() error {
	pr, pw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("perfevent: %w", err)
	}
	defer pr.Close()
	args := append([]string{"-c", `read x <&3 && exec "$@" 3<&-`, "kbench-record"}, s.opts.Command...)
	cmd := exec.Command("/bin/sh", args...)
	cmd.ExtraFiles = []*os.File{pr}
	cmd.Stdin = s.opts.Stdin
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if s.opts.Stdout != nil {
		cmd.Stdout = s.opts.Stdout
	}
	if s.opts.Stderr != nil {
		cmd.Stderr = s.opts.Stderr
	}
	if err := cmd.Start(); err != nil {
		pw.Close()
		return fmt.Errorf("perfevent: starting %s: %w", s.opts.Command[0], err)
	}
	s.cmd, s.release = cmd, pw
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	return nil
}

// Attr returns the events' attribute with their ids (one per event, from
// PERF_EVENT_IOC_ID): what a perf.data recording of the session holds.
func (s *Session) Attr() *perfdata.Attr { return &s.attr }

// CPUs returns the CPUs the events are open on.
func (s *Session) CPUs() []int { return s.opts.CPUs }

// Pid returns the pid of the command (0 without one).
func (s *Session) Pid() int {
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Synthesize calls fn with the side-band records perf record writes for
// the session's target before sampling (see the package function
// Synthesize): kernel and module MMAPs, then every process (SystemWide)
// or the threads of Pid, then the held command's COMM.
func (s *Session) Synthesize(fn func(perfdata.Record) error) ([]string, error) {
	o := SynthOptions{Root: s.opts.Root}
	switch {
	case s.opts.systemWide():
		o.SystemWide = true
	case s.opts.Pid != 0:
		o.Threads = s.tids
	}
	if s.cmd != nil {
		// perf record's COMM for the workload it forked, also with -a.
		o.Comm = []int{s.cmd.Process.Pid}
	}
	return Synthesize(o, fn)
}

// Start enables the events (for a command alone the kernel enables them
// at its exec) and lets the command exec.
func (s *Session) Start() error {
	if s.started {
		return nil
	}
	s.started = true
	if s.attr.Flags&flagEnableOnExec == 0 {
		for _, fd := range s.fds {
			if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
				return fmt.Errorf("perfevent: PERF_EVENT_IOC_ENABLE: %w", err)
			}
		}
	}
	if s.release != nil {
		_, err := s.release.Write([]byte{'\n'})
		s.release.Close()
		s.release = nil
		if err != nil {
			return fmt.Errorf("perfevent: starting the command: %w", err)
		}
	}
	return nil
}

// Exited is closed when the command has exited (never without one).
func (s *Session) Exited() <-chan struct{} { return s.exited }

// CommandErr returns the command's exit error (nil for status 0) once
// Exited is closed.
func (s *Session) CommandErr() error {
	select {
	case <-s.exited:
		return s.waitErr
	default:
		return nil
	}
}

// Stats returns the counts so far.
func (s *Session) Stats() Stats { return s.stats }

// Poll waits up to timeout for a ring buffer to pass its wakeup mark. It
// reports whether every event has hung up (a sampled process and all its
// threads exited).
func (s *Session) Poll(timeout time.Duration) (hungUp bool, err error) {
	for i := range s.pollfds {
		s.pollfds[i].Revents = 0
	}
	n, err := unix.Poll(s.pollfds, int(timeout/time.Millisecond))
	if err != nil {
		if errors.Is(err, unix.EINTR) {
			return false, nil
		}
		return false, fmt.Errorf("perfevent: poll: %w", err)
	}
	if n > 0 {
		s.stats.Wakeups++
	}
	hup := 0
	for _, p := range s.pollfds {
		if p.Revents&(unix.POLLHUP|unix.POLLERR) != 0 {
			hup++
		}
	}
	return hup == len(s.pollfds), nil
}

// ReadRound reads every ring buffer once, up to the head it finds,
// calling fn for each record in buffer order, then, if it read anything,
// once with a *perfdata.FinishedRound. It returns the number of records
// read. A record fn has returned for is consumed even if fn fails.
func (s *Session) ReadRound(fn func(*Event) error) (int, error) {
	n := 0
	for _, r := range s.rings {
		m, err := s.readRing(r, fn)
		n += m
		if err != nil {
			return n, err
		}
	}
	if n > 0 {
		s.stats.Rounds++
		s.round = perfdata.FinishedRound{Info: perfdata.Info{Type: perfdata.RecordFinishedRound, Size: 8}}
		s.ev = Event{CPU: -1, Record: &s.round}
		if err := fn(&s.ev); err != nil {
			return n, err
		}
	}
	return n, nil
}

func (s *Session) readRing(r *ring, fn func(*Event) error) (int, error) {
	head := atomic.LoadUint64(r.head) // acquire: the data before head is written
	tail := atomic.LoadUint64(r.tail)
	size := uint64(len(r.data))
	mask := size - 1
	n := 0
	defer func() {
		atomic.StoreUint64(r.tail, tail) // release: the space up to tail is free
	}()
	for head-tail >= 8 {
		off := tail & mask
		var hdr [8]byte
		s.copyOut(r, hdr[:], off)
		rsize := uint64(binary.NativeEndian.Uint16(hdr[6:]))
		if rsize < 8 || rsize > head-tail {
			return n, fmt.Errorf("perfevent: CPU %d: corrupt ring buffer: record of %d bytes with %d available", r.cpu, rsize, head-tail)
		}
		var rec []byte
		if off+rsize <= size {
			rec = r.data[off : off+rsize]
		} else {
			if cap(s.scratch) < int(rsize) {
				s.scratch = make([]byte, rsize)
			}
			rec = s.scratch[:rsize]
			s.copyOut(r, rec, off)
		}
		tail += rsize
		n++
		if err := s.deliver(r.cpu, rec, fn); err != nil {
			return n, err
		}
	}
	return n, nil
}

// copyOut copies len(b) bytes of the ring's data area from off,
// wrapping at its end.
func (s *Session) copyOut(r *ring, b []byte, off uint64) {
	k := copy(b, r.data[off:])
	copy(b[k:], r.data)
}

func (s *Session) deliver(cpu int, rec []byte, fn func(*Event) error) error {
	s.stats.Records++
	if s.opts.RawOnly {
		switch perfdata.RecordType(binary.NativeEndian.Uint32(rec)) {
		case perfdata.RecordSample:
			s.stats.Samples++
		case perfdata.RecordLost:
			if len(rec) >= 24 { // header, id, lost
				s.stats.LostRecords++
				s.stats.Lost += binary.NativeEndian.Uint64(rec[16:])
			}
		}
		s.ev = Event{CPU: cpu, Raw: rec}
		return fn(&s.ev)
	}
	d, err := s.dec.Decode(rec)
	if err != nil {
		return fmt.Errorf("perfevent: CPU %d: %w", cpu, err)
	}
	switch x := d.(type) {
	case *perfdata.Sample:
		s.stats.Samples++
	case *perfdata.Lost:
		s.stats.LostRecords++
		s.stats.Lost += x.Lost
	}
	s.ev = Event{CPU: cpu, Raw: rec, Record: d}
	return fn(&s.ev)
}

// LostCount is one event's count of lost samples (read_format LOST).
type LostCount struct {
	CPU  int    // the event's CPU
	Tid  int    // its thread (-1 system-wide)
	ID   uint64 // its sample id
	Lost uint64
}

// LostSamples reads every event's count of samples it could not write
// (PERF_FORMAT_LOST) and returns the non-zero ones, in event order: where
// perf record writes PERF_RECORD_LOST_SAMPLES at its end.
func (s *Session) LostSamples() ([]LostCount, error) {
	if s.attr.ReadFormat&perfdata.ReadLost == 0 {
		return nil, nil
	}
	var out []LostCount
	var b [24]byte // value, id, lost
	for _, e := range s.evs {
		n, err := unix.Read(e.fd, b[:])
		if err != nil {
			return out, fmt.Errorf("perfevent: reading the lost count on CPU %d: %w", e.cpu, err)
		}
		if n < len(b) {
			return out, fmt.Errorf("perfevent: reading the lost count on CPU %d: %d bytes", e.cpu, n)
		}
		if lost := binary.NativeEndian.Uint64(b[16:]); lost > 0 {
			out = append(out, LostCount{CPU: e.cpu, Tid: e.tid, ID: e.id, Lost: lost})
		}
	}
	return out, nil
}

// Run starts the session if Start was not called, then polls and reads
// the ring buffers, calling fn for each record and round (see ReadRound),
// until ctx is done, the command exits, or every event hangs up (the
// sampled process and the children it started have exited); then it
// reads what is left and returns. The command is not killed.
func (s *Session) Run(ctx context.Context, fn func(*Event) error) error {
	if err := s.Start(); err != nil {
		return err
	}
	for {
		done := false
		select {
		case <-ctx.Done():
			done = true
		case <-s.exited:
			done = true
		default:
		}
		if done {
			_, err := s.ReadRound(fn)
			return err
		}
		hup, err := s.Poll(100 * time.Millisecond)
		if err != nil {
			return err
		}
		if _, err := s.ReadRound(fn); err != nil {
			return err
		}
		if hup && !s.opts.systemWide() {
			_, err := s.ReadRound(fn)
			return err
		}
	}
}

// Close disables and closes the events, unmaps the ring buffers, and,
// when the command never started, ends it. It does not wait for a
// started command: see Exited.
func (s *Session) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for _, fd := range s.fds {
		unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_DISABLE, 0)
	}
	for _, r := range s.rings {
		if err := unix.Munmap(r.mem); err != nil {
			errs = append(errs, err)
		}
	}
	s.rings = nil
	for _, fd := range s.fds {
		if err := unix.Close(fd); err != nil {
			errs = append(errs, err)
		}
	}
	s.fds, s.evs = nil, nil
	if s.release != nil { // never started: read gets EOF, sh exits
		s.release.Close()
		s.release = nil
		if s.cmd != nil {
			<-s.exited
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("perfevent: close: %w", errors.Join(errs...))
	}
	return nil
}

// Threads returns the thread ids of process pid below root
// (root/proc/PID/task), in numeric order.
func Threads(root string, pid int) ([]int, error) {
	s := &synth{root: root}
	if s.root == "" {
		s.root = "/"
	}
	tids, err := s.numericDir(fmt.Sprintf("proc/%d/task", pid))
	if err != nil {
		return nil, fmt.Errorf("perfevent: threads of pid %d: %w", pid, err)
	}
	if len(tids) == 0 {
		return nil, fmt.Errorf("perfevent: pid %d has no threads", pid)
	}
	return tids, nil
}

// OnlineCPUs returns the online CPUs listed in
// root/sys/devices/system/cpu/online ("0-3,6").
func OnlineCPUs(root string) ([]int, error) {
	if root == "" {
		root = "/"
	}
	name := filepath.Join(root, "sys/devices/system/cpu/online")
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("perfevent: online CPUs: %w", err)
	}
	cpus, err := ParseCPUList(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("perfevent: %s: %w", name, err)
	}
	return cpus, nil
}

// ParseCPUList parses a kernel CPU list such as "0-3,6".
func ParseCPUList(s string) ([]int, error) {
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("bad CPU list %q", s)
		}
		b := a
		if isRange {
			b, err = strconv.Atoi(hi)
			if err != nil || b < a {
				return nil, fmt.Errorf("bad CPU list %q", s)
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) == 0 {
		return nil, fmt.Errorf("empty CPU list %q", s)
	}
	return cpus, nil
}
