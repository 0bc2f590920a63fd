package main

import (
	"strings"
	"testing"
	"time"
)

func TestProgressBar(t *testing.T) {
	tests := []struct {
		name string
		size int64
		set  int64
		want string // the last line drawn
	}{
		{"start", 56e6, 0, "f   0% [                              ] 0.0 MB / 56 MB"},
		{"half", 56e6, 28e6, "f  50% [===============               ] 28 MB / 56 MB"},
		{"past the end", 100, 200, "f 100% [==============================] 0.0 MB / 0.0 MB"},
		{"unknown size", 0, 12345678, "f 12 MB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w strings.Builder
			b := newProgressBar(&w, "f", tt.size)
			b.RenderBlank()
			b.last = time.Time{} // due
			b.Set64(tt.set)
			lines := strings.Split(w.String(), "\r")
			if got := strings.TrimRight(lines[len(lines)-1], " "); got != tt.want {
				t.Errorf("drew %q, want %q", got, tt.want)
			}
			b.Set64(tt.set / 2) // within progressEvery: not drawn
			if n := strings.Count(w.String(), "\r"); n != 2 {
				t.Errorf("%d lines drawn, want 2", n)
			}
			b.Finish()
			last := w.String()[strings.LastIndex(w.String()[:len(w.String())-1], "\r")+1:]
			if strings.TrimSpace(last) != "" || len(last) < len(tt.want) {
				t.Errorf("Finish wrote %q, want the line blanked", last)
			}
		})
	}
}
