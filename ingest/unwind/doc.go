// Package unwind unwinds user stacks from perf's --call-graph dwarf
// samples (the user registers and a copy of the stack) with the call-frame
// information of the binaries, the way perf 6.1 built with libunwind 1.6
// does (tools/perf/util/unwind-libunwind-local.c over libunwind's x86_64
// unw_step): the same CFI lookups (.eh_frame through .eh_frame_hdr's
// binary-search table; .debug_frame only with Unwinder.DebugFrame, as
// Debian's perf is built without it), the same rules and the same stop
// conditions, so that the frames equal perf script's. Inlines names the
// inlined functions at an address as binutils' addr2line does, which
// perf runs to expand each unwound frame.
//
// The CFI reader is written here rather than taken from Delve's
// pkg/dwarf/frame, which parses every FDE up front, ignores
// .eh_frame_hdr, evaluates rows into maps and cannot reproduce
// libunwind's quirks (its fallback to frame pointers and its PLT
// detection).
//
// What perf does, and so what Unwind does for a sample:
//
//   - The first frame is the sampled IP. Each further frame is one
//     unw_step: the FDE for the frame's pc (the return address minus one
//     unless the frame below was a signal frame) is found in the binary
//     mapped there, its CIE and FDE programs are run up to that pc, and the
//     row gives the CFA and where the registers were saved. The frame's
//     address is the return address minus one, again unless the frame
//     stepped from was a signal frame (an 'S' CIE).
//   - No map at the pc, or a binary that cannot be read or has no
//     .eh_frame_hdr, or bad CFI, ends the unwind (libunwind's error
//     returns). A pc that the binary's tables do not
//     cover is libunwind's UNW_ENOINFO: it then tries a PLT entry (CFA =
//     SP + 8), else guesses a frame-pointer frame.
//   - Memory reads come from the copied stack when the whole word lies
//     below its last 8 bytes (perf's access_mem), else from the file
//     mapped at the address; anything else fails the step.
//   - An undefined return-address rule, a null RBP location, or a zero
//     address ends the unwind; so does a step that changes neither the
//     pc nor the CFA, and the depth limit (127, PERF_MAX_STACK_DEPTH, by
//     default).
//
// Files are parsed once (Cache) and are safe for concurrent use; an
// Unwinder is not, but is cheap: one per goroutine.
package unwind
