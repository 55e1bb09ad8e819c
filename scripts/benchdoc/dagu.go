package main

import (
	"fmt"
	"io"
	"strconv"
)

// BenchmarkDagu's spawn workloads (cmd/orkwal/bench_dagu_test.go), each
// measured against its floor in the same iteration: the bare spawns of the
// same `true` processes plus the fsyncs the workload needs at least, one
// after another.
var daguSpawnWorkloads = []struct {
	name, label string
	spawns      float64 // processes spawned
	bare, sync  string  // what its floor is made of: the spawns, the fsyncs
	dagu, want  float64 // Dagu's published seconds; issue 10's limit (0: none)
	ratio       float64 // issue 27's limit on the ratio to the floor (0: none)
}{
	{"parallel-200", "200 independent `true` tasks in one run", 200,
		"200 bare spawns from 16 goroutines", "1 fsync", 2.23, 0.15, 0},
	{"sequential-100", "100 sequential `true` tasks in one run", 100,
		"100 bare spawns one after another", "100 fsyncs (one a step)", 1.22, 0.3, 1.1},
	{"runs-50", "50 one-task `true` runs triggered at once", 50,
		"50 bare spawns one after another", "1 fsync", 0, 0, 1.5},
	{"runs-50-serial", "50 one-task `true` runs, one after another", 50,
		"50 bare spawns one after another", "100 fsyncs (a run's acceptance, then its end)", 3.22, 0.25, 0},
}

// hostRates is the host line: the spawn and fsync rates the floors of
// BenchmarkDagu measured in this run (medians over its runs).
func hostRates(rs results) string {
	var fsyncs []float64
	for _, w := range daguSpawnWorkloads {
		fsyncs = append(fsyncs, rs.values(daguName+w.name, "fsyncs/s")...)
	}
	return fmt.Sprintf("%s spawns/s one at a time, %s spawns/s from 16 goroutines (a bare Go program's `exec.Command(\"true\").Run()`); %s fsyncs/s (a 144-byte write and fsync, on the temp dir's filesystem)",
		num(rs.med(daguName+"sequential-100", "spawns/s")), num(rs.med(daguName+"parallel-200", "spawns/s")), num(median(fsyncs)))
}

// writeDagu writes the rows of BenchmarkDagu's spawn workloads.
func writeDagu(w io.Writer, rs results, childCPU, cpus float64) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	for _, c := range daguSpawnWorkloads {
		name := daguName + c.name
		got, floor, bare := rs.med(name, "s"), rs.med(name, "floor-s"), rs.med(name, "bare-s")
		measured := fmt.Sprintf("%s: %s of its floor (CPU %s of the floor's; %s of the bare spawns alone)",
			secs(got), times(rs.med(name, "ratio")), times(rs.med(name, "cpu-ratio")), times(rs.med(name, "bare-ratio")))
		baseline := fmt.Sprintf("floor, same run: %s = %s (%s, %s/s) + %s (%s/s)", secs(floor), c.bare, secs(bare),
			num(rs.med(name, "spawns/s")), c.sync, num(rs.med(name, "fsyncs/s")))
		if c.dagu > 0 {
			measured += fmt.Sprintf("; %s Dagu's", times(got/c.dagu))
			baseline += fmt.Sprintf("; Dagu: %s", secs(c.dagu))
		}
		if c.want > 0 {
			note := ""
			if floor := c.spawns * childCPU / 1000 / cpus; bare > c.want && floor > c.want {
				note = fmt.Sprintf("; the bare spawns alone take %s, and the %s `true` processes alone need %s of CPU (%s each at least, measured in the baselines), %s on %s cores: no spawner can meet the limit on this machine",
					secs(bare), num(c.spawns), secs(c.spawns*childCPU/1000), msf(childCPU), secs(floor), num(cpus))
			}
			p("| 6 | %s (`BenchmarkDagu/%s`) | %s | %s | ≤ %s | %s%s |", c.label, c.name, measured, baseline,
				secs(c.want), verdict(got, c.want, false), note)
		}
		if c.ratio > 0 {
			p("| issue 27 | %s, ratio to its floor (`BenchmarkDagu/%s`) | %s | %s | ≤ %s× | %s |", c.label, c.name, measured, baseline,
				strconv.FormatFloat(c.ratio, 'f', 1, 64), verdict(rs.med(name, "ratio"), c.ratio, false))
		}
	}
}
