package executors

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// googleTracker polls a Google Cloud job through its public REST API
// (jobs.get of BigQuery v2 and Dataproc v1, executions.get of Cloud Run
// Admin v2) with the Application Default Credentials (google.go).
type googleTracker struct {
	client *http.Client
	auth   *GoogleTokens
	name   string // the service and its tracking id, for messages
	url    string
	status func(doc *googleJob) (jobStatus, string)
}

// googleJob is the union of what the three answers say of a job's state.
type googleJob struct {
	Status struct {
		State       string `json:"state"`   // BigQuery: PENDING, RUNNING, DONE; Dataproc: ... DONE, ERROR, CANCELLED
		Details     string `json:"details"` // Dataproc
		ErrorResult *struct {
			Reason  string `json:"reason"`
			Message string `json:"message"`
		} `json:"errorResult"` // BigQuery
	} `json:"status"`
	CompletionTime string `json:"completionTime"` // Cloud Run
	FailedCount    int    `json:"failedCount"`
	CancelledCount int    `json:"cancelledCount"`
	Conditions     []struct {
		Type    string `json:"type"`
		State   string `json:"state"`
		Message string `json:"message"`
	} `json:"conditions"`
}

func newGoogleTracker(client *http.Client, google GoogleConfig, d *descriptor) (tracker, error) {
	esc, base := url.PathEscape, google.BaseURL
	t := &googleTracker{client: client, auth: google.Tokens}
	switch d.Service {
	case "bigquery":
		if err := required(d.Service, "project", d.Project, "job_id", d.JobID); err != nil {
			return nil, err
		}
		t.url = cmp.Or(base, "https://bigquery.googleapis.com") + "/bigquery/v2/projects/" + esc(d.Project) + "/jobs/" + esc(d.JobID)
		if d.Location != "" {
			t.url += "?location=" + url.QueryEscape(d.Location)
		}
		t.status = bigqueryStatus
	case "cloudrun":
		if err := required(d.Service, "project", d.Project, "region", d.Region, "job_name", d.JobName, "execution_id", d.ExecutionID); err != nil {
			return nil, err
		}
		t.url = cmp.Or(base, "https://run.googleapis.com") + "/v2/projects/" + esc(d.Project) + "/locations/" + esc(d.Region) +
			"/jobs/" + esc(d.JobName) + "/executions/" + esc(d.ExecutionID)
		t.status = cloudRunStatus
		t.name = d.Service + " " + t.url
		return &cloudRunTracker{t}, nil
	case "dataproc":
		if err := required(d.Service, "project", d.Project, "region", d.Region, "job_id", d.JobID); err != nil {
			return nil, err
		}
		t.url = cmp.Or(base, "https://dataproc.googleapis.com") + "/v1/projects/" + esc(d.Project) + "/regions/" + esc(d.Region) + "/jobs/" + esc(d.JobID)
		t.status = dataprocStatus
	}
	t.name = d.Service + " " + t.url
	return t, nil
}

// required names the first of the (name, value) pairs whose value is empty.
func required(service string, pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			return fmt.Errorf("%s: %s missing", service, pairs[i])
		}
	}
	return nil
}

func (t *googleTracker) String() string { return t.name }

func (t *googleTracker) poll(ctx context.Context) (jobStatus, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.url, nil)
	if err != nil {
		return 0, "", err
	}
	if err := t.auth.authorize(req); err != nil {
		return 0, "", err
	}
	var doc googleJob
	code, err := doJSON(t.client, req, &doc)
	switch {
	case err != nil:
		return 0, "", err
	case code == http.StatusTooManyRequests || code >= 500:
		return 0, "", fmt.Errorf("status %d", code) // tried again
	case code/100 != 2:
		return jobFailed, fmt.Sprintf("status %d from %s", code, t.url), nil
	}
	status, msg := t.status(&doc)
	return status, msg, nil
}

func bigqueryStatus(doc *googleJob) (jobStatus, string) {
	switch {
	case doc.Status.State != "DONE":
		return jobRunning, ""
	case doc.Status.ErrorResult != nil:
		return jobFailed, doc.Status.ErrorResult.Reason + ": " + doc.Status.ErrorResult.Message
	}
	return jobDone, ""
}

func dataprocStatus(doc *googleJob) (jobStatus, string) {
	switch doc.Status.State {
	case "DONE":
		return jobDone, ""
	case "ERROR", "CANCELLED":
		return jobFailed, doc.Status.State + ": " + doc.Status.Details
	}
	return jobRunning, ""
}

// cloudRunStatus: an execution has ended once its Completed condition
// has succeeded or failed, or it has a completionTime; it failed if that
// condition failed, or a task failed or was cancelled.
func cloudRunStatus(doc *googleJob) (jobStatus, string) {
	var completed string
	var msg string
	for _, c := range doc.Conditions {
		if c.Type == "Completed" {
			completed, msg = c.State, c.Message
		}
	}
	ended := completed == "CONDITION_SUCCEEDED" || completed == "CONDITION_FAILED"
	switch {
	case !ended && doc.CompletionTime == "":
		return jobRunning, ""
	case completed != "CONDITION_FAILED" && doc.FailedCount == 0 && doc.CancelledCount == 0:
		return jobDone, ""
	}
	counts := fmt.Sprintf("%d tasks failed, %d cancelled", doc.FailedCount, doc.CancelledCount)
	if msg == "" {
		return jobFailed, counts
	}
	return jobFailed, counts + ": " + msg
}

// cloudRunTracker polls a Cloud Run execution, and cancels it
// (executions.cancel: POST /v2/projects/P/locations/R/jobs/J/executions/E:cancel).
type cloudRunTracker struct{ *googleTracker }

func (t *cloudRunTracker) cancel(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url+":cancel", strings.NewReader("{}"))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if err := t.auth.authorize(req); err != nil {
		return err
	}
	var op operation
	code, err := doJSON(t.client, req, &op)
	switch {
	case err != nil:
		return err
	case code/100 != 2:
		return fmt.Errorf("status %d: %s", code, op.Error.Message)
	}
	return nil
}
