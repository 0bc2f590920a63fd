package perfevent

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"os/exec"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

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
		Bits:        hostBitfield(uint64(a.Flags)),
	}
}

// hostBitfield returns flags, numbered from bit 0 = disabled as in
// perf.data, in this machine's C bit-field order (the kernel's): reversed
// on big-endian machines, where bit 0 is the top bit.
func hostBitfield(flags uint64) uint64 {
	if unix.CBitFieldMaskBit0 != 1 {
		return bits.Reverse64(flags)
	}
	return flags
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
	if s.attr.Flags&perfdata.AttrEnableOnExec == 0 {
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
