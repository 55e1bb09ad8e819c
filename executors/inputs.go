package executors

import (
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// An attempt's input (ORKWAL_INPUT) is a read-only file that every attempt
// with the same input shares, named after its content in the scratch
// folder (input-<hash>.json; the empty input's too): this file owns the
// names of input files. A file made for one attempt and removed as it
// ended cost a new inode for every start: on ext4 without a journal (the
// machine of docs/benchmarks.md) each creation also scans past the inodes
// removed in the last seconds, tens to hundreds of microseconds of CPU a
// start, and the start of a chain's next task waited for it when its
// dispatch's fsync was quicker. A task that runs again with the same
// input (a workflow run again, a chain whose tasks print no output: each
// one's input names its upstream, with no output) now finds its file
// there: one stat. A file no attempt uses is kept, up to keepIdle of them
// and keepIdleBytes in all (the least recently used goes first), so that
// the folder stays bounded; one larger than keepIdleFile goes once no
// attempt uses it, as every input did before.

// What is kept of the content-named input files no attempt uses, for the
// next attempt with the same input: at most keepIdle files, keepIdleBytes
// in all, none larger than keepIdleFile.
const (
	keepIdle      = 256
	keepIdleBytes = 1 << 20
	keepIdleFile  = 64 << 10
)

// contentInput is the path of the shared file that holds data, in dir: its
// name is the first 128 bits of data's SHA-256, a name no other input
// takes.
func contentInput(dir string, data []byte) string {
	sum := sha256.Sum256(data)
	return filepath.Join(dir, contentInputPrefix+hex.EncodeToString(sum[:16])+contentInputExt)
}

// The name of a content-named input file is contentInputPrefix, 32 hex
// digits, contentInputExt (see IsInputFile).
const (
	contentInputPrefix = "input-"
	contentInputExt    = ".json"
)

// legacyEmptyInput is the file versions before 2026-11-25 gave every
// attempt whose input was the empty document; that input is now
// content-named like any other.
const legacyEmptyInput = "input-empty.json"

// IsInputFile tells whether name (in a scratch folder) is a shared input
// file, or its temp file (name + ".tmp"): one named after its content,
// or the empty input of versions before 2026-11-25 (legacyEmptyInput).
// The engine removes those a previous life of the daemon left at boot,
// before any start.
func IsInputFile(name string) bool {
	name = strings.TrimSuffix(name, ".tmp")
	if name == legacyEmptyInput {
		return true
	}
	n := len(contentInputPrefix) + 32 + len(contentInputExt)
	if len(name) != n || name[:len(contentInputPrefix)] != contentInputPrefix || name[n-len(contentInputExt):] != contentInputExt {
		return false
	}
	_, err := hex.DecodeString(name[len(contentInputPrefix) : n-len(contentInputExt)])
	return err == nil
}

// sharedInputs are the shared input files as this process last wrote them:
// a file found as it was left is trusted without reading it (one stat),
// one found changed or gone (a task removed or rewrote it: the path is the
// task's to read, not to change) is written again before the next start.
var sharedInputs = &sharedFiles{files: map[string]*sharedFile{}, keep: keepIdle, keepBytes: keepIdleBytes, keepFile: keepIdleFile}

type sharedFiles struct {
	keep                int   // content-named files kept idle at most (keepIdle)
	keepBytes, keepFile int64 // their bytes at most, in all and each (keepIdleBytes, keepIdleFile)

	mu        sync.Mutex
	files     map[string]*sharedFile // by path; guarded by mu
	idle      list.List              // content-named files no attempt uses, least recently used first; guarded by mu
	idleBytes int64                  // their size in all; guarded by mu
}

// sharedFile is one shared input file.
type sharedFile struct {
	path string
	size int64 // the input's

	mu sync.Mutex // held while the file is checked or written
	id inputID    // as this process last wrote it; zero: not yet

	refs int           // attempts using it; guarded by sharedFiles.mu
	idle *list.Element // in sharedFiles.idle; guarded by sharedFiles.mu
}

// acquire makes path (see contentInput) hold data and counts one more
// attempt using it, until release.
func (s *sharedFiles) acquire(path string, data []byte) (*sharedFile, error) {
	s.mu.Lock()
	f := s.files[path]
	if f == nil {
		f = &sharedFile{path: path, size: int64(len(data))}
		s.files[path] = f
	}
	f.refs++
	if f.idle != nil {
		s.idle.Remove(f.idle)
		f.idle = nil
		s.idleBytes -= f.size
	}
	s.mu.Unlock()
	f.mu.Lock()
	err := f.ensure(data)
	f.mu.Unlock()
	if err != nil {
		s.release(f)
		return nil, err
	}
	return f, nil
}

// release counts one attempt less using f. A content-named file no
// attempt uses joins the idle ones, or is removed if it is larger than
// s.keepFile; beyond s.keep files or s.keepBytes, the least recently used
// of them are removed (under s.mu, so that no acquire of its path finds
// it half gone).
func (s *sharedFiles) release(f *sharedFile) {
	if f == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f.refs--
	if f.refs > 0 {
		return
	}
	if f.size > s.keepFile {
		s.remove(f)
		return
	}
	f.idle = s.idle.PushBack(f)
	s.idleBytes += f.size
	for s.idle.Len() > s.keep || s.idleBytes > s.keepBytes {
		old := s.idle.Remove(s.idle.Front()).(*sharedFile)
		old.idle = nil
		s.idleBytes -= old.size
		s.remove(old)
	}
}

// remove forgets f, which no attempt uses, and removes its file; called
// with s.mu held.
func (s *sharedFiles) remove(f *sharedFile) {
	delete(s.files, f.path)
	_ = removeScratchFile(f.path) // one left behind goes at the next boot
}

// inputID tells whether a shared input file is as this process left it:
// its fileID and its change time. A task can set the modification time
// back (touch -d, cp -p over it after a chmod), and a same-size rewrite
// within the modification time's granularity keeps it; the change time
// moves with any write, chmod or utimes, and no task can set it.
type inputID struct {
	fileID
	ctime int64
}

func inputIDOf(st *unix.Stat_t) inputID { return inputID{idOf(st), st.Ctim.Nano()} }

// ensure makes f hold data: nothing when it is as this process left it;
// otherwise it is written to path+".tmp" (read-only), then renamed over
// path, so that a task never reads it half written. A folder a task made
// at either name goes whole first (a rename cannot replace it). Called
// with f.mu held.
func (f *sharedFile) ensure(data []byte) error {
	var st unix.Stat_t
	err := unix.Lstat(f.path, &st)
	if err == nil && f.id != (inputID{}) && f.id == inputIDOf(&st) {
		return nil
	}
	if err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		if err := removeScratchFile(f.path); err != nil {
			return err
		}
	}
	tmp := f.path + ".tmp"
	if err := removeScratchFile(tmp); err != nil { // read-only: not opened again for writing
		return err
	}
	if err := writeScratchMode(tmp, data, 0o400); err != nil {
		return err
	}
	if err := unix.Rename(tmp, f.path); err != nil {
		return &os.LinkError{Op: "rename", Old: tmp, New: f.path, Err: err}
	}
	if err := unix.Lstat(f.path, &st); err != nil {
		return &os.PathError{Op: "stat", Path: f.path, Err: err}
	}
	f.id = inputIDOf(&st)
	return nil
}
