package api

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"

	"github.com/orkwal/orkwal/engine"
)

// statusOf maps an engine error kind to its HTTP status: the one place.
func statusOf(err error) int {
	switch {
	case errors.Is(err, engine.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, engine.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, engine.ErrConflict):
		return http.StatusConflict
	case errors.Is(err, engine.ErrUnavailable):
		return http.StatusServiceUnavailable
	case errors.Is(err, engine.ErrOverloaded):
		return http.StatusTooManyRequests
	case errors.Is(err, errTooLarge):
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusInternalServerError
}

var errTooLarge = errors.New("request body too large")

func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := statusOf(err)
	var full *engine.OverloadError
	if errors.As(err, &full) {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(full.RetryAfter.Seconds()))))
	}
	if status >= 500 {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeError(w, status, err.Error())
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b := getJSONBuf()
	defer putJSONBuf(b)
	b.enc.Encode(v)
	b.write(w, status)
}

// readBody reads at most max bytes of the request body.
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, fmt.Errorf("%w: the limit is %d bytes", errTooLarge, max)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: read request body: %v", engine.ErrInvalid, err)
	}
	return body, nil
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
