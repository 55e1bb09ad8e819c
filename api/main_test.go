package api

import (
	"os"
	"testing"
)

// TestMain runs the tests, or, started by BenchmarkEventFollowers with
// readersEnv set, is the process reading its event streams.
func TestMain(m *testing.M) {
	if spec := os.Getenv(readersEnv); spec != "" {
		os.Exit(readEventStreams(spec))
	}
	os.Exit(m.Run())
}
