package perfevent

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/ingest/kallsyms"
	"github.com/kmapindex/kmapindex/ingest/kmodsec"
	"github.com/kmapindex/kmapindex/ingest/modsec"
	"github.com/kmapindex/kmapindex/ingest/modules"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

// Record-header bits of synthesized records (PERF_RECORD_MISC_*).
const (
	miscKernel   = uint16(perfdata.CPUModeKernel)
	miscUser     = uint16(perfdata.CPUModeUser)
	miscForkExec = 1 << 13 // PERF_RECORD_MISC_FORK_EXEC
	// kernelMmapPrefix starts the filename of the host kernel's MMAP
	// record, before its reference symbol ("[kernel.kallsyms]" + "_text").
	kernelMmapPrefix = index.KernelDSO

	protRead   = 1       // PROT_READ
	protWrite  = 2       // PROT_WRITE
	protExec   = 4       // PROT_EXEC
	mapShared  = 1       // MAP_SHARED
	mapPrivate = 2       // MAP_PRIVATE
	mapHugeTLB = 0x40000 // MAP_HUGETLB
	commLen    = 16      // sizeof(perf_record_comm.comm)
	hostPid    = ^uint32(0)
)

// SynthOptions say which side-band records Synthesize writes.
type SynthOptions struct {
	// Root is the file system root proc/, sys/ and lib/modules/ are read
	// below ("/" when empty); tests point it at a fake tree.
	Root string
	// SystemWide synthesizes every process below Root/proc, as perf
	// record -a does (perf_event__synthesize_threads): per thread a
	// FORK (misc PERF_RECORD_MISC_FORK_EXEC) and a COMM, and for each
	// process's main thread, unless it is a kernel thread, an MMAP2 per
	// executable mapping.
	SystemWide bool
	// Threads are the thread ids of perf record -p
	// (perf_event__synthesize_thread_map): per thread a COMM, and MMAP2s
	// for a thread that leads its process (plus its leader's, when the
	// leader is not among Threads).
	Threads []int
	// Comm are processes that get a COMM only (perf_event__synthesize_comm,
	// which perf record writes for the command it starts).
	Comm []int
}

// Synthesize calls fn with the side-band records perf record writes for
// what already runs when it starts, read below opts.Root, in perf 6.1's
// order: the kernel MMAP ("[kernel.kallsyms]_text", pgoff the address
// of _text), an MMAP per module (/proc/modules, named by its file below
// lib/modules/RELEASE when there is one), then the processes. Records
// have no sample_id values (perf writes zeros) and are valid only during
// the call. Missing kernel files are not errors: the records they would
// give are left out and the returned warnings say why (perf warns the
// same way); processes that vanish during the scan are skipped.
func Synthesize(opts SynthOptions, fn func(perfdata.Record) error) (warnings []string, err error) {
	s := &synth{root: opts.Root, fn: fn}
	if s.root == "" {
		s.root = "/"
	}
	if err := s.kernel(); err != nil {
		return s.warn, err
	}
	switch {
	case opts.SystemWide:
		if err := s.allThreads(); err != nil {
			return s.warn, err
		}
	case len(opts.Threads) > 0:
		if err := s.threadMap(opts.Threads); err != nil {
			return s.warn, err
		}
	}
	for _, pid := range opts.Comm {
		st, ok := s.status(0, pid)
		if !ok {
			s.warnf("no COMM for pid %d: cannot read its status", pid)
			continue
		}
		if err := s.comm(st.tgid, pid, st.name); err != nil {
			return s.warn, err
		}
	}
	return s.warn, nil
}

type synth struct {
	root     string
	fn       func(perfdata.Record) error
	warn     []string
	hugetlbs string // hugetlbfs mount point, "" for none
	hugeRead bool
	mmap     perfdata.Mmap
	commRec  perfdata.Comm
	fork     perfdata.Fork
}

func (s *synth) warnf(format string, args ...any) {
	s.warn = append(s.warn, fmt.Sprintf(format, args...))
}

func (s *synth) file(rel string) string { return filepath.Join(s.root, filepath.FromSlash(rel)) }

// kernel writes the kernel and module MMAPs
// (perf_event__synthesize_kernel_mmap, perf_event__synthesize_modules).
func (s *synth) kernel() error {
	mods, err := s.readModules()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.warnf("no module MMAPs: %v", err)
	}
	if err := s.kernelMmap(mods); err != nil {
		return err
	}
	return s.modules(mods)
}

func (s *synth) kernelMmap(mods []module) error {
	syms, err := kallsyms.ReadFile(s.file("proc/kallsyms"))
	if err != nil {
		s.warnf("no kernel MMAP: %v", err)
		return nil
	}
	if kallsyms.Restricted(syms) {
		s.warnf("no kernel MMAP: %s shows no addresses (kptr_restrict)", s.file("proc/kallsyms"))
		return nil
	}
	l := kallsyms.Landmarks(syms)
	ref, name := l.Text, "_text"
	if !ref.OK {
		ref, name = l.Stext, "_stext"
	}
	if !ref.OK {
		s.warnf("no kernel MMAP: %s has neither _text nor _stext", s.file("proc/kallsyms"))
		return nil
	}
	// machine__get_running_kernel_start: the end is _edata, else
	// _etext, else the start of the map after the kernel's (a module).
	end := ^uint64(0)
	switch {
	case l.Edata.OK:
		end = l.Edata.Addr
	case l.Etext.OK:
		end = l.Etext.Addr
	default:
		for _, m := range mods {
			if m.Start > ref.Addr {
				end = m.Start
				break
			}
		}
	}
	s.mmap = perfdata.Mmap{
		Info: perfdata.Info{Type: perfdata.RecordMmap, Misc: miscKernel},
		Pid:  hostPid, Addr: ref.Addr, Len: end - ref.Addr, Pgoff: ref.Addr,
		Filename: kernelMmapPrefix + name,
	}
	return s.fn(&s.mmap)
}

// module is a /proc/modules line and the file perf names it by.
type module struct {
	index.Module
	path string // "/lib/modules/RELEASE/…/name.ko[.xz]", "" if none
	file string // the same below the root
}

// readModules reads /proc/modules in address order (perf's maps order)
// with the module files found below lib/modules/RELEASE.
func (s *synth) readModules() ([]module, error) {
	ms, err := modules.ReadFile(s.file("proc/modules"))
	if err != nil {
		return nil, err
	}
	mods := make([]module, len(ms))
	for i, m := range ms {
		mods[i].Module = m
	}
	slices.SortStableFunc(mods, func(a, b module) int { return cmp.Compare(a.Start, b.Start) })
	if len(mods) > 0 {
		s.modulePaths(mods)
	}
	return mods, nil
}

// Release returns the kernel release of the machine below root, as perf's
// get_kernel_version reads it from proc/version ("Linux version R ..."),
// or from proc/sys/kernel/osrelease.
func Release(root string) (string, error) {
	if root == "" {
		root = "/"
	}
	b, err := os.ReadFile(filepath.Join(root, "proc", "version"))
	if err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 && f[0] == "Linux" && f[1] == "version" {
			return f[2], nil
		}
	}
	b, err2 := os.ReadFile(filepath.Join(root, "proc", "sys", "kernel", "osrelease"))
	if err2 == nil && len(bytes.TrimSpace(b)) > 0 {
		return string(bytes.TrimSpace(b)), nil
	}
	if err == nil {
		err = err2
	}
	return "", fmt.Errorf("perfevent: kernel release: %w", err)
}

// koSuffixes are the module file suffixes perf's kmod_path__parse_name
// takes (plain and the compressions a Debian perf 6.1 reads).
var koSuffixes = []string{".ko", ".ko.gz", ".ko.xz", ".ko.zst"}

// modulePaths names each module by its file, as machine__set_modules_path
// does: every module file below lib/modules/RELEASE (not following the
// top-level source and build links) renames the module of its kernel
// name; the last one visited wins. perf visits in readdir order; here
// the order is lexical.
func (s *synth) modulePaths(mods []module) {
	rel, err := Release(s.root)
	if err != nil {
		s.warnf("module MMAPs named [name]: %v", err)
		return
	}
	base := path.Join("lib/modules", rel)
	byName := make(map[string][]int)
	for i, m := range mods {
		byName[m.Name] = append(byName[m.Name], i)
	}
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		ents, err := os.ReadDir(s.file(dir))
		if err != nil {
			return
		}
		for _, e := range ents {
			p := path.Join(dir, e.Name())
			fi, err := os.Stat(s.file(p)) // follows links, as perf's stat
			if err != nil {
				continue
			}
			if fi.IsDir() {
				if depth == 0 && (e.Name() == "source" || e.Name() == "build") {
					continue
				}
				walk(p, depth+1)
				continue
			}
			for _, suf := range koSuffixes {
				stem, ok := strings.CutSuffix(e.Name(), suf)
				if !ok {
					continue
				}
				name := strings.ReplaceAll(stem, "-", "_")
				for _, i := range byName[name] {
					mods[i].path = "/" + p
					mods[i].file = s.file(p)
				}
				break
			}
		}
	}
	walk(base, 0)
}

func (s *synth) modules(mods []module) error {
	for _, m := range mods {
		name := m.path
		if name == "" {
			name = "[" + m.Name + "]"
		}
		s.mmap = perfdata.Mmap{
			Info: perfdata.Info{Type: perfdata.RecordMmap, Misc: miscKernel},
			Pid:  hostPid, Addr: m.Start, Len: m.Size, Filename: name,
		}
		if err := s.fn(&s.mmap); err != nil {
			return err
		}
	}
	return nil
}

// status is what perf_event__get_comm_ids takes from a status file.
type status struct {
	name         string
	tgid, ppid   int
	kernelThread bool
}

// status reads ROOT/proc/PID/task/TID/status (pid 0: ROOT/proc/TID/status).
func (s *synth) status(pid, tid int) (status, bool) {
	p := fmt.Sprintf("proc/%d/status", tid)
	if pid != 0 {
		p = fmt.Sprintf("proc/%d/task/%d/status", pid, tid)
	}
	b, err := readPrefix(s.file(p), 4095)
	if err != nil || len(b) == 0 {
		return status{}, false
	}
	st := status{tgid: -1, ppid: -1}
	text := string(b)
	field := func(from int, key string) int {
		if from < 0 {
			from = 0
		}
		i := strings.Index(text[from:], key)
		if i < 0 {
			return -1
		}
		return from + i
	}
	name := field(0, "Name:")
	tgid := field(name, "Tgid:")
	ppid := field(tgid, "PPid:")
	vmpeak := field(ppid, "VmPeak:")
	threads := -1
	if vmpeak < 0 {
		threads = field(ppid, "Threads:")
	}
	if name >= 0 {
		v := strings.TrimLeft(text[name+5:], " \t\n\v\f\r")
		if nl := strings.IndexByte(v, '\n'); nl >= 0 {
			v = v[:nl]
		}
		if len(v) >= commLen {
			v = v[:commLen-1]
		}
		st.name = v
	}
	if tgid >= 0 {
		st.tgid = atoi(text[tgid+5:])
	}
	if ppid >= 0 {
		st.ppid = atoi(text[ppid+5:])
	}
	st.kernelThread = vmpeak < 0 && threads >= 0
	if st.tgid < 0 {
		return status{}, false
	}
	return st, true
}

// atoi is C's atoi: leading white space, a sign, digits.
func atoi(s string) int {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	n := 0
	for i := 0; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		n = n*10 + int(s[i]-'0')
	}
	if neg {
		return -n
	}
	return n
}

func readPrefix(name string, n int) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	m, err := f.Read(b)
	if m > 0 {
		return b[:m], nil
	}
	return nil, err
}

func (s *synth) comm(tgid, tid int, name string) error {
	s.commRec = perfdata.Comm{Info: perfdata.Info{Type: perfdata.RecordComm}, Pid: uint32(tgid), Tid: uint32(tid), Comm: name}
	return s.fn(&s.commRec)
}

// numericDir lists the all-digit names in ROOT/dir in numeric order
// (readdir order of /proc).
func (s *synth) numericDir(dir string) ([]int, error) {
	ents, err := os.ReadDir(s.file(dir))
	if err != nil {
		return nil, err
	}
	var ids []int
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n < 0 || e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		ids = append(ids, n)
	}
	slices.Sort(ids)
	return ids, nil
}

// allThreads is perf_event__synthesize_threads: every process, each
// thread a FORK and a COMM, the main thread's maps.
func (s *synth) allThreads() error {
	pids, err := s.numericDir("proc")
	if err != nil {
		return fmt.Errorf("perfevent: synthesizing threads: %w", err)
	}
	for _, pid := range pids {
		tids, err := s.numericDir(fmt.Sprintf("proc/%d/task", pid))
		if err != nil {
			continue // exited
		}
		for _, tid := range tids {
			st, ok := s.status(pid, tid)
			if !ok {
				continue
			}
			ppid := st.ppid
			if st.tgid != tid {
				ppid = st.tgid
			}
			s.fork = perfdata.Fork{Info: perfdata.Info{Type: perfdata.RecordFork, Misc: miscForkExec},
				Pid: uint32(st.tgid), Ppid: uint32(ppid), Tid: uint32(tid), Ptid: uint32(ppid)}
			if err := s.fn(&s.fork); err != nil {
				return err
			}
			if err := s.comm(st.tgid, tid, st.name); err != nil {
				return err
			}
			if tid == pid && !st.kernelThread {
				ok, err := s.maps(pid, st.tgid)
				if err != nil {
					return err
				}
				if !ok {
					// perf's __event__synthesize_thread stops at a
					// maps file it cannot open: the process's later
					// threads get no records.
					break
				}
			}
		}
	}
	return nil
}

// errMapsUnreadable stops threadMap as perf_event__synthesize_thread_map
// stops at a maps file it cannot open.
var errMapsUnreadable = errors.New("maps file unreadable")

// threadMap is perf_event__synthesize_thread_map for the threads of -p.
func (s *synth) threadMap(tids []int) error {
	for _, tid := range tids {
		tgid, err := s.oneThread(tid)
		if err == nil && tgid >= 0 && tgid != tid && !slices.Contains(tids, tgid) {
			_, err = s.oneThread(tgid)
		}
		if errors.Is(err, errMapsUnreadable) {
			s.warnf("thread synthesis stopped at thread %d: its process's maps are unreadable", tid)
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// oneThread is __event__synthesize_thread with full = 0: a COMM, and the
// maps of a thread group leader. It returns the tgid (-1: vanished).
func (s *synth) oneThread(tid int) (int, error) {
	st, ok := s.status(0, tid)
	if !ok {
		s.warnf("thread %d: cannot read its status", tid)
		return -1, nil
	}
	if err := s.comm(st.tgid, tid, st.name); err != nil {
		return -1, err
	}
	if tid == st.tgid {
		ok, err := s.maps(tid, st.tgid)
		if err != nil {
			return -1, err
		}
		if !ok {
			return -1, errMapsUnreadable
		}
	}
	return st.tgid, nil
}

// hugetlbfs returns the first hugetlbfs mount point in ROOT/proc/mounts.
func (s *synth) hugetlbfs() string {
	if s.hugeRead {
		return s.hugetlbs
	}
	s.hugeRead = true
	b, err := os.ReadFile(s.file("proc/mounts"))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[2] == "hugetlbfs" {
			s.hugetlbs = f[1]
			break
		}
	}
	return s.hugetlbs
}

// maps writes an MMAP2 per executable mapping of ROOT/proc/PID/task/PID/maps
// (perf_event__synthesize_mmap_events without data mappings). It reports
// false when the file cannot be opened (the process exited, or access is
// denied), which perf's callers treat as a failure.
func (s *synth) maps(pid, tgid int) (bool, error) {
	f, err := os.Open(s.file(fmt.Sprintf("proc/%d/task/%d/maps", pid, pid)))
	if err != nil {
		return false, nil
	}
	defer f.Close()
	huge := s.hugetlbfs()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		m, ok := parseMapsLine(sc.Text())
		if !ok || m.Prot&protExec == 0 {
			continue
		}
		m.Info = perfdata.Info{Type: perfdata.RecordMmap2, Misc: miscUser}
		if m.Filename == "" {
			m.Filename = "//anon"
		}
		if huge != "" && strings.HasPrefix(m.Filename, huge) {
			m.Filename = "//anon"
			m.Flags |= mapHugeTLB
		}
		m.Pid, m.Tid = uint32(tgid), uint32(pid)
		s.mmap = m
		if err := s.fn(&s.mmap); err != nil {
			return true, err
		}
	}
	return true, nil
}

// parseMapsLine parses "start-end perms offset maj:min inode   path" as
// perf's read_proc_maps_line; the path is the rest of the line (up to
// 4095 bytes, perf's PATH_MAX buffer).
func parseMapsLine(line string) (perfdata.Mmap, bool) {
	var m perfdata.Mmap
	hex := func(sep byte) (uint64, bool) {
		i := strings.IndexByte(line, sep)
		if i <= 0 {
			return 0, false
		}
		v, err := strconv.ParseUint(line[:i], 16, 64)
		line = line[i+1:]
		return v, err == nil
	}
	start, ok1 := hex('-')
	end, ok2 := hex(' ')
	if !ok1 || !ok2 || len(line) < 5 || line[4] != ' ' {
		return m, false
	}
	p := line[:4]
	line = line[5:]
	for i, c := range []byte{'r', 'w', 'x'} {
		switch p[i] {
		case c:
			m.Prot |= 1 << i // PROT_READ, PROT_WRITE, PROT_EXEC
		case '-':
		default:
			return m, false
		}
	}
	switch p[3] {
	case 's':
		m.Flags = mapShared
	case 'p':
		m.Flags = mapPrivate
	default:
		return m, false
	}
	off, ok3 := hex(' ')
	maj, ok4 := hex(':')
	min, ok5 := hex(' ')
	if !ok3 || !ok4 || !ok5 {
		return m, false
	}
	i := 0
	for i < len(line) && line[i] >= '0' && line[i] <= '9' {
		i++
	}
	ino, err := strconv.ParseUint(line[:i], 10, 64)
	if i == 0 || err != nil {
		return m, false
	}
	line = strings.TrimLeft(line[i:], " ")
	if j := strings.IndexByte(line, 0); j >= 0 {
		line = line[:j]
	}
	if len(line) > 4095 {
		line = line[:4095]
	}
	m.Addr, m.Len, m.Pgoff = start, end-start, off
	m.Maj, m.Min, m.Ino = uint32(maj), uint32(min), ino
	m.Filename = line
	return m, true
}

// KmodSecRecords returns the PERF_RECORD_KMOD_SEC_MAP records of every
// loaded module below root (see ingest/modsec and docs/kmod-sec-map.md):
// for each /proc/modules entry with a sys/module/NAME/sections directory
// and an uncompressed module file below lib/modules/RELEASE, one record
// per placed section, in address order of the modules. Modules without
// them are listed in the warnings.
func KmodSecRecords(root string) ([]kmodsec.Record, []string, error) {
	s := &synth{root: root}
	if s.root == "" {
		s.root = "/"
	}
	mods, err := s.readModules()
	if err != nil {
		return nil, nil, fmt.Errorf("perfevent: KMOD_SEC_MAP records: %w", err)
	}
	fsys := os.DirFS(s.root)
	var recs []kmodsec.Record
	for _, m := range mods {
		if m.path == "" || !strings.HasSuffix(m.path, ".ko") {
			s.warnf("module %s: no KMOD_SEC_MAP records: no uncompressed module file", m.Name)
			continue
		}
		addrs, err := modsec.ReadSysfs(fsys, modsec.SysfsDir(m.Name))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				s.warnf("module %s: no KMOD_SEC_MAP records: no section addresses", m.Name)
				continue
			}
			return nil, s.warn, fmt.Errorf("perfevent: module %s: %w", m.Name, err)
		}
		f, err := os.Open(m.file)
		if err != nil {
			s.warnf("module %s: no KMOD_SEC_MAP records: %v", m.Name, err)
			continue
		}
		secs, err := modsec.ReadELFSections(f)
		f.Close()
		if err != nil {
			s.warnf("module %s: no KMOD_SEC_MAP records: %v", m.Name, err)
			continue
		}
		r, err := modsec.Records(m.Module, addrs, secs, m.path)
		if err != nil {
			s.warnf("module %s: no KMOD_SEC_MAP records: %v", m.Name, err)
			continue
		}
		recs = append(recs, r...)
	}
	return recs, s.warn, nil
}
