//go:build !amd64 && !arm64

package cacheline

func line(uintptr) {}
