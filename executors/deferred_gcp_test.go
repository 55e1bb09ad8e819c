package executors

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeGoogle follows the public REST reference of the calls the trackers
// make: OAuth2's token endpoint (a service account's RS256 JWT bearer
// grant, its signature checked), BigQuery v2 jobs.get (RUNNING, then
// DONE), Dataproc v1 jobs.get (DONE) and Cloud Run Admin v2
// executions.get (completed with a failed task).
func fakeGoogle(t *testing.T, key *rsa.PrivateKey) (*httptest.Server, *atomic.Int32) {
	var tokens, bqPolls atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(r.FormValue("assertion"), ".")
		if r.FormValue("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" || len(parts) != 3 {
			http.Error(w, `{"error": "invalid_grant"}`, http.StatusBadRequest)
			return
		}
		sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
		sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
		claims, _ := base64.RawURLEncoding.DecodeString(parts[1])
		if rsa.VerifyPKCS1v15(&key.PublicKey, crypto.SHA256, sum[:], sig) != nil ||
			!strings.Contains(string(claims), `"iss":"orkwal@p.iam.gserviceaccount.com"`) {
			http.Error(w, `{"error": "invalid_grant"}`, http.StatusBadRequest)
			return
		}
		tokens.Add(1)
		w.Write([]byte(`{"access_token": "ya29.tok", "expires_in": 3600, "token_type": "Bearer"}`))
	})
	authed := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer ya29.tok" {
				http.Error(w, `{"error": {"code": 401}}`, http.StatusUnauthorized)
				return
			}
			h(w, r)
		}
	}
	mux.HandleFunc("GET /bigquery/v2/projects/p/jobs/bq1", authed(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("location") != "US" {
			http.Error(w, `{}`, http.StatusNotFound)
			return
		}
		state := "RUNNING"
		if bqPolls.Add(1) > 1 {
			state = "DONE"
		}
		w.Write([]byte(`{"kind": "bigquery#job", "status": {"state": "` + state + `"}}`))
	}))
	mux.HandleFunc("GET /v1/projects/p/regions/europe-west1/jobs/dp1", authed(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"reference": {"jobId": "dp1"}, "status": {"state": "DONE"}}`))
	}))
	mux.HandleFunc("GET /v2/projects/p/locations/europe-west1/jobs/nightly/executions/nightly-x1", authed(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"completionTime": "2026-11-24T12:00:00Z", "taskCount": 2, "succeededCount": 1, "failedCount": 1,
			"conditions": [{"type": "Completed", "state": "CONDITION_FAILED", "message": "Task nightly-x1-1 failed"}]}`))
	}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, &tokens
}

// serviceAccountKey writes a service account key file for srv's token
// endpoint and points GOOGLE_APPLICATION_CREDENTIALS at it.
func serviceAccountKey(t *testing.T, srv *httptest.Server, key *rsa.PrivateKey) {
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	b, _ := json.Marshal(map[string]string{"type": "service_account", "client_email": "orkwal@p.iam.gserviceaccount.com",
		"private_key": string(pemKey), "private_key_id": "k1", "token_uri": srv.URL + "/token"})
	path := filepath.Join(t.TempDir(), "key.json")
	os.WriteFile(path, b, 0o600)
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", path)
}

func trackOnce(t *testing.T, base, output string) Event {
	d := NewDeferred(DeferredConfig{PollInterval: time.Millisecond, Google: GoogleConfig{BaseURL: base}})
	events := make(chan Event, 100)
	_, err := d.Start(Job{TaskID: "r:t", Attempt: 1, Deferred: &DeferredJob{Output: []byte(output)}}, func(ev Event) { events <- ev })
	if err != nil {
		t.Fatal(err)
	}
	for ev := range events {
		if ev.Kind == Finished {
			return ev
		}
	}
	return Event{}
}

// TestDeferredGoogleJobs: BigQuery and Dataproc jobs are polled with a
// service account's token (fetched once) until DONE; a Cloud Run
// execution that completed with a failed task fails the attempt.
func TestDeferredGoogleJobs(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	srv, tokens := fakeGoogle(t, key)
	serviceAccountKey(t, srv, key)
	out := `{"deferred": [{"service_type": "bigquery", "project": "p", "job_id": "bq1", "location": "US"},
		{"service_type": "dataproc", "project": "p", "region": "europe-west1", "cluster_name": "c", "job_id": "dp1"}]}`
	ev := trackOnce(t, srv.URL, out)
	if !ev.OK || string(ev.Output) != out {
		t.Errorf("bigquery and dataproc: ok %v, %q, output %s", ev.OK, ev.Err, ev.Output)
	}
	if n := tokens.Load(); n != 1 {
		t.Errorf("%d tokens fetched, want 1", n)
	}
	ev = trackOnce(t, srv.URL, `{"deferred": [{"service_type": "cloudrun", "project": "p", "region": "europe-west1",
		"job_name": "nightly", "execution_id": "nightly-x1"}]}`)
	if ev.OK || !strings.Contains(ev.Err, "1 tasks failed, 0 cancelled: Task nightly-x1-1 failed") {
		t.Errorf("cloudrun: ok %v, %q", ev.OK, ev.Err)
	}
}
