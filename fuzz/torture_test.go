package fuzz

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Flags of the crash-recovery torture harnesses (TestPowerLoss, TestKill9).
// See docs/reliability.md.
var (
	seed = flag.Int64("seed", 0,
		"replay one torture scenario: TestPowerLoss or TestKill9 with this seed (0 = many seeds from a time-derived base)")
	tortureScenarios = flag.Int("torture.scenarios", 0,
		"TestPowerLoss: run this many scenarios")
	tortureCrashes = flag.Int("torture.crashes", 0,
		"TestPowerLoss: run scenarios until this many power cuts were injected (ORKWAL_TORTURE=long: 100000)")
	tortureTime = flag.Duration("torture.time", 0,
		"TestPowerLoss: run scenarios for this long (the default when no other limit is set: 25s, 5s with -short)")
	tortureKills = flag.Int("torture.kills", 0,
		"TestKill9: kill -9 the daemon this many times (0 = 8, or 1000 with ORKWAL_TORTURE=long)")
	tortureLives = flag.Int("torture.lives", 0,
		"TestCrashLoop: lives of the daemon, each ended by a kill -9 (0 = 12, or 100 with ORKWAL_TORTURE=long)")
)

// longMode: ORKWAL_TORTURE=long asks for the long runs (make torture).
func longMode() bool { return os.Getenv("ORKWAL_TORTURE") == "long" }

// budget is a harness's size: its flag's value if set, else long in long
// mode, else short.
func budget(flag, short, long int) int {
	switch {
	case flag != 0:
		return flag
	case longMode():
		return long
	}
	return short
}

// harnessSeed is -seed, or a time-derived base (printed on a failure).
func harnessSeed() int64 {
	if *seed != 0 {
		return *seed
	}
	return baseSeed()
}

// baseSeed is where a multi-seed run starts: ORKWAL_TORTURE_BASE, else the
// time. Every seed is printed when it fails, so a time base loses nothing.
func baseSeed() int64 {
	if s := os.Getenv("ORKWAL_TORTURE_BASE"); s != "" {
		var v int64
		for _, c := range s {
			if c < '0' || c > '9' {
				return time.Now().UnixNano() % 1e12
			}
			v = v*10 + int64(c-'0')
		}
		if v > 0 {
			return v
		}
	}
	return time.Now().UnixNano()%1e12 + 1
}

// scratchRoot is a folder for many short-lived data folders. The power-loss
// harness models durability itself, so it prefers a tmpfs (/dev/shm), where
// the real fsyncs the WAL still makes cost nothing; ORKWAL_TORTURE_TMP
// overrides.
func scratchRoot(t *testing.T) string {
	t.Helper()
	base := os.Getenv("ORKWAL_TORTURE_TMP")
	if base == "" {
		if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
			base = "/dev/shm"
		}
	}
	if base == "" {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp(base, "orkwal-torture-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Clean(dir)
}
