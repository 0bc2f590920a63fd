package perfevent

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

// putRing writes b into the ring's data area at stream position pos,
// wrapping at its end, as the kernel does.
func putRing(r *ring, pos uint64, b []byte) {
	mask := uint64(len(r.data) - 1)
	for i, c := range b {
		r.data[(pos+uint64(i))&mask] = c
	}
}

func sampleRec(ip uint64, pid, tid uint32, time, period uint64) []byte {
	le := binary.LittleEndian
	b := le.AppendUint32(nil, uint32(perfdata.RecordSample))
	b = le.AppendUint16(b, uint16(perfdata.CPUModeUser))
	b = le.AppendUint16(b, 40)
	b = le.AppendUint64(b, ip)
	b = le.AppendUint32(b, pid)
	b = le.AppendUint32(b, tid)
	b = le.AppendUint64(b, time)
	return le.AppendUint64(b, period)
}

func lostRec(id, lost uint64) []byte {
	le := binary.LittleEndian
	b := le.AppendUint32(nil, uint32(perfdata.RecordLost))
	b = le.AppendUint16(b, 0)
	b = le.AppendUint16(b, 40)
	b = le.AppendUint64(b, id)
	b = le.AppendUint64(b, lost)
	b = le.AppendUint32(b, 7) // trailer: pid, tid, time
	b = le.AppendUint32(b, 8)
	return le.AppendUint64(b, 99)
}

// TestReadRingWrap reads records that wrap around the end of a 64-byte
// ring (a record split in its body, one split in its header, one ending
// exactly at the end) and checks the tail it publishes.
func TestReadRingWrap(t *testing.T) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the test's records are little-endian")
	}
	o := Options{Pid: 1}
	attr := o.Attr()
	var head, tail uint64
	r := &ring{cpu: 3, data: make([]byte, 64), head: &head, tail: &tail}
	s := &Session{dec: perfdata.NewDecoder(&attr, binary.NativeEndian), rings: []*ring{r}}
	type got struct {
		cpu  int
		what string
		a, b uint64
	}
	var gots []got
	fn := func(ev *Event) error {
		switch x := ev.Record.(type) {
		case *perfdata.Sample:
			if len(ev.Raw) != 40 {
				t.Errorf("raw sample of %d bytes", len(ev.Raw))
			}
			gots = append(gots, got{ev.CPU, "sample", x.IP, x.Period})
		case *perfdata.Lost:
			gots = append(gots, got{ev.CPU, "lost", x.ID, x.Lost})
			if x.SampleID.Pid != 7 || x.SampleID.Tid != 8 || x.SampleID.Time != 99 {
				t.Errorf("lost trailer %+v", x.SampleID)
			}
		case *perfdata.FinishedRound:
			gots = append(gots, got{ev.CPU, "round", 0, 0})
		default:
			t.Errorf("unexpected %T", x)
		}
		return nil
	}
	step := func(start uint64, recs ...[]byte) {
		t.Helper()
		head, tail = start, start
		pos := start
		for _, b := range recs {
			putRing(r, pos, b)
			pos += uint64(len(b))
		}
		head = pos
		gots = gots[:0]
		n, err := s.ReadRound(fn)
		if err != nil {
			t.Fatal(err)
		}
		if n != len(recs) || tail != head {
			t.Fatalf("read %d records, tail %d; want %d, head %d", n, tail, len(recs), head)
		}
	}
	step(48, sampleRec(0x401000, 5, 6, 1000, 250)) // body wraps
	if want := []got{{3, "sample", 0x401000, 250}, {-1, "round", 0, 0}}; !slices.Equal(gots, want) {
		t.Errorf("got %v, want %v", gots, want)
	}
	step(64+24, lostRec(11, 17))                       // ends at the end
	step(128+60, sampleRec(0x402000, 5, 6, 2000, 251)) // header wraps
	if want := []got{{3, "sample", 0x402000, 251}, {-1, "round", 0, 0}}; !slices.Equal(gots, want) {
		t.Errorf("got %v, want %v", gots, want)
	}
	if st := s.Stats(); st.Samples != 2 || st.LostRecords != 1 || st.Lost != 17 || st.Records != 3 || st.Rounds != 3 {
		t.Errorf("stats %+v", st)
	}
	// Nothing new: no round.
	gots = gots[:0]
	if n, err := s.ReadRound(fn); n != 0 || err != nil || len(gots) != 0 {
		t.Errorf("empty round: %d, %v, %v", n, err, gots)
	}
	// A corrupt size stops the reader with an error.
	head, tail = 0, 0
	bad := sampleRec(1, 1, 1, 1, 1)
	binary.LittleEndian.PutUint16(bad[6:], 48)
	putRing(r, 0, bad)
	head = 40
	if _, err := s.ReadRound(fn); err == nil {
		t.Error("record larger than the data: no error")
	}
}

// openOrSkip opens a session, skipping the test where perf_event_open is
// not allowed.
func openOrSkip(t *testing.T, o Options) *Session {
	t.Helper()
	s, err := Open(o)
	if errors.Is(err, ErrNotPermitted) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSessionCommand(t *testing.T) {
	s := openOrSkip(t, Options{Freq: 999, Command: []string{"sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"}})
	pid := uint32(s.Pid())
	if s.Attr().Flags&perfdata.AttrEnableOnExec == 0 || len(s.Attr().IDs) != len(s.CPUs()) {
		t.Errorf("attr %+v for %d CPUs", s.Attr(), len(s.CPUs()))
	}
	var synth []perfdata.RecordType
	var comm string
	if _, err := s.Synthesize(func(r perfdata.Record) error {
		synth = append(synth, r.RecordInfo().Type)
		if c, ok := r.(*perfdata.Comm); ok && c.Tid == pid {
			comm = c.Comm
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(synth) == 0 || synth[len(synth)-1] != perfdata.RecordComm || comm != "sh" {
		t.Errorf("synthesized %v, command COMM %q", synth, comm)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var samples, rounds int
	var execComm string
	err := s.Run(ctx, func(ev *Event) error {
		switch x := ev.Record.(type) {
		case *perfdata.Sample:
			samples++
			if x.Pid != pid {
				t.Errorf("sample of pid %d, want %d", x.Pid, pid)
			}
		case *perfdata.Comm:
			if x.Exec() && x.Pid == pid {
				execComm = x.Comm
			}
		case *perfdata.FinishedRound:
			rounds++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("the command did not end the session")
	}
	if samples == 0 || rounds == 0 || uint64(samples) != s.Stats().Samples {
		t.Errorf("%d samples in %d rounds, stats %+v", samples, rounds, s.Stats())
	}
	if execComm != "sh" {
		t.Errorf("exec COMM %q, want sh", execComm)
	}
}

func TestSessionSystemWide(t *testing.T) {
	s := openOrSkip(t, Options{Freq: 999, Pages: 16})
	if s.Attr().SampleType&perfdata.SampleFormatCPU == 0 || s.Attr().Flags&perfdata.AttrEnableOnExec != 0 {
		t.Errorf("attr %+v", s.Attr())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	samples := 0
	err := s.Run(ctx, func(ev *Event) error {
		if x, ok := ev.Record.(*perfdata.Sample); ok {
			samples++
			if int(x.CPU) != ev.CPU || !slices.Contains(s.CPUs(), ev.CPU) {
				t.Errorf("sample of CPU %d in the ring of CPU %d", x.CPU, ev.CPU)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if samples == 0 {
		t.Error("no samples")
	}
}

func TestOpenErrors(t *testing.T) {
	for _, o := range []Options{
		{Pid: 1, Command: []string{"true"}},
		{Pages: 3},
		{Pid: -5},
	} {
		if s, err := Open(o); err == nil {
			s.Close()
			t.Errorf("Open(%+v): no error", o)
		}
	}
}

// perfdata's attr flags, numbered as in perf.data, are x/sys's bit-field
// masks for this machine once in its bit order: the attr the kernel gets
// asks for what the recording's header says.
func TestHostBitfield(t *testing.T) {
	for _, c := range []struct {
		name string
		flag perfdata.AttrFlags
		bit  uint64
	}{
		{"disabled", perfdata.AttrDisabled, unix.PerfBitDisabled},
		{"inherit", perfdata.AttrInherit, unix.PerfBitInherit},
		{"exclude_user", perfdata.AttrExcludeUser, unix.PerfBitExcludeUser},
		{"exclude_kernel", perfdata.AttrExcludeKern, unix.PerfBitExcludeKernel},
		{"exclude_hv", perfdata.AttrExcludeHV, unix.PerfBitExcludeHv},
		{"mmap", perfdata.AttrMmap, unix.PerfBitMmap},
		{"comm", perfdata.AttrComm, unix.PerfBitComm},
		{"freq", perfdata.AttrFreq, unix.PerfBitFreq},
		{"enable_on_exec", perfdata.AttrEnableOnExec, unix.PerfBitEnableOnExec},
		{"task", perfdata.AttrTask, unix.PerfBitTask},
		{"sample_id_all", perfdata.AttrSampleIDAll, unix.PerfBitSampleIDAll},
		{"exclude_host", perfdata.AttrExcludeHost, unix.PerfBitExcludeHost},
		{"exclude_guest", perfdata.AttrExcludeGuest, unix.PerfBitExcludeGuest},
		{"mmap2", perfdata.AttrMmap2, unix.PerfBitMmap2},
		{"comm_exec", perfdata.AttrCommExec, unix.PerfBitCommExec},
		{"use_clockid", perfdata.AttrUseClockID, unix.PerfBitUseClockID},
		{"context_switch", perfdata.AttrContextSwitch, unix.PerfBitContextSwitch},
		{"write_backward", perfdata.AttrWriteBackward, unix.PerfBitWriteBackward},
	} {
		if got := hostBitfield(uint64(c.flag)); got != c.bit {
			t.Errorf("%s: hostBitfield(%#x) = %#x, want %#x", c.name, uint64(c.flag), got, c.bit)
		}
	}
}
