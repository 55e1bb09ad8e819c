package replay

import (
	"encoding/binary"
	"math"
)

// Every task writes task_dispatched, task_started and task_finished, so
// their encoding is on the path of every task: msgpack's reflection (a
// field lookup, and an interface boxed to test each field for emptiness)
// cost about 10 µs a record, a tenth of the engine's own CPU per process
// task. appendHot writes the same bytes directly: the struct as a map of
// its non-empty fields in declaration order (TaskRef's first), keys and
// strings as msgpack strings, int fields in the smallest encoding, int64
// and uint64 fields in 9 bytes, float64 in 9, []byte as bin, exactly as
// msgpack/v5's Encoder with SetOmitEmpty(true) does (TestHotEncodingIsMsgpack
// compares them).

// appendHot appends the encoding of r (its kind byte, then its fields) if
// r is one of the hot records; ok false otherwise.
func appendHot(b []byte, r Record) (_ []byte, ok bool) {
	switch r := r.(type) {
	case *TaskDispatched:
		b = append(b, byte(KindTaskDispatched))
		b = appendMapLen(b, refFields(r.TaskRef)+nonZero(r.Attempt != 0, r.At != 0))
		b = appendRef(b, r.TaskRef)
		b = appendIntField(b, "attempt", int64(r.Attempt))
		b = appendInt64Field(b, "at", r.At)
	case *TaskStarted:
		b = append(b, byte(KindTaskStarted))
		b = appendMapLen(b, refFields(r.TaskRef)+nonZero(r.Attempt != 0, r.PID != 0, r.StartTime != 0, r.At != 0))
		b = appendRef(b, r.TaskRef)
		b = appendIntField(b, "attempt", int64(r.Attempt))
		b = appendIntField(b, "pid", int64(r.PID))
		if r.StartTime != 0 {
			b = binary.BigEndian.AppendUint64(append(appendStr(b, "st"), 0xcf), r.StartTime)
		}
		b = appendInt64Field(b, "at", r.At)
	case *TaskFinished:
		b = append(b, byte(KindTaskFinished))
		b = appendMapLen(b, refFields(r.TaskRef)+nonZero(r.Attempt != 0, r.OK, r.ExitCode != 0, r.Error != "",
			len(r.Output) != 0, r.Jitter != 0, r.At != 0))
		b = appendRef(b, r.TaskRef)
		b = appendIntField(b, "attempt", int64(r.Attempt))
		if r.OK {
			b = append(appendStr(b, "ok"), 0xc3)
		}
		b = appendIntField(b, "exit", int64(r.ExitCode))
		if r.Error != "" {
			b = appendStr(appendStr(b, "err"), r.Error)
		}
		if len(r.Output) != 0 {
			b = append(appendLen(appendStr(b, "out"), len(r.Output), 0xc4, 0xc4, 0xc5, 0xc6), r.Output...)
		}
		if r.Jitter != 0 {
			b = binary.BigEndian.AppendUint64(append(appendStr(b, "jit"), 0xcb), math.Float64bits(r.Jitter))
		}
		b = appendInt64Field(b, "at", r.At)
	default:
		return b, false
	}
	return b, true
}

func nonZero(set ...bool) int {
	n := 0
	for _, s := range set {
		if s {
			n++
		}
	}
	return n
}

func refFields(ref TaskRef) int { return nonZero(ref.Run != "", ref.Task != 0) }

func appendRef(b []byte, ref TaskRef) []byte {
	if ref.Run != "" {
		b = appendStr(appendStr(b, "run"), ref.Run)
	}
	return appendIntField(b, "t", int64(ref.Task))
}

// appendMapLen is msgpack's map header (Encoder.EncodeMapLen).
func appendMapLen(b []byte, n int) []byte {
	switch {
	case n < 16:
		return append(b, 0x80|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xde), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, 0xdf), uint32(n))
}

// appendStr is a msgpack string (Encoder.EncodeString).
func appendStr(b []byte, s string) []byte {
	return append(appendLen(b, len(s), 0xa0, 0xd9, 0xda, 0xdb), s...)
}

// appendLen is the header of a string or bin of n bytes: fix (a string
// under 32 bytes: fix|n; fix == one8 for bin, which has no fix form),
// then 8, 16 and 32-bit lengths.
func appendLen(b []byte, n int, fix, one8, one16, one32 byte) []byte {
	switch {
	case fix != one8 && n < 32:
		return append(b, fix|byte(n))
	case n <= math.MaxUint8:
		return append(b, one8, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, one16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, one32), uint32(n))
}

// appendIntField appends key and an int field's value (Encoder.EncodeInt:
// the smallest encoding), unless it is 0.
func appendIntField(b []byte, key string, n int64) []byte {
	if n == 0 {
		return b
	}
	b = appendStr(b, key)
	switch {
	case n >= 0 && n <= math.MaxInt8:
		return append(b, byte(n))
	case n >= 0 && n <= math.MaxUint8:
		return append(b, 0xcc, byte(n))
	case n >= 0 && n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(n))
	case n >= 0 && n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(n))
	case n >= 0:
		return binary.BigEndian.AppendUint64(append(b, 0xcf), uint64(n))
	case n >= -32:
		return append(b, byte(n))
	case n >= math.MinInt8:
		return append(b, 0xd0, byte(n))
	case n >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(n))
	case n >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
}

// appendInt64Field appends key and an int64 field's value in 9 bytes
// (Encoder.EncodeInt64), unless it is 0.
func appendInt64Field(b []byte, key string, n int64) []byte {
	if n == 0 {
		return b
	}
	return binary.BigEndian.AppendUint64(append(appendStr(b, key), 0xd3), uint64(n))
}
