package executors

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// googleTracker polls a Google Cloud job through its public REST API
// (jobs.get of BigQuery v2 and Dataproc v1, executions.get of Cloud Run
// Admin v2) with the Application Default Credentials (google.go).
type googleTracker struct {
	client *http.Client
	auth   *googleAuth
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

func newGoogleTracker(client *http.Client, auth *googleAuth, base string, d *descriptor) (tracker, error) {
	esc := url.PathEscape
	t := &googleTracker{client: client, auth: auth}
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

// cloudRunStatus: an execution has ended once it has a completionTime;
// it failed if a task failed or was cancelled.
func cloudRunStatus(doc *googleJob) (jobStatus, string) {
	if doc.CompletionTime == "" {
		return jobRunning, ""
	}
	if doc.FailedCount == 0 && doc.CancelledCount == 0 {
		return jobDone, ""
	}
	msg := fmt.Sprintf("%d tasks failed, %d cancelled", doc.FailedCount, doc.CancelledCount)
	for _, c := range doc.Conditions {
		if c.Type == "Completed" && c.Message != "" {
			msg += ": " + c.Message
		}
	}
	return jobFailed, msg
}
