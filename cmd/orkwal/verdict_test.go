package main

import (
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/orkwal/orkwal/api"
	"github.com/orkwal/orkwal/engine"
	"github.com/orkwal/orkwal/executors"
)

// TestOneVerdict: orkwal validate passed files that the daemon refused (a
// python task's input_type naming an unknown type, or a list type). Every
// workflow file of testdata/ and examples/ gets the same verdict from the
// four ways a workflow arrives: orkwal validate, orkwal apply, POST
// /workflows (naming its file, as any client may) and the --workflows
// folder.
func TestOneVerdict(t *testing.T) {
	files := workflowFiles(t, "../../testdata", "../../examples")
	if len(files) < 10 {
		t.Fatalf("found %d workflow files", len(files))
	}
	url := cliDaemon(t, executors.Noop{})
	folders := map[string]map[string]error{} // folder → file → its verdict in a --workflows load
	accepted, refused := 0, 0
	for _, file := range files {
		verdicts := map[string]bool{}
		_, _, code := runCLI(t, "validate", file)
		verdicts["validate"] = code == exitOK
		_, _, code = runCLI(t, "apply", "--addr", url, file)
		verdicts["apply"] = code == exitOK
		verdicts["POST /workflows"] = postWorkflow(t, url, file)
		verdicts["--workflows"] = folderVerdict(t, folders, file) == nil
		want := verdicts["validate"]
		for path, ok := range verdicts {
			if ok != want {
				t.Errorf("%s: validate says ok=%v, %s says ok=%v", file, want, path, ok)
			}
		}
		if want {
			accepted++
		} else {
			refused++
		}
	}
	for _, named := range []string{"python_unknown_type.yaml", "python_list_input.yaml"} {
		file := filepath.Join("../../testdata/workflows", named)
		if _, _, code := runCLI(t, "validate", file); code == exitOK {
			t.Errorf("validate accepts %s", file)
		}
	}
	t.Logf("%d files: %d accepted, %d refused by all four", len(files), accepted, refused)
}

// workflowFiles lists every *.yaml and *.yml below roots.
func workflowFiles(t *testing.T, roots ...string) []string {
	var out []string
	for _, root := range roots {
		filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && isWorkflowFile(path) {
				out = append(out, path)
			}
			return err
		})
	}
	sort.Strings(out)
	return out
}

func postWorkflow(t *testing.T, url, file string) bool {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(file)
	req, _ := http.NewRequest("POST", url+"/workflows", strings.NewReader(string(data)))
	req.Header.Set("Content-Type", "application/yaml")
	req.Header.Set(api.WorkflowFileHeader, abs)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		t.Errorf("POST %s: %d", file, resp.StatusCode)
	}
	return resp.StatusCode < 300
}

// folderVerdict is the file's verdict in a load of its folder (which
// checks each file with ScanFolder, as `orkwal run --workflows` does).
func folderVerdict(t *testing.T, folders map[string]map[string]error, file string) error {
	t.Helper()
	abs, _ := filepath.Abs(file)
	dir := filepath.Dir(abs)
	if folders[dir] == nil {
		_, scanned, err := engine.ScanFolder(dir)
		if err != nil {
			t.Fatal(err)
		}
		folders[dir] = map[string]error{}
		for _, f := range scanned {
			folders[dir][f.Path] = f.Err
		}
	}
	return folders[dir][abs]
}
