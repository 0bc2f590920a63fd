package perfdata

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A perf.data directory is what perf record --threads and --kcore write
// (perf 6.1's util/data.c): a header file named "data", as a single-file
// recording has, and for --threads (the DIR_FORMAT feature at version 1)
// one more file per writer thread, "data.N", each nothing but records.
// --kcore adds kcore_dir/ (KcoreDirKallsyms).
const (
	// DirHeaderFile is the directory's header file.
	DirHeaderFile = "data"
	// dirDataPrefix starts the names of the data files (perf_data__open_dir).
	dirDataPrefix = "data."
	// KcoreDirKallsyms is the kallsyms copy perf record --kcore leaves in
	// the directory, beside its kcore and modules copies; perf 6.1 reads
	// the kernel's symbols from it unless told a kallsyms or vmlinux
	// (perf_data__kallsyms_name).
	KcoreDirKallsyms = "kcore_dir/kallsyms"

	dirSingleFile = 0 // PERF_DIR_SINGLE_FILE: DIR_FORMAT absent, only "data"
	dirVersion    = 1 // PERF_DIR_VERSION

	// readerMaxSize is perf 6.1's READER_MAX_SIZE: it reads the files of a
	// directory in turn, moving to the next after this many bytes of
	// records (__perf_session__process_dir_events).
	readerMaxSize = 2 << 20
)

// stream is one data file of a directory being read: the header file's
// data section or a whole data.N file. The one being read lends its in,
// pos, end and z to the Reader's own fields (Reader.switchStream).
type stream struct {
	path string
	file *os.File
	in   *dataBuffer
	pos  int64
	end  int64
	z    *zstream
	read int64 // bytes of records read since the turn began (perf's reader size)
	done bool
}

// openDir opens the perf.data directory dir: its header file, and for a
// DIR_FORMAT version 1 recording its non-empty data.N files, in the
// order the directory lists them, as perf_data__open_dir takes them.
// The records are read as __perf_session__process_dir_events reads them:
// the header file's data section first, then readerMaxSize bytes of each
// file in turn, a file leaving the turn when it ends.
func openDir(dir string, opts []Option) (*Reader, error) {
	path := filepath.Join(dir, DirHeaderFile)
	f, fi, err := openStat(path)
	if err != nil {
		return nil, err
	}
	// The header file is read through a buffer, like every data file:
	// a mapping would hold one file's records only.
	r := &Reader{ra: f, size: fi.Size(), dir: dir}
	for _, o := range opts {
		o(r)
	}
	r.mapped = false
	if err := r.init(); err != nil {
		f.Close()
		return nil, namedError(err, path)
	}
	r.closer = f
	if !r.features.Has(FeatDirFormat) || r.features.DirVersion == dirSingleFile {
		return r, nil
	}
	if r.features.DirVersion != dirVersion {
		r.Close()
		return nil, &FormatError{File: path, Off: -1, Msg: fmt.Sprintf("directory data version %d: perf 6.1 reads version %d only", r.features.DirVersion, dirVersion)}
	}
	files, err := dataFiles(dir)
	if err != nil {
		r.Close()
		return nil, err
	}
	r.streams = append(r.streams, stream{path: path, file: f, in: r.in, pos: r.pos, end: r.end})
	for _, s := range files {
		r.streams = append(r.streams, s)
	}
	return r, nil
}

// dataFiles opens the regular files of dir whose names start with
// "data.", in the order the directory lists them (readdir's, which
// perf_data__open_dir keeps), and returns those that are not empty
// (perf reads no empty one). perf 6.1 refuses a version 1 directory
// without any.
func dataFiles(dir string) ([]stream, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("perfdata: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1) // directory order, unsorted
	if err != nil {
		return nil, fmt.Errorf("perfdata: %w", err)
	}
	var out []stream
	seen := 0
	for _, name := range names {
		if !strings.HasPrefix(name, dirDataPrefix) {
			continue
		}
		path := filepath.Join(dir, name)
		fi, err := os.Stat(path)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		seen++
		if fi.Size() == 0 {
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			closeStreams(out)
			return nil, fmt.Errorf("perfdata: %w", err)
		}
		// Read in perf's 2 MiB turns, each file through a buffer of its
		// own: reading ahead would hold three chunks for every file of
		// a recording made with a thread per CPU.
		out = append(out, stream{path: path, file: f, in: plainDataBuffer(f, fi.Size()), end: fi.Size()})
	}
	if seen == 0 {
		return nil, &FormatError{File: dir, Off: -1, Msg: "directory data version 1 without any data.* file (perf 6.1: invalid)"}
	}
	return out, nil
}

func closeStreams(ss []stream) {
	for _, s := range ss {
		s.file.Close()
	}
}

// namedError adds the file's name to err, a FormatError's field when it
// is one.
func namedError(err error, name string) error {
	var fe *FormatError
	if errors.As(err, &fe) && fe.File == "" {
		fe.File = name
		return err
	}
	return fmt.Errorf("%w (file %s)", err, name)
}

// nextStream ends the current data file's turn when it has read
// readerMaxSize bytes of records or is done, and moves to the next one
// not done, in order and round, as perf 6.1 does. It reports false when
// every file is done.
func (r *Reader) nextStream() bool {
	s := &r.streams[r.cur]
	if !s.done && s.read < readerMaxSize {
		return true
	}
	s.read = 0
	for i := 1; i <= len(r.streams); i++ {
		if j := (r.cur + i) % len(r.streams); !r.streams[j].done {
			r.switchStream(j)
			return true
		}
	}
	return false
}

// switchStream makes data file j the one being read.
func (r *Reader) switchStream(j int) {
	s := &r.streams[r.cur]
	s.in, s.pos, s.end, s.z = r.in, r.pos, r.end, r.z
	r.cur = j
	s = &r.streams[j]
	r.in, r.pos, r.end, r.z = s.in, s.pos, s.end, s.z
}

// Files returns the recording's files: the one Open opened, or for a
// perf.data directory its header file and the data files it reads, in
// the order it starts reading them.
func (r *Reader) Files() []string {
	if r.streams == nil {
		if r.dir != "" {
			return []string{filepath.Join(r.dir, DirHeaderFile)}
		}
		return nil
	}
	out := make([]string, len(r.streams))
	for i, s := range r.streams {
		out[i] = s.path
	}
	return out
}

// Dir returns the perf.data directory Open opened, or "".
func (r *Reader) Dir() string { return r.dir }

// closeDir closes the data files of a directory but the header file,
// which Close closes.
func (r *Reader) closeDir() error {
	var err error
	for _, s := range r.streams {
		s.in.close()
	}
	for _, s := range r.streams[1:] {
		if cerr := s.file.Close(); err == nil {
			err = cerr
		}
	}
	r.streams = nil
	return err
}
