// Command bpfload loads a two-instruction BPF socket filter named
// "kmapidx_test", keeps it for 50 ms and unloads it, so that a system-wide
// perf record sees PERF_RECORD_KSYMBOL (register and unregister) and
// PERF_RECORD_BPF_EVENT records. It must run as root.
package main

import (
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"
)

func main() {
	insns := []uint64{
		0x00000000000000b7, // r0 = 0
		0x0000000000000095, // exit
	}
	license := []byte("GPL\x00")
	var attr [128]byte
	*(*uint32)(unsafe.Pointer(&attr[0])) = 1 // BPF_PROG_TYPE_SOCKET_FILTER
	*(*uint32)(unsafe.Pointer(&attr[4])) = uint32(len(insns))
	*(*uint64)(unsafe.Pointer(&attr[8])) = uint64(uintptr(unsafe.Pointer(&insns[0])))
	*(*uint64)(unsafe.Pointer(&attr[16])) = uint64(uintptr(unsafe.Pointer(&license[0])))
	copy(attr[48:64], "kmapidx_test")
	fd, _, errno := syscall.Syscall(321, 5, uintptr(unsafe.Pointer(&attr[0])), uintptr(len(attr))) // bpf(BPF_PROG_LOAD)
	if errno != 0 {
		fmt.Fprintln(os.Stderr, "bpf prog load:", errno)
		os.Exit(1)
	}
	time.Sleep(50 * time.Millisecond)
	syscall.Close(int(fd))
	time.Sleep(50 * time.Millisecond)
}
