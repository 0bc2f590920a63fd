package perfstat

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

var le = binary.LittleEndian

// record builds a record of type t with body words (u64s, u32s or u16s as
// given by their Go types, or raw bytes), its header's size set.
func record(t perfdata.RecordType, body ...any) []byte {
	b := make([]byte, 8)
	for _, f := range body {
		switch v := f.(type) {
		case uint64:
			b = le.AppendUint64(b, v)
		case uint32:
			b = le.AppendUint32(b, v)
		case uint16:
			b = le.AppendUint16(b, v)
		case uint8:
			b = append(b, v)
		case []byte:
			b = append(b, v...)
		default:
			panic("record: a field of another type")
		}
	}
	le.PutUint32(b, uint32(t))
	le.PutUint16(b[6:], uint16(len(b)))
	return b
}

func threadMap(pids ...uint64) []byte {
	body := []any{uint64(len(pids))}
	for _, p := range pids {
		body = append(body, p, make([]byte, 16))
	}
	return record(perfdata.RecordThreadMap, body...)
}

func cpuList(cpus ...uint16) []byte {
	body := []any{uint16(0), uint16(len(cpus))}
	for _, c := range cpus {
		body = append(body, c)
	}
	return record(perfdata.RecordCPUMap, body...)
}

func statConfig(terms ...uint64) []byte {
	body := []any{uint64(len(terms) / 2)}
	for _, t := range terms {
		body = append(body, t)
	}
	return record(perfdata.RecordStatConfig, body...)
}

func stat(id uint64, cpu, thread uint32, val, ena, run uint64) []byte {
	return record(perfdata.RecordStat, id, cpu, thread, val, ena, run)
}

func round(time uint64) []byte { return record(perfdata.RecordStatRound, uint64(1), time) }

// ids gives events 0 and 1 the ids 10 and 11.
func ids(id uint64) (int, bool) {
	if id == 10 || id == 11 {
		return int(id - 10), true
	}
	return 0, false
}

// names returns a names function for New.
func names(n ...string) func() []string { return func() []string { return n } }

// replay applies recs in order and returns the text printed.
func replay(t *testing.T, c *Counters, recs ...[]byte) string {
	t.Helper()
	var out []byte
	for i, r := range recs {
		var err error
		if out, err = c.Record(out, r, le, int64(i)); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	return string(out)
}

func TestCPUMapEncodings(t *testing.T) {
	mask64 := make([]byte, 16)
	mask64[0], mask64[8] = 0b101, 0b1 // CPUs 0, 2 and 64
	tests := []struct {
		name string
		data []any // perf_record_cpu_map_data
		want []int32
		err  bool
	}{
		{"list, -1 and unsorted", []any{uint16(0), uint16(3), uint16(0xffff), uint16(3), uint16(1)}, []int32{-1, 3, 1}, false},
		{"mask of 32-bit words", []any{uint16(1), uint16(2), uint16(4), uint32(0b110), uint32(1)}, []int32{1, 2, 32}, false},
		{"mask of 64-bit words after padding", []any{uint16(1), uint16(2), uint16(8), uint32(0xdeadbeef), mask64}, []int32{0, 2, 64}, false},
		{"range", []any{uint16(2), uint8(0), uint8(0), uint16(2), uint16(4)}, []int32{2, 3, 4}, false},
		{"range with any CPU", []any{uint16(2), uint8(1), uint8(0), uint16(0), uint16(1)}, []int32{-1, 0, 1}, false},
		// perf counts any_cpu's value and leaves the extra entries -1.
		{"range with any CPU 3", []any{uint16(2), uint8(3), uint8(0), uint16(5), uint16(5)}, []int32{-1, 5, -1, -1}, false},
		{"empty range", []any{uint16(2), uint8(0), uint8(0), uint16(5), uint16(3)}, nil, true},
		{"unknown type", []any{uint16(7), uint16(0)}, nil, true},
		{"mask of 16-bit words", []any{uint16(1), uint16(1), uint16(2), uint16(1)}, nil, true},
		{"list beyond the record", []any{uint16(0), uint16(9), uint16(1)}, nil, true},
		{"range cut short", []any{uint16(2), uint8(0)}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := record(perfdata.RecordCPUMap, tt.data...)
			d := decoder{rec: rec, bo: le, off: 0x40, t: perfdata.RecordCPUMap}
			got, err := d.cpuMap(8)
			if tt.err {
				var e *Error
				if !errors.As(err, &e) || e.Off != 0x40 || e.Type != perfdata.RecordCPUMap {
					t.Fatalf("got %v, %v; want an *Error at 0x40", got, err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// In the per-CPU mode (AGGR_NONE) with scaling, a round prints each
// count's change since the last round, scaled by enabled/running; in
// AGGR_GLOBAL the counts as recorded. A count no STAT record updated
// changes as perf's in-place arithmetic makes it.
func TestRoundsAsPerfScript(t *testing.T) {
	maps := [][]byte{threadMap(^uint64(0)), cpuList(0, 1)}
	t.Run("per CPU, scaled", func(t *testing.T) {
		c := New(names("cpu-clock", "cycles"), ids)
		got := replay(t, c, append(maps,
			statConfig(termAggrMode, aggrNone, termScale, 1),
			stat(10, 0, 0, 100, 50, 50), stat(10, 1, 0, 300, 40, 20), round(7),
			stat(10, 0, 0, 150, 80, 80), round(9))...)
		want := strings.Join([]string{
			"CPU   THREAD             VAL             ENA             RUN            TIME EVENT",
			"  0       -1             100              50              50               7 cpu-clock",
			"  1       -1             600              40              20               7 cpu-clock",
			"  0       -1               0               0               0               7 cycles",
			"  1       -1               0               0               0               7 cycles",
			"  0       -1              50              30              30               9 cpu-clock",
			// 600-300 = 300, 40-40 = 0, 20-20 = 0: run 0 scales to 0.
			"  1       -1               0               0               0               9 cpu-clock",
			"  0       -1               0               0               0               9 cycles",
			"  1       -1               0               0               0               9 cycles",
		}, "\n") + "\n"
		if got != want {
			t.Errorf("got\n%s\nwant\n%s", got, want)
		}
	})
	t.Run("global", func(t *testing.T) {
		c := New(names("cpu-clock", "cycles"), ids)
		got := replay(t, c, append(maps,
			statConfig(termAggrMode, 1, termScale, 1, 3, 0),
			stat(10, 1, 0, 300, 40, 20), round(7), round(8))...)
		if n := strings.Count(got, "  1       -1             300              40              20 "); n != 2 {
			t.Errorf("the raw count printed %d times, want 2:\n%s", n, got)
		}
		if w := c.Warnings(); !slices.Equal(w, []string{"unknown stat config term 3"}) {
			t.Errorf("warnings %q", w)
		}
	})
}

// An EVENT_UPDATE names an event and gives it CPUs of its own, which it
// keeps unless the recording's CPU map is a thread recording's (-1).
func TestEventUpdate(t *testing.T) {
	name := record(perfdata.RecordEventUpdate, uint64(2), uint64(11), []byte("cpu_core/cycles/\x00\x00\x00\x00\x00\x00\x00\x00"))
	cpus := record(perfdata.RecordEventUpdate, uint64(3), uint64(11), uint16(0), uint16(1), uint16(1), uint16(0))
	c := New(names("a", "b"), ids)
	got := replay(t, c, name, cpus, threadMap(5), cpuList(0, 1), stat(11, 1, 0, 9, 9, 9), round(1))
	want := "CPU   THREAD             VAL             ENA             RUN            TIME EVENT\n" +
		"  0        5               0               0               0               1 a\n" +
		"  1        5               0               0               0               1 a\n" +
		"  1        5               9               9               9               1 cpu_core/cycles/\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	c = New(names("a", "b"), ids)
	got = replay(t, c, cpus, threadMap(5), cpuList(0xffff), round(1))
	if strings.Count(got, " -1        5 ") != 2 {
		t.Errorf("a thread recording's events keep their own CPUs:\n%s", got)
	}
}

func TestRecordErrors(t *testing.T) {
	maps := [][]byte{threadMap(1), cpuList(0)}
	tests := []struct {
		name string
		recs [][]byte
		msg  string
	}{
		{"stat before the maps", [][]byte{stat(10, 0, 0, 1, 1, 1)}, "before the thread and cpu maps"},
		{"round before the maps", [][]byte{round(1)}, "before the thread and cpu maps"},
		{"unknown id", append(maps, stat(12, 0, 0, 1, 1, 1)), "no event has id 12"},
		{"invalid CPU", append(maps, stat(10, 3, 0, 1, 1, 1)), "invalid CPU 3"},
		{"thread out of range", append(maps, stat(10, 0, 1, 1, 1, 1)), "thread 1"},
		{"short stat", [][]byte{record(perfdata.RecordStat, uint64(10))}, "bytes at byte"},
		{"thread map beyond the record", [][]byte{record(perfdata.RecordThreadMap, uint64(3))}, "3 entries"},
		{"config beyond the record", [][]byte{record(perfdata.RecordStatConfig, uint64(1<<40))}, "terms"},
		{"too many counts", [][]byte{threadMap(make([]uint64, 100)...), record(perfdata.RecordCPUMap, uint16(2), uint8(0), uint8(0), uint16(0), uint16(20000))}, "counts, more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(names("a", "b"), ids)
			var err error
			at := 0
			for i, r := range tt.recs {
				if _, err = c.Record(nil, r, le, int64(0x100*i)); err != nil {
					at = i
					break
				}
			}
			var e *Error
			if !errors.As(err, &e) || e.Off != int64(0x100*at) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("got %v, want an *Error at %#x containing %q", err, 0x100*at, tt.msg)
			}
		})
	}
}

// FuzzRecord feeds records of every type to a recording with two events;
// a record may fail, never panic, and the counts stay bounded.
func FuzzRecord(f *testing.F) {
	for _, r := range [][]byte{threadMap(1, 2), cpuList(0, 1), statConfig(0, 0, 2, 1), stat(10, 1, 1, 5, 5, 4), round(3),
		record(perfdata.RecordEventUpdate, uint64(3), uint64(10), uint16(2), uint8(1), uint8(0), uint16(0), uint16(3))} {
		f.Add(r[8:], uint8(bodyType(r)))
	}
	f.Fuzz(func(t *testing.T, body []byte, kind uint8) {
		c := New(names("a", "b"), ids)
		types := []perfdata.RecordType{perfdata.RecordThreadMap, perfdata.RecordCPUMap, perfdata.RecordStatConfig,
			perfdata.RecordStat, perfdata.RecordStatRound, perfdata.RecordEventUpdate}
		rec := record(types[int(kind)%len(types)], body)
		// The fuzzed record, then the rest of a recording around it.
		for _, r := range [][]byte{rec, threadMap(1, 2), cpuList(0, 1), rec, stat(10, 1, 1, 5, 5, 4), rec, round(3)} {
			out, _ := c.Record(nil, r, le, 0)
			if len(out) > 200*maxCounts {
				t.Fatalf("%d bytes of text", len(out))
			}
		}
	})
}

func bodyType(rec []byte) int {
	for i, t := range []perfdata.RecordType{perfdata.RecordThreadMap, perfdata.RecordCPUMap, perfdata.RecordStatConfig,
		perfdata.RecordStat, perfdata.RecordStatRound, perfdata.RecordEventUpdate} {
		if perfdata.RecordType(le.Uint32(rec)) == t {
			return i
		}
	}
	return 0
}
