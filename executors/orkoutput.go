package executors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// orkOutputPrefix starts the line of stdout by which an Ork task gives its
// output: ORK_OUTPUT:<json>. The last such line whose JSON is valid is the
// task's output (Ork's rule), unless the task wrote ORKWAL_OUTPUT.
const orkOutputPrefix = "ORK_OUTPUT:"

// outputLines finds the last ORK_OUTPUT:<json> line in a task's output as
// it streams by (fed the same bytes as its log, in order; stdout and
// stderr share the pipe, so a line on stderr counts too).
//
// Cost: nothing for a task that writes nothing; otherwise a comparison at
// the start of each line and a search for its end (bytes.IndexByte) over
// the rest. Memory: at most the line being read and the last good one,
// each cut at max bytes: a longer line is not kept, only remembered as
// too large.
type outputLines struct {
	max      int64
	state    uint8  // lineStart (matching the prefix), inOutput, skipping
	matched  int    // bytes of the prefix matched at the start of this line
	cur      []byte // the ORK_OUTPUT line being read, after the prefix
	curOver  bool   // cur passed max and was dropped
	last     []byte // the last complete ORK_OUTPUT line with valid JSON
	lastOver bool   // the last complete ORK_OUTPUT line was larger than max
}

const (
	lineStart uint8 = iota // at the start of a line, matching the prefix
	inOutput               // inside an ORK_OUTPUT line
	skipping               // inside any other line
)

// newOutputLines returns a scanner keeping lines of at most max bytes
// (max <= 0: 1 MiB).
func newOutputLines(max int64) *outputLines {
	if max <= 0 {
		max = 1 << 20
	}
	return &outputLines{max: max}
}

// feed reads the next bytes of the output.
func (s *outputLines) feed(p []byte) {
	for len(p) > 0 {
		switch s.state {
		case lineStart:
			n := min(len(orkOutputPrefix)-s.matched, len(p))
			if string(p[:n]) != orkOutputPrefix[s.matched:s.matched+n] {
				s.state, s.matched = skipping, 0
				continue // p is not consumed: it may hold the line's end
			}
			s.matched += n
			p = p[n:]
			if s.matched == len(orkOutputPrefix) {
				s.state, s.cur, s.curOver = inOutput, s.cur[:0], false
			}
		case inOutput:
			end := bytes.IndexByte(p, '\n')
			part := p
			if end >= 0 {
				part = p[:end]
			}
			s.take(part)
			if end < 0 {
				return
			}
			s.complete()
			p = p[end+1:]
		case skipping:
			end := bytes.IndexByte(p, '\n')
			if end < 0 {
				return
			}
			s.state, s.matched = lineStart, 0
			p = p[end+1:]
		}
	}
}

// take appends part of an ORK_OUTPUT line, unless it grew past max.
func (s *outputLines) take(part []byte) {
	if s.curOver {
		return
	}
	if int64(len(s.cur)+len(part)) > s.max+1 { // +1: a newline's \r
		s.curOver, s.cur = true, nil
		return
	}
	s.cur = append(s.cur, part...)
}

// complete ends the ORK_OUTPUT line being read: it becomes the last one
// if its JSON is valid (Ork skips a line whose JSON does not parse).
func (s *outputLines) complete() {
	s.state, s.matched = lineStart, 0
	if s.curOver {
		s.last, s.lastOver = nil, true
		return
	}
	value := bytes.TrimSpace(s.cur)
	if len(value) == 0 || !json.Valid(value) {
		return
	}
	s.last, s.lastOver = append(s.last[:0], value...), false
}

// output ends the scan (a last line without a newline counts) and returns
// the value of the last ORK_OUTPUT line: nil when there was none, an error
// when it was larger than max.
func (s *outputLines) output() ([]byte, error) {
	if s.state == inOutput {
		s.complete()
	}
	if s.lastOver {
		return nil, fmt.Errorf("output (the last %s line) larger than %d bytes", orkOutputPrefix, s.max)
	}
	return s.last, nil
}

// feedFile feeds the scanner path's bytes from offset on: the output of an
// uncapped log, which the task wrote straight to the file.
func (s *outputLines) feedFile(path string, offset int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return err
	}
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	for {
		n, err := f.Read(*bp)
		s.feed((*bp)[:n])
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
