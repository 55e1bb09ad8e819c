package executors

import (
	"os"
	"testing"
	"time"
)

// BenchmarkBuildEnv: the environment of one process task's start.
func BenchmarkBuildEnv(b *testing.B) {
	job := Job{RunID: "01a21048-3080-7a82-862e-5c3cc9073931", TaskID: "01a21048-3080-7a82-862e-5c3cc9073931:t[17]", TaskName: "t",
		Workflow: "spawn", Attempt: 1, ParallelIndex: 17, ParallelCount: 2000,
		Ork: OrkTask{TaskIndex: 0, MaxRetries: 0, Timeout: time.Minute, Command: "true"}}
	files := attemptFiles{input: "/data/work/input-empty.json", output: "/data/work/01a21048-3080-7a82-862e-5c3cc9073931/t[17].1.output.json"}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buildEnv(os.Environ(), job, files)
	}
}
