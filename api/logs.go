package api

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/orkwal/orkwal/engine"
)

const (
	// logPollInterval is how often a follower looks for new bytes in the log
	// file between commits: a task writing output commits nothing, so
	// engine.Changed() does not fire for it.
	// TODO(engine): a "log grew" signal from the executors would replace this.
	logPollInterval = 250 * time.Millisecond
	// streamWriteStall is how long one write of a stream may block (a client
	// that stopped reading is dropped after it). It replaces the server's
	// WriteTimeout for streams, which would otherwise cut them.
	streamWriteStall = 30 * time.Second
)

// The trailer of a log stream and its values.
const (
	FollowEndTrailer  = "X-Orkwal-Follow-End"
	FollowEndAttempt  = "attempt-ended"   // the attempt ended: the log is complete
	FollowEndStopping = "daemon-stopping" // the daemon is shutting down
	FollowEndError    = "error"           // the log could not be read
)

func (s *Server) taskLogs(w http.ResponseWriter, r *http.Request) {
	id, ok := s.runID(w, r)
	if !ok {
		return
	}
	task, ok := s.taskKey(w, r)
	if !ok {
		return
	}
	attempt, follow, err := parseLogsQuery(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if follow && r.Method != http.MethodHead { // a HEAD has no body to stream
		s.followLog(w, r, id, task, attempt)
		return
	}
	path, err := s.eng.TaskLog(id, task, attempt)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	f, err := openLog(path)
	if err != nil {
		s.fail(w, r, fmt.Errorf("read log: %w", err))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	if f != nil {
		defer f.Close()
		// Per-write deadlines: a large log may take longer than WriteTimeout.
		copyNew(http.NewResponseController(w), w, f, make([]byte, 32<<10))
	}
}

// parseLogsQuery reads the logs endpoint's parameters, each given at most
// once (the router checked: see handle).
func parseLogsQuery(r *http.Request) (attempt int, follow bool, err error) {
	q := r.URL.Query()
	if v := q.Get("attempt"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, false, fmt.Errorf("attempt: must be a positive integer, got %q", v)
		}
		attempt = n
	}
	if follow, err = queryBool(q, "follow", false); err != nil {
		return 0, false, err
	}
	return attempt, follow, nil
}

// queryBool reads the query parameter name as 1, true, 0 or false:
// absent gives def.
func queryBool(q url.Values, name string, def bool) (bool, error) {
	switch v := q.Get(name); v {
	case "":
		return def, nil
	case "1", "true":
		return true, nil
	case "0", "false":
		return false, nil
	default:
		return false, fmt.Errorf("%s: must be 1, true, 0 or false, got %q", name, v)
	}
}

// taskView is the current state of one task of a run, and whether the
// run has ended.
func (s *Server) taskView(runID, task string) (engine.TaskView, bool, error) {
	t, status, err := s.eng.Task(runID, task)
	return t, finished(status), err
}

func finished(runStatus string) bool {
	return runStatus == "success" || runStatus == "failed" || runStatus == "cancelled"
}

func inFlight(t engine.TaskView) bool { return t.Status == "dispatched" || t.Status == "running" }

func terminal(status string) bool {
	return status == "success" || status == "failed" || status == "skipped" || status == "cancelled"
}

// followLog streams an attempt's log until the attempt has ended: the
// attempt asked for, the latest one, or (when the task has not started yet)
// its first one once it starts. New bytes are sent as they are found, on
// every commit and every logPollInterval; the final bytes are read after
// the attempt is seen ended.
func (s *Server) followLog(w http.ResponseWriter, r *http.Request, runID, task string, attempt int) {
	select {
	case s.followers <- struct{}{}:
		defer func() { <-s.followers }()
	default:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, fmt.Sprintf(
			"too many log followers: %d streams are open, the daemon's limit; retry later, or read the log without follow", s.maxFollowers))
		return
	}
	s.metrics.followers.Add(1)
	defer s.metrics.followers.Add(-1)

	view, _, err := s.taskView(runID, task)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	waitFirst := attempt == 0 && view.Attempt == 0
	if waitFirst {
		if _, err := s.eng.TaskLog(runID, task, 0); errors.Is(err, engine.ErrFansOut) {
			s.fail(w, r, err)
			return
		}
		attempt = 1
	} else if _, err := s.eng.TaskLog(runID, task, attempt); err != nil {
		s.fail(w, r, err)
		return
	} else if attempt == 0 {
		attempt = view.Attempt
	}

	rc := http.NewResponseController(w)
	// The trailer tells why the stream ended: the attempt ended, or the
	// daemon is stopping (the attempt goes on, or is interrupted).
	end := FollowEndError
	defer func() { w.Header().Set(FollowEndTrailer, end) }()
	w.Header().Set("Trailer", FollowEndTrailer)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Orkwal-Attempt", strconv.Itoa(attempt))
	w.Header().Set("Cache-Control", "no-store")
	rc.SetWriteDeadline(time.Now().Add(streamWriteStall))
	w.WriteHeader(http.StatusOK)
	rc.Flush()

	var f *os.File
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	tick := time.NewTicker(logPollInterval)
	defer tick.Stop()
	buf := make([]byte, 32<<10)
	engineStopped := false
	for {
		changed := s.eng.Changed()
		view, runEnded, err := s.taskView(runID, task)
		live := false
		if err == nil && !engineStopped && !runEnded {
			switch {
			case view.Attempt == attempt:
				live = inFlight(view)
			case view.Attempt < attempt: // waiting for the first attempt
				live = !terminal(view.Status)
			}
		}
		if f == nil {
			// The attempt's file, once the attempt exists and has written.
			if path, perr := s.eng.TaskLog(runID, task, attempt); perr == nil {
				if f, err = openLog(path); err != nil {
					s.log.Warn("follow log: open", "path", path, "err", err)
					return
				}
			}
		}
		if f != nil {
			if err := copyNew(rc, w, f, buf); err != nil {
				return // the client went away, or the file cannot be read
			}
		}
		if !live {
			end = FollowEndAttempt
			if engineStopped {
				end = FollowEndStopping
			}
			return
		}
		select {
		case <-changed:
		case <-tick.C:
		case <-s.eng.Done():
			engineStopped = true
		case <-r.Context().Done():
			return
		case <-s.quit:
			if f != nil {
				copyNew(rc, w, f, buf)
			}
			end = FollowEndStopping
			return
		}
	}
}

// copyNew sends what was appended to f since the last call, then flushes.
func copyNew(rc *http.ResponseController, w io.Writer, f *os.File, buf []byte) error {
	wrote := false
	for {
		n, err := f.Read(buf)
		if n > 0 {
			rc.SetWriteDeadline(time.Now().Add(streamWriteStall))
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
			wrote = true
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
	}
	if wrote {
		return rc.Flush()
	}
	return nil
}
