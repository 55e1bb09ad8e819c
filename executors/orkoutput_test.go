package executors

import (
	"strings"
	"testing"
)

// TestOutputLines feeds the scanner each output cut at every position:
// the ORK_OUTPUT line is found whatever the writes' boundaries.
func TestOutputLines(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, out, want, wantErr string // want "" = no output
	}{
		{name: "one line", out: "hello\nORK_OUTPUT:{\"a\":1}\nbye\n", want: `{"a":1}`},
		{name: "the last wins", out: "ORK_OUTPUT:1\nORK_OUTPUT: [2] \r\n", want: `[2]`},
		{name: "bad JSON is skipped", out: "ORK_OUTPUT:{\"a\":1}\nORK_OUTPUT:{oops\n", want: `{"a":1}`},
		{name: "no newline at the end", out: "x\nORK_OUTPUT:\"done\"", want: `"done"`},
		{name: "not at a line's start", out: "say ORK_OUTPUT:1\n ORK_OUTPUT:2\nORK_OUTPU\n", want: ""},
		{name: "empty value", out: "ORK_OUTPUT:\n", want: ""},
		{name: "prefix of a prefix", out: "ORK_\nORK_OUTPUT:3\n", want: `3`},
		{name: "too large", out: "ORK_OUTPUT:[1]\nORK_OUTPUT:\"" + strings.Repeat("x", 40) + "\"\n", wantErr: "larger than 32 bytes"},
		{name: "too large, then a good one", out: "ORK_OUTPUT:\"" + strings.Repeat("x", 40) + "\"\nORK_OUTPUT:[1]\n", want: `[1]`},
	} {
		for cut := 0; cut <= len(tc.out); cut++ {
			s := newOutputLines(32)
			s.feed([]byte(tc.out[:cut]))
			s.feed([]byte(tc.out[cut:]))
			got, err := s.output()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("%s, cut at %d: %q, %v; want error %q", tc.name, cut, got, err, tc.wantErr)
				}
				continue
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("%s, cut at %d: %q, %v; want %q", tc.name, cut, got, err, tc.want)
			}
		}
	}
}

// TestProcessOrkOutputLine: a process task's output is its last
// ORK_OUTPUT:<json> line, as in Ork, with a capped log (fed as output
// passes) and an uncapped one (read back from the log), unless it wrote
// ORKWAL_OUTPUT.
func TestProcessOrkOutputLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, script, want, wantErr string
	}{
		{name: "stdout line", script: `echo start; echo 'ORK_OUTPUT:{"sum": 6}'; echo end`, want: `{"sum": 6}`},
		{name: "last of several", script: `echo 'ORK_OUTPUT:1'; echo 'ORK_OUTPUT:2'`, want: `2`},
		{name: "file wins", script: `echo '"file"' > "$ORKWAL_OUTPUT"; echo 'ORK_OUTPUT:"line"'`, want: `"file"`},
		{name: "none", script: `echo nothing`, want: ``},
		{name: "too large", script: `printf 'ORK_OUTPUT:"%s"\n' "$(head -c 100 /dev/zero | tr '\0' x)"`, wantErr: "larger than 64 bytes"},
	} {
		for _, maxLog := range []int64{0, 1 << 20} {
			job := newTestJob(t, "sh", "-c", tc.script)
			job.MaxLogBytes = maxLog
			job.MaxOutputBytes = 64
			fin := runJob(t, job)
			if tc.wantErr != "" {
				if fin.OK || !strings.Contains(fin.Err, tc.wantErr) {
					t.Errorf("%s (log cap %d): %+v, want error %q", tc.name, maxLog, fin, tc.wantErr)
				}
				continue
			}
			if !fin.OK || string(fin.Output) != tc.want {
				t.Errorf("%s (log cap %d): OK %v output %q err %q, want %q", tc.name, maxLog, fin.OK, fin.Output, fin.Err, tc.want)
			}
		}
	}
}
