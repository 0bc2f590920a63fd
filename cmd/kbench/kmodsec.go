package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/kmapindex/kmapindex/corpus"
	"github.com/kmapindex/kmapindex/ingest/kmodsec"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

// runKmodsec implements "kbench kmodsec": dump and write KMOD_SEC_MAP
// record streams. Everything it needs is declared inside it, so that it
// shares no names with the rest of package main.
func runKmodsec(args []string, stdout, stderr io.Writer) error {
	const usage = `usage:
  kbench kmodsec dump [-type N] FILE
	print the KMOD_SEC_MAP records of a perf.data file or of a bare
	record stream (kmodsec.data)
  kbench kmodsec write -corpus DIR -o FILE [-type N] [-be] [-prefix P]
	write the records of a corpus's modules (modules, sys/module/*/sections,
	ko/*.ko) as a bare record stream
`
	orderName := func(order binary.ByteOrder) string {
		if order.Uint16([]byte{1, 0}) == 1 {
			return "little-endian"
		}
		return "big-endian"
	}
	dump := func(name string, typ uint32, stdout io.Writer) error {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("dump: %w", err)
		}
		defer f.Close()
		br := bufio.NewReader(f)
		var recs []kmodsec.Record
		var order binary.ByteOrder
		if head, _ := br.Peek(8); kmodsec.IsPerfData(head) {
			r, err := perfdata.Open(name)
			if err != nil {
				return fmt.Errorf("dump: %w", err)
			}
			defer r.Close()
			if recs, err = kmodsec.FromPerfData(r, typ); err != nil {
				return fmt.Errorf("dump %s: %w", name, err)
			}
			order = r.ByteOrder()
		} else if recs, order, err = kmodsec.ReadStream(br, typ); err != nil {
			return fmt.Errorf("dump %s: %w", name, err)
		}
		w := bufio.NewWriter(stdout)
		fmt.Fprintf(w, "# %s: %d records of type %d, %s\n", name, len(recs), typ, orderName(order))
		fmt.Fprintf(w, "# pid\tstart\tlen\tpgoff\tsection\tpath\n")
		for _, r := range recs {
			fmt.Fprintf(w, "%d\t%#x\t%#x\t%#x\t%s\t%s\n", r.Pid, r.Start, r.Len, r.Pgoff, r.Section, r.Path)
		}
		return w.Flush()
	}
	write := func(dir, out, prefix string, typ uint32, order binary.ByteOrder, stdout, stderr io.Writer) error {
		if !strings.Contains(prefix, "/") {
			return fmt.Errorf("write: -prefix %q has no '/'; the records' paths need one", prefix)
		}
		c, err := corpus.Load(dir)
		if err != nil {
			return fmt.Errorf("write: %w", err)
		}
		if !c.HasModules {
			return fmt.Errorf("write: corpus %s has no modules file", dir)
		}
		mods, skipped, err := c.ModuleSections(prefix)
		if err != nil {
			return fmt.Errorf("write: %w", err)
		}
		var recs []kmodsec.Record
		for _, m := range mods {
			recs = append(recs, m.Records...)
		}
		used := len(mods)
		if len(skipped) > 0 {
			fmt.Fprintf(stderr, "write: skipped %d modules: %s\n", len(skipped), strings.Join(skipped, ", "))
		}
		f, err := os.Create(out)
		if err != nil {
			return fmt.Errorf("write: %w", err)
		}
		if err := kmodsec.WriteStream(f, recs, order, typ); err != nil {
			f.Close()
			return fmt.Errorf("write %s: %w", out, err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		fmt.Fprintf(stdout, "wrote %d records for %d modules to %s (%s, type %d)\n", len(recs), used, out, orderName(order), typ)
		return nil
	}
	if len(args) == 0 {
		fmt.Fprint(stderr, "kbench kmodsec: missing subcommand (dump or write)\n", usage)
		return errUsage
	}
	typeFlag := func(set *flag.FlagSet) *uint {
		return set.Uint("type", kmodsec.DefaultType, "record type number (the RFC's 83 is PERF_RECORD_COMPRESSED2 in current perf)")
	}
	checkType := func(t uint) (uint32, error) {
		if t > math.MaxUint32 {
			return 0, fmt.Errorf("-type %d does not fit in 32 bits", t)
		}
		return uint32(t), nil
	}
	switch args[0] {
	case "dump":
		set := flag.NewFlagSet("kbench kmodsec dump", flag.ContinueOnError)
		set.SetOutput(stderr)
		typ := typeFlag(set)
		set.Usage = func() { fmt.Fprint(stderr, usage); set.PrintDefaults() }
		if err := parseFlags(set, args[1:]); err != nil {
			return err
		}
		if set.NArg() != 1 {
			set.Usage()
			return errors.New("dump: want exactly one FILE")
		}
		t, err := checkType(*typ)
		if err != nil {
			return err
		}
		return dump(set.Arg(0), t, stdout)
	case "write":
		set := flag.NewFlagSet("kbench kmodsec write", flag.ContinueOnError)
		set.SetOutput(stderr)
		typ := typeFlag(set)
		corpus := set.String("corpus", "", "read the corpus in `DIR` (modules, sys/module/*/sections, ko/*.ko)")
		out := set.String("o", "", "output `FILE`")
		be := set.Bool("be", false, "write big-endian records (default little-endian)")
		prefix := set.String("prefix", "ko/", "path recorded for module NAME.ko is `P`+NAME.ko; it must contain a '/'")
		set.Usage = func() { fmt.Fprint(stderr, usage); set.PrintDefaults() }
		if err := parseFlags(set, args[1:]); err != nil {
			return err
		}
		if *corpus == "" || *out == "" || set.NArg() != 0 {
			set.Usage()
			return errors.New("write: -corpus and -o are required, and nothing else")
		}
		t, err := checkType(*typ)
		if err != nil {
			return err
		}
		var order binary.ByteOrder = binary.LittleEndian
		if *be {
			order = binary.BigEndian
		}
		return write(*corpus, *out, *prefix, t, order, stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown subcommand %q", args[0])
}
