package wal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// diskView is what a power cut keeps of a folder, as far as the calls
// through ioHook tell: the names made durable by its last fsync and each
// file's content at its last fsync. Before Open, all of the folder is
// durable (it is what survived).
type diskView struct {
	dir     string
	names   map[string]bool   // durable names in dir
	data    map[string][]byte // durable content by path (nil: empty)
	renamed map[string]string // new name → old, for renames not yet durable
}

func newDiskView(t *testing.T, dir string) *diskView {
	v := &diskView{dir: dir, names: map[string]bool{}, data: map[string][]byte{}, renamed: map[string]string{}}
	for _, name := range listNames(t, dir) {
		p := filepath.Join(dir, name)
		v.names[p] = true
		v.data[p] = readOrNil(p)
	}
	return v
}

func listNames(t *testing.T, dir string) []string {
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

func readOrNil(path string) []byte {
	b, _ := os.ReadFile(path)
	return b
}

// done credits c, which has just returned.
func (v *diskView) done(t *testing.T, c ioCall) {
	switch {
	case c.kind == ioSync || c.kind == ioDataSync:
		v.data[c.path] = readOrNil(c.path)
		if from, ok := v.renamed[c.path]; ok {
			// The file's bytes are durable under whichever name a cut
			// keeps: its rename is not yet.
			v.data[from] = v.data[c.path]
		}
	case c.kind == ioRename:
		v.renamed[c.path] = c.from
	case c.kind == ioDirSync && c.path == v.dir:
		v.names = map[string]bool{}
		for _, name := range listNames(t, v.dir) {
			p := filepath.Join(v.dir, name)
			v.names[p] = true
			if from, ok := v.renamed[p]; ok && v.data[p] == nil {
				v.data[p] = v.data[from] // the content moves with its name
			}
		}
		clear(v.renamed)
	}
}

// file is one file of an image: present or not, and its bytes.
type file struct {
	ok   bool
	data []byte
}

// images are the folders a power cut now may leave: each file (a rename's
// two names together: a rename is atomic) as durable or as it is, in
// every combination (the two extremes and each change alone when there
// are more than 4).
func (v *diskView) images(t *testing.T, calls []ioCall) []map[string]file {
	now := map[string]file{}
	for _, name := range listNames(t, v.dir) {
		p := filepath.Join(v.dir, name)
		now[p] = file{true, readOrNil(p)}
	}
	durable := map[string]file{}
	for p := range v.names {
		durable[p] = file{true, v.data[p]}
	}
	var units [][]string // paths that differ, a rename's two in one
	seen := map[string]bool{}
	for _, c := range calls {
		if c.kind == ioRename && differs(durable, now, c.from) && differs(durable, now, c.path) && !seen[c.from] && !seen[c.path] {
			units = append(units, []string{c.from, c.path})
			seen[c.from], seen[c.path] = true, true
		}
	}
	for _, p := range sortedKeys(now, durable) {
		if !seen[p] && differs(durable, now, p) {
			units = append(units, []string{p})
		}
	}
	var picks [][]bool
	if len(units) <= 4 {
		for m := 0; m < 1<<len(units); m++ {
			pick := make([]bool, len(units))
			for i := range pick {
				pick[i] = m&(1<<i) != 0
			}
			picks = append(picks, pick)
		}
	} else {
		picks = append(picks, make([]bool, len(units)), slices.Repeat([]bool{true}, len(units)))
		for i := range units {
			pick := make([]bool, len(units))
			pick[i] = true
			picks = append(picks, pick)
		}
	}
	var out []map[string]file
	for _, pick := range picks {
		img := map[string]file{}
		for p, f := range durable {
			img[p] = f
		}
		for i, u := range units {
			if pick[i] {
				for _, p := range u {
					img[p] = now[p]
				}
			}
		}
		out = append(out, img)
	}
	return out
}

func differs(a, b map[string]file, p string) bool {
	return a[p].ok != b[p].ok || !bytes.Equal(a[p].data, b[p].data)
}

func sortedKeys(ms ...map[string]file) []string {
	var keys []string
	for _, m := range ms {
		for k := range m {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	return keys
}

// bootImage writes img into a new folder, opens it (no hook) and returns
// its records, or the error of Open or of the replay.
func bootImage(t *testing.T, img map[string]file) ([][]byte, error) {
	dir := filepath.Join(t.TempDir(), "wal")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for p, f := range img {
		if f.ok {
			if err := os.WriteFile(filepath.Join(dir, filepath.Base(p)), f.data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	hook := ioHook
	ioHook = nil
	defer func() { ioHook = hook }()
	l, err := Open(dir, Options{Logger: quiet})
	if err != nil {
		return nil, err
	}
	l.Close()
	return replayAll(dir)
}

// powerCuts runs op (which changes dir) with a power cut before each of
// its calls through ioHook and once it returned: each image of dir such a
// cut may leave (diskView.images) is booted (bootImage) and handed to
// check. It returns how many images were booted.
func powerCuts(t *testing.T, dir string, op func() error, check func(at string, img map[string]file, got [][]byte, err error)) int {
	t.Helper()
	v := newDiskView(t, dir)
	var calls []ioCall
	booted := 0
	cut := func(at string) {
		if n := len(calls); n > 0 {
			v.done(t, calls[n-1])
		}
		for _, img := range v.images(t, calls) {
			got, err := bootImage(t, img)
			check(fmt.Sprintf("%s; calls:\n%s", at, callList(calls)), img, got, err)
			booted++
		}
	}
	ioHook = func(c ioCall) error {
		cut(fmt.Sprintf("before %v", c))
		calls = append(calls, c)
		return nil
	}
	defer func() { ioHook = nil }()
	if err := op(); err != nil {
		t.Fatal(err)
	}
	ioHook = nil
	cut("once it returned")
	if booted == 0 {
		t.Fatal("no image booted")
	}
	return booted
}

// TestRecoveryPowerCutAtEveryStep: a power cut before any call of a
// recovery (every case of recoveryCases but the new folder), keeping of
// each change not yet fsynced either nothing or all (a rename whole), in
// every combination, leaves a folder the next Open boots, serving the
// records the recovery serves: nothing is half-done that it misreads.
// The cut tail's only fsync is openSegments' (cutTail has none): the
// images before it hold the torn tail again, cut again.
func TestRecoveryPowerCutAtEveryStep(t *testing.T) {
	for _, tc := range recoveryCases {
		if tc.name == "new folder" {
			continue // nothing in it to lose but the folder, which Open makes again
		}
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "wal")
			want := tc.make(t, dir)
			open := func() error {
				l, err := Open(dir, Options{Logger: quiet})
				if err == nil {
					l.Close()
				}
				return err
			}
			powerCuts(t, dir, open, func(at string, img map[string]file, got [][]byte, err error) {
				if err != nil || !equalRecords(got, want) {
					t.Errorf("power cut %s (image %v): boot: %v, %d records, want %d", at, names(img), err, len(got), len(want))
				}
			})
		})
	}
}

func names(img map[string]file) string {
	var out []string
	for p, f := range img {
		if f.ok {
			out = append(out, fmt.Sprintf("%s:%d", filepath.Base(p), len(f.data)))
		}
	}
	slices.Sort(out)
	return fmt.Sprint(out)
}

// legacyCut is a folder an earlier version's front truncation left (a
// .START file, its .TEMP, the segments it supersedes, no mark) and a cut
// in it that CutAt makes after finishing that truncation (resolveLegacy's
// removals and rename).
type legacyCut struct {
	name    string
	tail    bool // the .START is the last segment (else later segments follow)
	corrupt bool // the frame at the cut's index is corrupt (the reason to cut there)
}

// makeLegacyCut builds tc's folder in dir (writeLegacy, without a mark:
// the versions that left a .START wrote none) and returns the records Open
// serves from it and the cut's index: the .START's second entry, so that
// the cut keeps one.
func makeLegacyCut(t *testing.T, dir string, tc legacyCut) (want [][]byte, index uint64) {
	t.Helper()
	recs, segs, from := writeLegacy(t, dir, tc.corrupt)
	marks, _ := filepath.Glob(filepath.Join(dir, markPrefix+"*"))
	for _, m := range marks {
		os.Remove(m)
	}
	end := len(recs)
	if tc.tail {
		for _, sg := range segs[2:] {
			os.Remove(sg.path)
		}
		end = int(segs[2].first - 1)
	}
	return recs[from-1 : end], from + 1
}

// TestCutAtOnALegacyTruncationPowerCutAtEveryStep: a power cut before
// each call of the operator's cut on a folder an earlier version left
// mid-truncation (resolveLegacy's removals and its rename of the .START,
// which has no folder fsync of its own, then the cut's copies, removals
// and truncation), and once it returned, keeping any combination of what
// was not yet fsynced: every image boots to a prefix of the log holding
// every entry before the cut (nothing acknowledged is lost; what the cut
// removes is kept in its copy, TestCutAtMakesEachStepDurable), and when
// the entry at the cut is corrupt, boot either refuses it loudly (a
// *CorruptError at that index) or serves exactly the entries before it.
func TestCutAtOnALegacyTruncationPowerCutAtEveryStep(t *testing.T) {
	for _, tc := range []legacyCut{
		{name: "later segments follow"},
		{name: "the .START is the tail", tail: true},
		{name: "later segments follow, corrupt at the cut", corrupt: true},
		{name: "the .START is the tail, corrupt at the cut", tail: true, corrupt: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "wal")
			want, index := makeLegacyCut(t, dir, tc)
			cut := func() error { return CutAt(dir, index, CutFolder(dir, time.Now()), quiet) }
			powerCuts(t, dir, cut, func(at string, img map[string]file, got [][]byte, err error) {
				var ce *CorruptError
				switch {
				case tc.corrupt && errors.As(err, &ce) && ce.Index == index:
					// loud: the corrupt entry is still there
				case err != nil:
					t.Errorf("power cut %s (image %v): boot: %v", at, names(img), err)
				case len(got) < 1 || !equalRecords(got, want[:len(got)]) || tc.corrupt && len(got) != 1:
					t.Errorf("power cut %s (image %v): boot served %d records, not a prefix of the %d with the 1 before the cut",
						at, names(img), len(got), len(want))
				}
			})
		})
	}
}
