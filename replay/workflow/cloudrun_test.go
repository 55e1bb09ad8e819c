package workflow

import (
	"strings"
	"testing"
)

// TestParseCloudRun: Ork's executor cloudrun (and cloud_run) with its job,
// by name with orkwal's project and region or none (the daemon's), or by
// full name, whose parts Parts returns.
func TestParseCloudRun(t *testing.T) {
	s, err := Parse("w.yaml", []byte(`name: w
tasks:
  named:
    executor: cloudrun
    job: nightly-etl
    project: my-project
    region: europe-west1
    env: {MODE: full}
    timeout: 600
  bare:
    executor: cloud_run
    job: report
  full:
    executor: cloudrun
    job: projects/p-123/locations/us-central1/jobs/export
    depends_on: [named, bare]
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][3]string{
		"named": {"my-project", "europe-west1", "nightly-etl"},
		"bare":  {"", "", "report"},
		"full":  {"p-123", "us-central1", "export"},
	}
	for name, w := range want {
		task := s.Lookup(name)
		if task.Executor != "cloudrun" || task.CloudRun == nil {
			t.Fatalf("%s: executor %q, cloudrun %+v", name, task.Executor, task.CloudRun)
		}
		project, region, job := task.CloudRun.Parts()
		if [3]string{project, region, job} != w {
			t.Errorf("%s: parts %q %q %q, want %q", name, project, region, job, w)
		}
	}
}

// TestParseCloudRunErrors: a cloudrun task without a job, a job that is
// no Cloud Run name, a project or region that is none, keys for another
// executor, each refused naming the key and its line.
func TestParseCloudRunErrors(t *testing.T) {
	tests := []struct{ name, task, want string }{
		{"no job", "{executor: cloudrun}", "tasks.a.job: required for executor cloudrun"},
		{"empty job", "{executor: cloudrun, job: ''}", `tasks.a.job: "": a Cloud Run job's name`},
		{"job upper case", "{executor: cloudrun, job: Nightly}", `tasks.a.job: "Nightly": a Cloud Run job's name is lower-case letters`},
		{"job too long", "{executor: cloudrun, job: " + "j" + strings.Repeat("a", 63) + "}", "a Cloud Run job's name is lower-case"},
		{"job ends with dash", "{executor: cloudrun, job: etl-}", `"etl-": a Cloud Run job's name`},
		{"job is a list", "{executor: cloudrun, job: [a]}", "tasks.a.job: expected a string, got a list"},
		{"job half a path", "{executor: cloudrun, job: jobs/etl}", `tasks.a.job: "jobs/etl": a job's name, or projects/PROJECT/locations/REGION/jobs/NAME`},
		{"full job bad region", "{executor: cloudrun, job: projects/p/locations/Europe/jobs/etl}", `location "Europe" is not a Google Cloud region`},
		{"full job bad name", "{executor: cloudrun, job: projects/p/locations/us-east1/jobs/ETL}", `job "ETL": a Cloud Run job's name`},
		{"full job and project", "{executor: cloudrun, job: projects/p/locations/us-east1/jobs/etl, project: q}", "tasks.a.project: not allowed with a full job name"},
		{"full job and region", "{executor: cloudrun, job: projects/p/locations/us-east1/jobs/etl, region: us-west1}", "tasks.a.region: not allowed with a full job name"},
		{"bad project", "{executor: cloudrun, job: etl, project: 'My Project'}", `tasks.a.project: "My Project": not a Google Cloud project id`},
		{"bad region", "{executor: cloudrun, job: etl, region: west}", `tasks.a.region: "west": not a Google Cloud region`},
		{"command", "{executor: cloudrun, job: etl, command: [x]}", "tasks.a.command: not allowed for executor cloudrun"},
		{"file", "{executor: cloudrun, job: etl, file: x.py}", "tasks.a.file: is for executors python, process and library"},
		{"job on a process task", "{command: x, job: etl}", "tasks.a: job, project and region are for executor cloudrun"},
		{"region on an http task", "{executor: http, url: 'http://x', region: us-east1}", "tasks.a: job, project and region are for executor cloudrun"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("etl.yaml", []byte("name: a\ntasks:\n  a: "+tt.task+"\n"))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "(line 3") {
				t.Errorf("got %v, want %q at line 3", err, tt.want)
			}
		})
	}
}
