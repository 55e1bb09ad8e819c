package engine

import (
	"encoding/json"
	"slices"
	"strconv"
)

// AppendEventJSON appends ev as json.Marshal encodes it (the same bytes:
// TestAppendEventJSON), without reflection: every event a stream sends is
// encoded once, and a busy engine makes thousands a second.
func AppendEventJSON(b []byte, ev *Event) []byte {
	if y := ev.At.Year(); y < 0 || y > 9999 {
		data, _ := json.Marshal(ev) // out of RFC 3339's range: json's own answer
		return append(b, data...)
	}
	b = append(b, `{"id":`...)
	b = appendJSONString(b, ev.ID)
	b = append(b, `,"type":`...)
	b = appendJSONString(b, ev.Type)
	b = appendJSONField(b, `,"run":`, ev.Run)
	b = appendJSONField(b, `,"workflow":`, ev.Workflow)
	b = appendJSONField(b, `,"task":`, ev.Task)
	if ev.Attempt != 0 {
		b = strconv.AppendInt(append(b, `,"attempt":`...), int64(ev.Attempt), 10)
	}
	b = appendJSONField(b, `,"status":`, ev.Status)
	if ev.ExitCode != nil {
		b = strconv.AppendInt(append(b, `,"exit_code":`...), int64(*ev.ExitCode), 10)
	}
	b = appendJSONField(b, `,"error":`, ev.Error)
	if ev.Paused != nil {
		b = strconv.AppendBool(append(b, `,"paused":`...), *ev.Paused)
	}
	if ev.Instances != 0 {
		b = strconv.AppendInt(append(b, `,"instances":`...), int64(ev.Instances), 10)
	}
	if len(ev.Counts) > 0 {
		b = appendObject(append(b, `,"counts":`...), ev.Counts, appendCount)
	}
	return append(appendTime(b, `,"at":`, &ev.At), '}')
}

// appendObject appends m as json.Marshal writes a map: its keys sorted,
// each value written by val.
func appendObject[V any](b []byte, m map[string]V, val func([]byte, V) []byte) []byte {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = val(append(appendJSONString(b, k), ':'), m[k])
	}
	return append(b, '}')
}

func appendCount(b []byte, n int) []byte { return strconv.AppendInt(b, int64(n), 10) }

// appendJSONField appends key and s, unless s is empty (omitempty).
func appendJSONField(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendJSONString(append(b, key...), s)
}

// appendJSONString appends s quoted as encoding/json quotes it: as is when
// it needs no escape (printable ASCII but for " \ < > &), else by json.
func appendJSONString(b []byte, s string) []byte {
	if !plainJSON(s) {
		q, _ := json.Marshal(s) // a string always encodes
		return append(b, q...)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
