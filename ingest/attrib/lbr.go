package attrib

import (
	"github.com/kmapindex/kmapindex/ingest/machine"
	"github.com/kmapindex/kmapindex/ingest/perfdata"
)

// sampleLBR marks a SAMPLE event (event.kf) whose callchain was made
// from its LBR call stack (lbrCallchain).
const sampleLBR = 0x10

// lbrCallchain returns the callchain perf 6.1 resolves for a sample of
// an event that records the user call stack in its branch stack (perf
// record --call-graph lbr: branch_sample_type has CALL_STACK),
// resolve_lbr_callchain_sample without --stitch-lbr, in callee order: the
// kernel's part of the sample's callchain up to and including its
// PERF_CONTEXT_USER marker (lbr_callchain_add_kernel_ip), then the first
// branch's target and every branch's source, resolved in user mode
// (lbr_callchain_add_lbr_ip). The callchain's user part is not used.
//
// ok is false where perf resolves the callchain as it stands: no
// PERF_CONTEXT_USER among its first maxStack entries ("LBR only affects
// the user callchain"), or a context marker before it that perf does not
// know (add_callchain_ip resets the cursor, and perf falls back to the
// callchain, which that marker empties too).
//
// A branch stack of no entries still has a first target in perf 6.1: it
// reads entries[0].to where the entries would start, past them, in the
// bytes that follow (of a file-mode recording, the file's: the next
// record's first word, most often). firstTo gives those bytes, ok false
// where perf's are not the file's (a pipe's copies, decompressed
// buffers): then the chain has no target, as perf's does not reliably.
func lbrCallchain(slab *addrSlab, s *perfdata.Sample, firstTo func(*perfdata.Sample) (uint64, bool)) (chain []uint64, ok bool) {
	if s.Attr.BranchSampleType&perfdata.BranchCallStack == 0 {
		return nil, false
	}
	user := -1
	for i, ip := range s.Callchain[:min(maxStack, len(s.Callchain))] {
		if ip == contextUser {
			user = i
			break
		}
		if ip >= contextMax {
			if _, known := contextMode(ip); !known {
				return nil, false
			}
		}
	}
	if user < 0 {
		return nil, false
	}
	n := user + 1
	to, hasTo := uint64(0), len(s.Branches) > 0
	if hasTo {
		to = s.Branches[0].To
	} else {
		to, hasTo = firstTo(s)
	}
	if hasTo {
		n += 1 + len(s.Branches)
	}
	chain = slab.take(n)
	copy(chain, s.Callchain[:user+1])
	if hasTo {
		chain[user+1] = to
		for i, b := range s.Branches {
			chain[user+2+i] = b.From
		}
	}
	return chain, true
}

// fileFirstTo is lbrCallchain's firstTo for the records of r: the word
// 8 bytes into where an empty branch stack's entries would start (the
// to of perf_branch_entry), read from the file, in its byte order.
func fileFirstTo(r *perfdata.Reader) func(*perfdata.Sample) (uint64, bool) {
	return func(s *perfdata.Sample) (uint64, bool) {
		if s.Compressed {
			return 0, false
		}
		b, ok := r.FileBytes(s.BranchesAt+8, 8)
		if !ok {
			return 0, false
		}
		return r.ByteOrder().Uint64(b), true
	}
}

// walkLBRCallerOrder calls frame for each frame of an LBR callchain
// (lbrCallchain) in caller order, as perf 6.1 resolves it for
// --children: the branches from the last one's source to the first one's
// target, in user mode, then the kernel's part from its end to its start
// (lbr_callchain_add_kernel_ip with ORDER_CALLER) with the cpumode the
// markers set as they are met in that order. So perf resolves the
// kernel's addresses in user mode (its PERF_CONTEXT_USER marker comes
// first), and they find no map; kbench does the same. The first
// branch's target of an empty branch stack (lbrCallchain), alone behind
// the PERF_CONTEXT_USER marker, is left out: perf reads it in callee
// order only.
func walkLBRCallerOrder(chain []uint64, frame func(ip uint64, cpumode uint8)) {
	cpumode := uint8(machine.CPUModeUser)
	end := len(chain)
	if end >= 2 && chain[end-2] == contextUser {
		end--
	}
	for j := end - 1; j >= 0; j-- {
		ip := chain[j]
		if ip >= contextMax {
			cpumode, _ = contextMode(ip) // lbrCallchain let only known markers in
			continue
		}
		frame(ip, cpumode)
	}
}
