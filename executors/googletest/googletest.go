// Package googletest is a local stand-in, on loopback, for the Google
// Cloud endpoints orkwal calls, following their public REST reference:
// OAuth2's token endpoint (a service account's RS256 JWT bearer grant,
// its signature checked) and the Cloud Run Admin API v2 calls of the
// cloudrun executor (jobs.run, executions.get, executions.cancel). Every
// API call must carry the token the endpoint issued. Tests only: it is as
// small as a test needs, not Google.
package googletest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Token is the access token the token endpoint issues.
const Token = "ya29.orkwal-test"

// ClientEmail is the service account of the key file KeyFile writes.
const ClientEmail = "orkwal@p.iam.gserviceaccount.com"

// Server is a running stand-in.
type Server struct {
	*httptest.Server
	key    *rsa.PrivateKey
	mux    *http.ServeMux
	tokens atomic.Int32

	// Polls receives the name of each execution polled (executions.get),
	// Cancels of each cancelled, before the answer is sent; neither
	// blocks the server (buffered, dropped when full).
	Polls   chan string
	Cancels chan string
	// Hold, when set before the first call, holds each jobs.run until it
	// is closed; each held request is told on Held (buffered: a full
	// Held is not waited for).
	Hold, Held chan struct{}

	mu         sync.Mutex
	jobs       map[string]bool       // projects/P/locations/L/jobs/J that exist
	executions map[string]*Execution // by name
	runs       []RunCall
}

// RunCall is a jobs.run request the server took.
type RunCall struct {
	Job       string         // projects/P/locations/L/jobs/J
	Body      map[string]any // the request body as JSON
	Execution string         // the execution it started
}

// Execution is the state of an execution, as executions.get answers it.
type Execution struct {
	Name           string `json:"name"`
	Job            string `json:"job"`
	TaskCount      int    `json:"taskCount"`
	CreateTime     string `json:"createTime"`
	CompletionTime string `json:"completionTime,omitempty"`
	RunningCount   int    `json:"runningCount,omitempty"`
	SucceededCount int    `json:"succeededCount,omitempty"`
	FailedCount    int    `json:"failedCount,omitempty"`
	CancelledCount int    `json:"cancelledCount,omitempty"`
	Conditions     []Cond `json:"conditions"`
	LogURI         string `json:"logUri"`
}

// Cond is one of an execution's conditions.
type Cond struct {
	Type    string `json:"type"`
	State   string `json:"state"`
	Message string `json:"message,omitempty"`
}

// New starts a stand-in whose jobs are the full names given.
func New(t *testing.T, jobs ...string) *Server {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{key: key, mux: http.NewServeMux(), Polls: make(chan string, 1000), Cancels: make(chan string, 100),
		jobs: map[string]bool{}, executions: map[string]*Execution{}}
	for _, j := range jobs {
		s.jobs[j] = true
	}
	s.mux.HandleFunc("POST /token", s.token)
	s.mux.HandleFunc("/v2/", s.Authed(s.cloudRun))
	s.Server = httptest.NewServer(s.mux)
	t.Cleanup(s.Close)
	return s
}

// KeyFile writes a service account key file for the server's token
// endpoint and points GOOGLE_APPLICATION_CREDENTIALS at it.
func (s *Server) KeyFile(t *testing.T) {
	der, _ := x509.MarshalPKCS8PrivateKey(s.key)
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	b, _ := json.Marshal(map[string]string{"type": "service_account", "client_email": ClientEmail,
		"private_key": string(pemKey), "private_key_id": "k1", "token_uri": s.URL + "/token"})
	path := filepath.Join(t.TempDir(), "key.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", path)
}

// Tokens is how many tokens the endpoint issued.
func (s *Server) Tokens() int { return int(s.tokens.Load()) }

// Handle registers another authorized API route (see Authed).
func (s *Server) Handle(pattern string, h http.HandlerFunc) { s.mux.HandleFunc(pattern, s.Authed(h)) }

// token is OAuth2's token endpoint for the JWT bearer grant.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(r.FormValue("assertion"), ".")
	if r.FormValue("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" || len(parts) != 3 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
		return
	}
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	claims, _ := base64.RawURLEncoding.DecodeString(parts[1])
	if rsa.VerifyPKCS1v15(&s.key.PublicKey, crypto.SHA256, sum[:], sig) != nil ||
		!strings.Contains(string(claims), `"iss":"`+ClientEmail+`"`) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
		return
	}
	s.tokens.Add(1)
	writeJSON(w, http.StatusOK, map[string]any{"access_token": Token, "expires_in": 3600, "token_type": "Bearer"})
}

// Authed answers 401, as Google does, a call without the issued token.
func (s *Server) Authed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+Token {
			googleError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
			return
		}
		h(w, r)
	}
}

// cloudRun routes the Cloud Run Admin API v2 calls: POST
// /v2/{job}:run, GET /v2/{execution}, POST /v2/{execution}:cancel.
func (s *Server) cloudRun(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/v2/")
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(name, ":run"):
		s.run(w, r, strings.TrimSuffix(name, ":run"))
	case r.Method == http.MethodPost && strings.HasSuffix(name, ":cancel"):
		s.cancel(w, strings.TrimSuffix(name, ":cancel"))
	case r.Method == http.MethodGet:
		s.get(w, name)
	default:
		googleError(w, http.StatusNotFound, "NOT_FOUND", "no such method")
	}
}

func (s *Server) run(w http.ResponseWriter, r *http.Request, job string) {
	if s.Hold != nil {
		select {
		case s.Held <- struct{}{}:
		default:
		}
		<-s.Hold
	}
	var body map[string]any
	b, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(b, &body); err != nil {
		googleError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Invalid JSON payload received.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.jobs[job] {
		googleError(w, http.StatusNotFound, "NOT_FOUND", fmt.Sprintf("Resource '%s' of kind 'JOB' does not exist.", job))
		return
	}
	short := job[strings.LastIndex(job, "/")+1:]
	ex := &Execution{Name: fmt.Sprintf("%s/executions/%s-%d", job, short, len(s.runs)+1), Job: short, TaskCount: 1,
		CreateTime: "2026-11-25T01:00:00Z", RunningCount: 1, LogURI: "https://console.cloud.google.com/logs/viewer?exec=" + short,
		Conditions: []Cond{{Type: "Completed", State: "CONDITION_PENDING"}, {Type: "Started", State: "CONDITION_SUCCEEDED"}}}
	if o, ok := body["overrides"].(map[string]any); ok {
		if n, ok := o["taskCount"].(float64); ok {
			ex.TaskCount = int(n)
		}
	}
	s.executions[ex.Name] = ex
	s.runs = append(s.runs, RunCall{Job: job, Body: body, Execution: ex.Name})
	writeOperation(w, job, ex)
}

func (s *Server) get(w http.ResponseWriter, name string) {
	s.mu.Lock()
	ex := s.executions[name]
	var copy Execution
	if ex != nil {
		copy = *ex
	}
	s.mu.Unlock()
	if ex == nil {
		googleError(w, http.StatusNotFound, "NOT_FOUND", fmt.Sprintf("Resource '%s' of kind 'EXECUTION' does not exist.", name))
		return
	}
	signal(s.Polls, name)
	writeJSON(w, http.StatusOK, copy)
}

// cancel ends a running execution with its tasks cancelled; an ended one
// is left as it is (the API answers FAILED_PRECONDITION).
func (s *Server) cancel(w http.ResponseWriter, name string) {
	s.mu.Lock()
	ex := s.executions[name]
	switch {
	case ex == nil:
		s.mu.Unlock()
		googleError(w, http.StatusNotFound, "NOT_FOUND", fmt.Sprintf("Resource '%s' of kind 'EXECUTION' does not exist.", name))
		return
	case ex.CompletionTime != "":
		s.mu.Unlock()
		googleError(w, http.StatusBadRequest, "FAILED_PRECONDITION", "Execution has already completed.")
		return
	}
	s.end(ex, Cond{Type: "Completed", State: "CONDITION_FAILED", Message: "The execution was cancelled."})
	ex.CancelledCount, ex.RunningCount = ex.TaskCount, 0
	copy := *ex
	s.mu.Unlock()
	signal(s.Cancels, name) // before the answer: the caller goes on once it has it
	writeOperation(w, copy.Name[:strings.Index(copy.Name, "/executions/")], &copy)
}

// Succeed ends an execution with every task succeeded.
func (s *Server) Succeed(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ex := s.executions[name]
	s.end(ex, Cond{Type: "Completed", State: "CONDITION_SUCCEEDED"})
	ex.SucceededCount, ex.RunningCount = ex.TaskCount, 0
}

// Fail ends an execution with a failed task and msg as its Completed
// condition's message.
func (s *Server) Fail(name, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ex := s.executions[name]
	s.end(ex, Cond{Type: "Completed", State: "CONDITION_FAILED", Message: msg})
	ex.FailedCount, ex.RunningCount = 1, 0
}

func (s *Server) end(ex *Execution, completed Cond) {
	ex.CompletionTime = "2026-11-25T01:05:00Z"
	ex.Conditions = []Cond{completed, {Type: "Started", State: "CONDITION_SUCCEEDED"}}
}

// wait bounds how long a test waits for a call the fake should get.
const wait = 10 * time.Second

// Polled waits for a poll of an execution not among skip, and returns its
// name; none within 10 s fails t.
func (s *Server) Polled(t testing.TB, skip ...string) string {
	t.Helper()
	guard := time.After(wait)
	for {
		select {
		case name := <-s.Polls:
			if !slices.Contains(skip, name) {
				return name
			}
		case <-guard:
			t.Fatalf("no execution polled within %s", wait)
			return ""
		}
	}
}

// Cancelled waits for an execution's cancel and returns its name; none
// within 10 s fails t.
func (s *Server) Cancelled(t testing.TB) string {
	t.Helper()
	select {
	case name := <-s.Cancels:
		return name
	case <-time.After(wait):
		t.Fatalf("no execution cancelled within %s", wait)
		return ""
	}
}

// Runs returns the jobs.run calls taken so far.
func (s *Server) Runs() []RunCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]RunCall(nil), s.runs...)
}

// writeOperation answers a long-running Operation whose metadata is the
// execution (jobs.run and executions.cancel).
func writeOperation(w http.ResponseWriter, job string, ex *Execution) {
	meta, _ := json.Marshal(ex)
	var m map[string]any
	json.Unmarshal(meta, &m)
	m["@type"] = "type.googleapis.com/google.cloud.run.v2.Execution"
	loc := job[:strings.Index(job, "/jobs/")]
	writeJSON(w, http.StatusOK, map[string]any{"name": loc + "/operations/op-" + ex.Name[strings.LastIndex(ex.Name, "/")+1:],
		"metadata": m, "done": false})
}

// googleError answers Google's error body: {"error": {code, message, status}}.
func googleError(w http.ResponseWriter, code int, status, msg string) {
	writeJSON(w, code, map[string]any{"error": map[string]any{"code": code, "message": msg, "status": status}})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func signal(c chan string, name string) {
	select {
	case c <- name:
	default:
	}
}
