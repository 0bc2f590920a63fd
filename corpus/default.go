package corpus

import "embed"

//go:embed default
var defaultFS embed.FS

// DefaultDir is the directory of the default corpus inside DefaultFS.
const DefaultDir = "default"

// DefaultFS returns the file system that holds the embedded default corpus
// in directory DefaultDir.
func DefaultFS() embed.FS { return defaultFS }

// Default loads the embedded default corpus: an arm64 kernel laid out as
// reference vectors K1-K5 (perf-maps-semantics.md §3.11) — _text
// 0xffff800080000000, _stext 0xffff800080010000, _edata 0xffff800082229200,
// _end 0xffff8000822f0000; modules nf_tables, x_tables, nf_conntrack and
// ip_tables; the BPF program bpf_prog_6deef7357e7b4530_sd_fw_egress at
// [0xffff800082545aac, 0xffff800082545c94); and kcore program headers text,
// vmalloc, modules, RAM, vmemmap in file order, with offset =
// vaddr - 0xffff000000000000 + 0x2000.
func Default() (*Corpus, error) { return LoadFS(defaultFS, DefaultDir) }
