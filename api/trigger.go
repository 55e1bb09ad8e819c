package api

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/orkwal/orkwal/engine"
)

// TriggerFunc starts a run of the workflow name and returns its id once the
// run is durable. idempotencyKey is the request's Idempotency-Key ("" when
// none): when the key was seen before, it answers the id of the run the key
// created and created false, or an error wrapping engine.ErrConflict when
// the key was used for another workflow.
type TriggerFunc func(name string, params map[string]string, trigger, idempotencyKey string) (id string, created bool, err error)

// engineTrigger is the default TriggerFunc: engine.TriggerIdempotent, which
// records the key with the run it creates.
func engineTrigger(eng *engine.Engine) TriggerFunc { return eng.TriggerIdempotent }

// MaxIdempotencyKey is the longest Idempotency-Key accepted.
const MaxIdempotencyKey = 128

// idempotencyKey reads the optional Idempotency-Key header: 1 to 128
// printable ASCII characters, given once.
func idempotencyKey(r *http.Request) (string, error) {
	vs := r.Header.Values("Idempotency-Key")
	switch len(vs) {
	case 0:
		return "", nil
	case 1:
	default:
		return "", fmt.Errorf("%w: Idempotency-Key: given %d times, give it once", engine.ErrInvalid, len(vs))
	}
	k := vs[0]
	if len(k) == 0 || len(k) > MaxIdempotencyKey {
		return "", fmt.Errorf("%w: Idempotency-Key: must be 1 to %d printable ASCII characters, got %d bytes",
			engine.ErrInvalid, MaxIdempotencyKey, len(k))
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 0x20 || c > 0x7e {
			return "", fmt.Errorf("%w: Idempotency-Key: byte %d is 0x%02x: must be printable ASCII", engine.ErrInvalid, i, c)
		}
	}
	return k, nil
}

// triggerRequest is the optional body of POST /workflows/{name}/runs.
type triggerRequest struct {
	Params map[string]any `json:"params"`
}

func (s *Server) triggerRun(w http.ResponseWriter, r *http.Request) {
	name, ok := s.name(w, r, "name", "workflow")
	if !ok {
		return
	}
	key, err := idempotencyKey(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	params, err := decodeTrigger(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	trigger := r.Header.Get("X-Orkwal-Trigger")
	if trigger != "cli" {
		trigger = "api"
	}
	id, created, err := s.trigger(name, params, trigger, key)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/runs/"+id)
	status := http.StatusCreated
	if !created {
		status = http.StatusOK
		w.Header().Set("Idempotent-Replayed", "true")
	}
	writeJSON(w, status, map[string]string{"id": id})
}

func decodeTrigger(w http.ResponseWriter, r *http.Request) (map[string]string, error) {
	body, err := readBody(w, r, MaxTriggerBytes)
	if err != nil || len(body) == 0 {
		return nil, err
	}
	return decodeTriggerBody(body)
}

// decodeTriggerBody decodes {"params": {...}}: one JSON object, no other
// field, values strings, numbers or booleans.
func decodeTriggerBody(body []byte) (map[string]string, error) {
	var req triggerRequest
	dec := json.NewDecoder(bytesReader(body))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(&req); err != nil {
		return nil, fmt.Errorf("%w: request body: %v", engine.ErrInvalid, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: request body: more than one JSON value", engine.ErrInvalid)
	}
	if err := checkUTF8(body); err != nil {
		return nil, err
	}
	return paramStrings(req.Params)
}

// checkUTF8 refuses a trigger body with text that is not valid UTF-8: raw
// bytes that are not, or an escaped lone surrogate ("\ud800"), which
// encoding/json would silently store as U+FFFD. It names the param.
func checkUTF8(body []byte) error {
	if !replaced(body) {
		return nil
	}
	var req struct {
		Params map[string]json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &req) == nil {
		for k, v := range req.Params {
			if replaced(v) {
				return fmt.Errorf("%w: params.%s: the value is not valid UTF-8", engine.ErrInvalid, k)
			}
		}
		for k := range req.Params {
			if strings.ContainsRune(k, utf8.RuneError) {
				return fmt.Errorf("%w: params: the name %q is not valid UTF-8", engine.ErrInvalid, k)
			}
		}
	}
	return fmt.Errorf("%w: request body: not valid UTF-8", engine.ErrInvalid)
}

// replaced reports whether decoding the JSON text b would replace anything
// with U+FFFD: bytes that are not UTF-8, or a \u escape of a surrogate
// that is not half of a pair.
func replaced(b []byte) bool {
	if !utf8.Valid(b) {
		return true
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			continue
		}
		if b[i+1] != 'u' {
			i++ // \", \\, \n...: skip the escaped byte
			continue
		}
		r := hex4(b[i+2:])
		switch {
		case r >= 0xDC00 && r <= 0xDFFF: // a low half alone
			return true
		case r >= 0xD800 && r <= 0xDBFF:
			if lo := hex4(b[min(i+8, len(b)):]); i+7 >= len(b) || b[i+6] != '\\' || b[i+7] != 'u' || lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 11
		default:
			i += 5
		}
	}
	return false
}

// hex4 decodes the 4 hex digits b starts with, or returns -1.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return -1
		}
	}
	return r
}

// paramStrings accepts strings, numbers and booleans as parameter values.
// Numbers keep their JSON spelling (1e3 stays "1e3", 10000000 is not
// rewritten as 1e+07).
func paramStrings(in map[string]any) (map[string]string, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		switch v := v.(type) {
		case string:
			out[k] = v
		case json.Number:
			out[k] = v.String()
		case bool:
			out[k] = fmt.Sprint(v)
		default:
			return nil, fmt.Errorf("%w: params.%s: must be a string, number or boolean", engine.ErrInvalid, k)
		}
	}
	return out, nil
}
