package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/urfave/cli/v2"
)

// version and commit name the build. A release build stamps them:
//
//	go build -ldflags "-X main.version=v1.2.0 -X main.commit=$(git rev-parse HEAD)" ./cmd/orkwal
//
// Unstamped, version is the module's version from the build info
// ("(devel)" for a build from a checkout) and commit its vcs.revision,
// when the build recorded one.
var (
	version = ""
	commit  = ""
)

// buildInfo is what `orkwal version` prints.
type buildInfo struct {
	Version, Commit, Go string
	Modified            bool // built from a checkout with uncommitted changes
}

// readBuildInfo fills buildInfo from the -X stamps, then the binary's own
// build info.
func readBuildInfo() buildInfo {
	b := buildInfo{Version: version, Commit: commit, Go: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if ok {
		if b.Version == "" {
			b.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch {
			case s.Key == "vcs.revision" && b.Commit == "":
				b.Commit = s.Value
			case s.Key == "vcs.modified" && commit == "":
				b.Modified = s.Value == "true"
			}
		}
	}
	if b.Version == "" {
		b.Version = "(devel)"
	}
	return b
}

func (b buildInfo) write(w io.Writer) {
	c := b.Commit
	switch {
	case c == "":
		c = "unknown (not stamped; build with -ldflags \"-X main.commit=...\")"
	case b.Modified:
		c += " (modified)"
	}
	fmt.Fprintf(w, "orkwal %s\ncommit: %s\ngo: %s\n", b.Version, c, b.Go)
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:   "version",
		Usage:  "print the version, commit and Go version of this binary",
		Action: withoutArguments(func(c *cli.Context) error { readBuildInfo().write(c.App.Writer); return nil }),
	}
}
