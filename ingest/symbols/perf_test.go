package symbols

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/internal/perftest"
)

// perfBin returns the perf binary or skips the test.
func perfBin(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("perf")
	if err != nil {
		t.Skip("perf not installed; the comparison with perf 6.1 needs it")
	}
	return p
}

var (
	reMmap = regexp.MustCompile(`^\s*(-?\d+)/(-?\d+)\s+PERF_RECORD_MMAP2? (-?\d+)/(-?\d+): \[0x([0-9a-f]+)\(0x([0-9a-f]+)\) @ (0x[0-9a-f]+|0)[^\]]*\]: \S+ (.*)$`)
	reFork = regexp.MustCompile(`PERF_RECORD_FORK\((\d+):(\d+)\):\((\d+):(\d+)\)`)
	// A sample line without callchain, or a callchain line.
	reSample = regexp.MustCompile(`^\s*(\d+)/(\d+)\s+([0-9a-f]+) (.*) \((.*)\)$`)
	reFrame  = regexp.MustCompile(`^\s+([0-9a-f]+) (.*) \((.*)\)$`)
	reHead   = regexp.MustCompile(`^\s*(\d+)/(\d+)\s*$`)
)

// resolver rebuilds perf's view from perf script output and symbolizes.
type resolver struct {
	t       *testing.T
	kernel  *KernelTables
	threads map[int]*index.Maps
	tables  map[string]*Table
	vdso    string
}

func (r *resolver) table(dso string) *Table {
	if tb, ok := r.tables[dso]; ok {
		return tb
	}
	path := dso
	var tb *Table
	var err error
	if dso == "[vdso]" {
		path = r.vdso
	}
	if path == "" {
		err = fmt.Errorf("no file")
	} else {
		tb, err = ELFWithDebug(path, FindDebug(path))
	}
	if err != nil {
		r.t.Logf("%s: %v", dso, err)
	}
	r.tables[dso] = tb
	return tb
}

func (r *resolver) maps(pid int) *index.Maps {
	ms := r.threads[pid]
	if ms == nil {
		ms = index.New()
		r.threads[pid] = ms
	}
	return ms
}

// expected is perf's "sym+0xoff" or "[unknown]".
func format(s Symbol, ok bool, addr uint64) string {
	if !ok {
		return Unknown
	}
	return fmt.Sprintf("%s+0x%x", s.Name, s.Offset(addr))
}

type tally struct{ matched, total int }

// runScript records workload and compares every sample (and, with
// callchain, every frame) with perf script.
func runScript(t *testing.T, callchain bool) (kern, user tally) {
	perf := perfBin(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "perf.data")
	args := []string{"-e", "cpu-clock", "-F", "4000"}
	if callchain {
		args = append(args, "-g")
	}
	if err := perftest.Record(data, args, "sh", "-c",
		`for i in 1 2 3 4; do cat /proc/kallsyms >/dev/null; ls -R /usr/lib/python3* /usr/share/perl* >/dev/null 2>&1; done`); err != nil {
		t.Skip(err)
	}
	out, err := exec.Command(perf, "script", "-i", data, "--show-mmap-events", "--show-task-events",
		"-F", "pid,tid,ip,sym,symoff,dso").Output()
	if err != nil {
		t.Fatalf("perf script: %v", err)
	}
	ks, err := kallsyms.ReadFile("/proc/kallsyms")
	if err != nil || kallsyms.Restricted(ks) {
		t.Skipf("/proc/kallsyms unreadable or restricted: %v", err)
	}
	r := &resolver{t: t, kernel: Kernel(ks, nil), threads: map[int]*index.Maps{},
		tables: map[string]*Table{}, vdso: extractVDSO(t, dir)}
	mismatches := 0
	check := func(pid int, ip uint64, sym, dso string, dsoRelative bool) {
		var got string
		var tl *tally
		switch {
		case dso == Unknown: // no map: perf prints [unknown] for both
			tl = &user
			got = Unknown
		case dso == "[kernel.kallsyms]":
			tl = &kern
			s, ok := r.kernel.Kernel.Find(ip)
			got = format(s, ok, ip)
		default:
			tl = &user
			addr := ip
			if !dsoRelative {
				m, ok := r.maps(pid).Find(ip)
				if !ok {
					got = "no map"
					break
				}
				if m.DSO != dso {
					got = "map " + m.DSO
					break
				}
				addr = m.MapIP(ip)
			}
			s, ok := r.table(dso).Find(addr)
			got = format(s, ok, addr)
		}
		tl.total++
		if got == sym {
			tl.matched++
		} else if mismatches++; mismatches <= 20 {
			t.Errorf("pid %d ip %#x dso %s: got %q, perf %q", pid, ip, dso, got, sym)
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	headPid := -1
	for sc.Scan() {
		line := sc.Text()
		if m := reMmap.FindStringSubmatch(line); m != nil {
			pid, _ := strconv.Atoi(m[3])
			start, _ := strconv.ParseUint(m[5], 16, 64)
			size, _ := strconv.ParseUint(m[6], 16, 64)
			pgoff, _ := strconv.ParseUint(strings.TrimPrefix(m[7], "0x"), 16, 64)
			name := m[8]
			if pid == -1 || strings.HasPrefix(name, "[kernel.kallsyms]") {
				continue // the kernel map: identity, symbols by ip
			}
			if name == "[vdso]" {
				pgoff = 0
			}
			mp := index.Map{Start: start, End: start + size, Pgoff: pgoff, Kind: index.KindUser, DSO: name}
			if err := r.maps(pid).FixupOverlapAndInsert(mp); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if m := reFork.FindStringSubmatch(line); m != nil {
			child, _ := strconv.Atoi(m[1])
			parent, _ := strconv.Atoi(m[3])
			if child != parent {
				r.threads[child] = r.maps(parent).Clone()
			}
			continue
		}
		if strings.Contains(line, "PERF_RECORD_") {
			continue
		}
		if m := reHead.FindStringSubmatch(line); m != nil && callchain {
			headPid, _ = strconv.Atoi(m[1])
			continue
		}
		if m := reSample.FindStringSubmatch(line); m != nil && !callchain {
			pid, _ := strconv.Atoi(m[1])
			ip, _ := strconv.ParseUint(m[3], 16, 64)
			check(pid, ip, m[4], m[5], false)
			continue
		}
		if m := reFrame.FindStringSubmatch(line); m != nil && callchain && headPid >= 0 {
			ip, _ := strconv.ParseUint(m[1], 16, 64)
			// perf script prints user frames of a callchain as DSO
			// addresses (map_ip), kernel frames as they are.
			check(headPid, ip, m[2], m[3], m[3] != "[kernel.kallsyms]")
		}
	}
	return kern, user
}

// extractVDSO copies this process's vDSO (the same image as every process
// on this kernel) to a file, for the "[vdso]" DSO.
func extractVDSO(t *testing.T, dir string) string {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(maps), "\n") {
		if !strings.HasSuffix(line, "[vdso]") {
			continue
		}
		var lo, hi uint64
		if _, err := fmt.Sscanf(line, "%x-%x", &lo, &hi); err != nil {
			return ""
		}
		f, err := os.Open("/proc/self/mem")
		if err != nil {
			return ""
		}
		defer f.Close()
		b := make([]byte, hi-lo)
		if _, err := f.ReadAt(b, int64(lo)); err != nil {
			return ""
		}
		p := filepath.Join(dir, "vdso.so")
		if os.WriteFile(p, b, 0o644) != nil {
			return ""
		}
		return p
	}
	return ""
}

func TestAgainstPerfScript(t *testing.T) {
	if testing.Short() {
		t.Skip("records with perf")
	}
	for _, cc := range []bool{false, true} {
		t.Run(fmt.Sprintf("callchain=%v", cc), func(t *testing.T) {
			kern, user := runScript(t, cc)
			t.Logf("kernel %d/%d matched, user %d/%d matched", kern.matched, kern.total, user.matched, user.total)
			if kern.total == 0 || user.total == 0 {
				t.Errorf("workload produced no kernel or no user samples")
			}
		})
	}
}
