package main

import (
	"context"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"
)

// healthCommand asks the daemon's GET /healthz: exit 0 when it serves and
// its WAL works, 1 otherwise. It is the container image's HEALTHCHECK (a
// scratch image has no curl), and a probe for scripts.
func healthCommand() *cli.Command {
	return clientCommand(&cli.Command{
		Name:  "health",
		Usage: "exit 0 if the daemon answers /healthz with ok, 1 otherwise (for container health checks and scripts)",
		Flags: []cli.Flag{&cli.DurationFlag{Name: "timeout", Value: 5 * time.Second, Usage: "give up after `DURATION`"}},
		Action: func(c *cli.Context) error {
			s, _, err := startSession(c, 0, 0)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(s.ctx, c.Duration("timeout"))
			defer cancel()
			var answer struct{ Status string }
			if _, err := s.cl.get(ctx, "/healthz", &answer); err != nil {
				return exitf(exitFailure, "unhealthy: %v", err)
			}
			fmt.Fprintln(s.out, answer.Status)
			return nil
		},
	}, true)
}
