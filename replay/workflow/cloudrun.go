package workflow

import (
	"regexp"
	"strings"
)

// Cloud Run's names, as its Admin API v2 takes them: a job's name is
// lower-case letters, digits and dashes, starts with a letter, does not
// end with a dash, at most 63 characters; a full job name is
// projects/P/locations/L/jobs/J. A project is an id (my-project, or a
// domain-scoped example.com:my-project) or a number; a region is a
// Google Cloud region (us-central1, europe-west1).
var (
	cloudRunJobRE     = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)
	cloudRunFullJobRE = regexp.MustCompile(`^projects/([^/]+)/locations/([^/]+)/jobs/([^/]+)$`)
	cloudRunProjectRE = regexp.MustCompile(`^([a-z][-a-z0-9.]*:)?[a-z0-9][-a-z0-9]{0,62}$`)
	cloudRunRegionRE  = regexp.MustCompile(`^[a-z]+(-[a-z]+)+[0-9]+$`)
)

// cloudRunKey decodes job, project and region.
func (p *parser) cloudRunKey(c *CloudRunSpec, e entry) error {
	s, err := p.str(e.val, e.path)
	if err != nil {
		return err
	}
	switch e.key {
	case "job":
		c.Job, err = s, p.cloudRunJob(e, s)
	case "project":
		c.Project = s
		if !cloudRunProjectRE.MatchString(s) {
			err = p.fail(e.val, e.path, "%q: not a Google Cloud project id (my-project) or number", s)
		}
	case "region":
		c.Region = s
		if !cloudRunRegionRE.MatchString(s) {
			err = p.fail(e.val, e.path, "%q: not a Google Cloud region (such as us-central1)", s)
		}
	}
	return err
}

// cloudRunJob checks a job: a name, or a full name whose parts are valid.
func (p *parser) cloudRunJob(e entry, s string) error {
	if m := cloudRunFullJobRE.FindStringSubmatch(s); m != nil {
		switch {
		case !cloudRunProjectRE.MatchString(m[1]):
			return p.fail(e.val, e.path, "%q: project %q is not a Google Cloud project id or number", s, m[1])
		case !cloudRunRegionRE.MatchString(m[2]):
			return p.fail(e.val, e.path, "%q: location %q is not a Google Cloud region (such as us-central1)", s, m[2])
		case !cloudRunJobRE.MatchString(m[3]):
			return p.fail(e.val, e.path, "%q: job %q: %s", s, m[3], cloudRunJobRule)
		}
		return nil
	}
	if strings.Contains(s, "/") {
		return p.fail(e.val, e.path, "%q: a job's name, or projects/PROJECT/locations/REGION/jobs/NAME", s)
	}
	if !cloudRunJobRE.MatchString(s) {
		return p.fail(e.val, e.path, "%q: %s", s, cloudRunJobRule)
	}
	return nil
}

const cloudRunJobRule = "a Cloud Run job's name is lower-case letters, digits and dashes, starts with a letter and does not end with a dash, at most 63 characters"

// checkCloudRun checks that a cloudrun task names its job, and names its
// project and region once.
func (p *parser) checkCloudRun(pt parsedTask, path string) error {
	c := pt.task.CloudRun
	if c == nil || c.Job == "" {
		return p.fail(pt.node, joinPath(path, "job"), "required for executor cloudrun (the Cloud Run job to run: its name, or projects/PROJECT/locations/REGION/jobs/NAME)")
	}
	if strings.HasPrefix(c.Job, "projects/") && (c.Project != "" || c.Region != "") {
		key := "project"
		if c.Project == "" {
			key = "region"
		}
		return p.fail(pt.nodes[key], joinPath(path, key), "not allowed with a full job name (job names its project and region)")
	}
	return nil
}

// Parts returns the project, region and name of a cloudrun task's
// job: its full name's parts, else the task's project and region ("" when
// the task leaves them to the daemon) and the job's name.
func (c *CloudRunSpec) Parts() (project, region, job string) {
	if m := cloudRunFullJobRE.FindStringSubmatch(c.Job); m != nil {
		return m[1], m[2], m[3]
	}
	return c.Project, c.Region, c.Job
}

// ValidCloudRunProject reports whether s is a Google Cloud project id or
// number, as a task's project must be.
func ValidCloudRunProject(s string) bool { return cloudRunProjectRE.MatchString(s) }

// ValidCloudRunRegion reports whether s is a Google Cloud region's name,
// as a task's region must be.
func ValidCloudRunRegion(s string) bool { return cloudRunRegionRE.MatchString(s) }
