package linediff

import "testing"

func TestFirst(t *testing.T) {
	for _, tc := range []struct{ got, want, diff string }{
		{"a\nb\n", "a\nb\n", ""},
		{"a\nb\n", "a\nc\n", "line 2:\n got \"b\"\nwant \"c\""},
		{"a\n", "a\nb\n", "line 2:\n got \"\"\nwant \"b\""},
		{"a", "a\nb", "1 lines, want 2"},
	} {
		if d := First(tc.got, tc.want); d != tc.diff {
			t.Errorf("First(%q, %q) = %q, want %q", tc.got, tc.want, d, tc.diff)
		}
	}
}
