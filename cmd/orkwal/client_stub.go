package main

import "github.com/urfave/cli/v2"

// clientCommands is replaced by the client commands (apply, trigger, ...).
func clientCommands() []*cli.Command { return nil }
