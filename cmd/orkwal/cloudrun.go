package main

import (
	"github.com/urfave/cli/v2"

	"github.com/orkwal/orkwal/executors"
	"github.com/orkwal/orkwal/replay/workflow"
)

// cloudRunFlags are the project and region of cloudrun tasks whose job is
// a name alone (Ork takes them when a workflow is created).
func cloudRunFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "cloudrun-project", EnvVars: []string{"ORKWAL_CLOUDRUN_PROJECT", "GOOGLE_CLOUD_PROJECT"},
			Usage: "the Google Cloud project of cloudrun tasks that name none"},
		&cli.StringFlag{Name: "cloudrun-region", EnvVars: []string{"ORKWAL_CLOUDRUN_REGION"},
			Usage: "the region of cloudrun tasks that name none (such as us-central1)"},
	}
}

// cloudRunConfig reads cloudRunFlags; a value that is no project or
// region is a usage error.
func cloudRunConfig(c *cli.Context) (executors.CloudRunConfig, error) {
	cfg := executors.CloudRunConfig{Project: c.String("cloudrun-project"), Region: c.String("cloudrun-region")}
	switch {
	case cfg.Project != "" && !workflow.ValidCloudRunProject(cfg.Project):
		return cfg, exitf(exitUsage, "--cloudrun-project: %q is not a Google Cloud project id or number", cfg.Project)
	case cfg.Region != "" && !workflow.ValidCloudRunRegion(cfg.Region):
		return cfg, exitf(exitUsage, "--cloudrun-region: %q is not a Google Cloud region (such as us-central1)", cfg.Region)
	}
	return cfg, nil
}
