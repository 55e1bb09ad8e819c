package executors

import (
	"encoding/binary"
	"encoding/hex"

	"github.com/cespare/xxhash/v2"
)

// Trace context (W3C Trace Context, https://www.w3.org/TR/trace-context/):
// every attempt is given a traceparent, "00-<trace id>-<span id>-01", as
// the environment variable TRACEPARENT (process and python tasks) and the
// header traceparent (http tasks), so that the spans a task makes join the
// run's trace. The ids are derived, never stored: a run's trace id is its
// run id's 16 bytes (run ids are UUIDs), an attempt's span id is 8 bytes
// of a hash of (task id, attempt number). They are the same after a
// restart, and the daemon's OTLP export (cmd/orkwal) gives its spans the
// same ids.

// TraceparentHeader is the http executor's header and, upper-cased, the
// process and python tasks' environment variable.
const TraceparentHeader = "traceparent"

// TraceID is a run's trace id: its run id's 16 bytes when it is a UUID
// (with or without dashes), else 16 bytes of a hash of it.
func TraceID(runID string) [16]byte {
	var id [16]byte
	n := 0
	for i := 0; i < len(runID); i++ {
		c := runID[i]
		if c == '-' {
			continue
		}
		v, ok := unhex(c)
		if !ok || n == 32 {
			return hashedTraceID(runID)
		}
		id[n/2] |= v << (4 * (1 - n%2))
		n++
	}
	if n != 32 || id == [16]byte{} {
		return hashedTraceID(runID)
	}
	return id
}

func hashedTraceID(runID string) [16]byte {
	var id [16]byte
	binary.BigEndian.PutUint64(id[:8], xxhash.Sum64String(runID))
	binary.BigEndian.PutUint64(id[8:], xxhash.Sum64String(runID+"\x00trace"))
	if id == [16]byte{} {
		id[15] = 1
	}
	return id
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// RunSpanID is the span id of a run's own span, the parent of its
// attempts' spans.
func RunSpanID(runID string) [8]byte {
	return spanID(xxhash.Sum64String(runID + "\x00run"))
}

// AttemptSpanID is the span id of one attempt of a task; taskID is the
// task's id in its run (Job.TaskID, "<run id>:<task key>").
func AttemptSpanID(taskID string, attempt int) [8]byte {
	var d xxhash.Digest
	d.Reset()
	_, _ = d.WriteString(taskID)
	var n [9]byte
	binary.BigEndian.PutUint64(n[1:], uint64(attempt))
	_, _ = d.Write(n[:])
	return spanID(d.Sum64())
}

func spanID(h uint64) [8]byte {
	if h == 0 {
		h = 1 // an all-zero span id is invalid
	}
	var id [8]byte
	binary.BigEndian.PutUint64(id[:], h)
	return id
}

// Traceparent is the W3C traceparent of an attempt: version 00, the run's
// trace id, the attempt's span id, flags 01 (sampled).
func Traceparent(runID, taskID string, attempt int) string {
	trace, span := TraceID(runID), AttemptSpanID(taskID, attempt)
	var b [55]byte
	copy(b[:], "00-")
	hex.Encode(b[3:35], trace[:])
	b[35] = '-'
	hex.Encode(b[36:52], span[:])
	copy(b[52:], "-01")
	return string(b[:])
}

// traceparentOf is a job's Traceparent.
func traceparentOf(job Job) string { return Traceparent(job.RunID, job.TaskID, job.Attempt) }
