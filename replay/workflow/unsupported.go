package workflow

// level says where in a workflow file a key lives.
type level int

const (
	levelWorkflow level = iota + 1
	levelTask
)

// notSupportedYet lists keys that are valid in Ork or planned for orkwal but
// not implemented in this build. Parse rejects them with "not supported yet in
// this version" rather than "unknown key", so that a user knows the file is
// fine and the build is behind. Remove an entry when its feature lands (and
// teach Parse the key in the same change).
var notSupportedYet = map[string]level{
	// Workflow level.

	// Task level.
}

// executors this build runs. The first is the default.
var executors = []string{"process", "noop", "python", "http", "library", "cloudrun"}

// executorAliases are other names of an executor; Parse stores the target.
var executorAliases = map[string]string{
	"shell":     "process",  // Ork's name for the process executor
	"cloud_run": "cloudrun", // Ork accepts both
}

// executorsNotSupportedYet are executor names Ork accepts that this build
// cannot run yet.
var executorsNotSupportedYet = map[string]bool{}
