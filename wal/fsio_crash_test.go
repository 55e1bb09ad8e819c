package wal

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
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
	case c.kind == ioSync:
		v.data[c.path] = readOrNil(c.path)
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
			v := newDiskView(t, dir)
			var calls []ioCall
			booted := 0
			cut := func(at string) {
				if n := len(calls); n > 0 {
					v.done(t, calls[n-1])
				}
				for i, img := range v.images(t, calls) {
					got, err := bootImage(t, img)
					if err != nil || !equalRecords(got, want) {
						t.Errorf("power cut %s (image %d of %v): boot: %v, %d records, want %d; calls:\n%s",
							at, i, names(img), err, len(got), len(want), callList(calls))
					}
					booted++
				}
			}
			ioHook = func(c ioCall) error {
				cut(fmt.Sprintf("before %v", c))
				calls = append(calls, c)
				return nil
			}
			defer func() { ioHook = nil }()
			l, err := Open(dir, Options{Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			ioHook = nil
			cut("once Open returned")
			l.Close()
			if booted == 0 {
				t.Fatal("no image booted")
			}
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
