package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/orkwal/orkwal/engine"
	"github.com/urfave/cli/v2"
)

// Shell completion: the scripts ask the binary itself, which completes
// commands and flags (urfave/cli's --generate-bash-completion) and, by
// asking the daemon, workflow names, run ids and task names.

const bashCompletion = `# bash completion for orkwal. Load it with
#   source <(orkwal completion bash)
# or save it as /etc/bash_completion.d/orkwal (or ~/.local/share/bash-completion/completions/orkwal).
_orkwal_complete() {
  local cur="${COMP_WORDS[COMP_CWORD]}"
  local words=("${COMP_WORDS[@]:0:COMP_CWORD}")
  local opts
  if [[ "$cur" == -* ]]; then
    opts=$("${words[@]}" "$cur" --generate-bash-completion 2>/dev/null)
  else
    opts=$("${words[@]}" --generate-bash-completion 2>/dev/null)
  fi
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -o bashdefault -o default -F _orkwal_complete orkwal
`

const zshCompletion = `#compdef orkwal
# zsh completion for orkwal. Load it with
#   source <(orkwal completion zsh)
# or save it as _orkwal in a folder of $fpath.
_orkwal() {
  local -a opts
  local cur=${words[CURRENT]}
  if [[ "$cur" == -* ]]; then
    opts=("${(@f)$(${words[1,CURRENT-1]} $cur --generate-bash-completion 2>/dev/null)}")
  else
    opts=("${(@f)$(${words[1,CURRENT-1]} --generate-bash-completion 2>/dev/null)}")
  fi
  if [[ -n "${opts[1]}" ]]; then
    compadd -a opts
  else
    _files
  fi
}
if [[ "${funcstack[1]}" == "_orkwal" ]]; then
  _orkwal "$@"
else
  compdef _orkwal orkwal
fi
`

func completionCommand() *cli.Command {
	return clientCommand(&cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script: source <(orkwal completion bash)",
		ArgsUsage: "bash|zsh|fish",
		Action: func(c *cli.Context) error {
			args, err := arguments(c, 1, 1)
			if err != nil {
				return err
			}
			var script string
			switch args[0] {
			case "bash":
				script = bashCompletion
			case "zsh":
				script = zshCompletion
			case "fish":
				if script, err = c.App.ToFishCompletion(); err != nil {
					return exitf(exitFailure, "fish completion: %v", err)
				}
			default:
				return usageError(c, fmt.Errorf("shell %q: use bash, zsh or fish", args[0]))
			}
			_, err = fmt.Fprint(c.App.Writer, script)
			return err
		},
		BashComplete: func(c *cli.Context) {
			if c.NArg() == 0 {
				fmt.Fprintln(c.App.Writer, "bash\nzsh\nfish")
			}
		},
	}, false)
}

// completionTimeout bounds how long completion waits for the daemon.
const completionTimeout = 2 * time.Second

// completingFlag reports whether the word being completed is a flag.
func completingFlag(c *cli.Context) bool {
	if args := c.Args().Slice(); len(args) > 0 && strings.HasPrefix(args[len(args)-1], "-") {
		return true
	}
	n := len(os.Args)
	return n > 2 && os.Args[n-1] == "--generate-bash-completion" && strings.HasPrefix(os.Args[n-2], "-")
}

// completionSession is a client of the daemon for completion: quiet and quick.
func completionSession(c *cli.Context) (*client, context.Context, context.CancelFunc, bool) {
	cl, err := newClient(c.String("addr"), c.String("token"))
	if err != nil {
		return nil, nil, nil, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	return cl, ctx, cancel, true
}

// completeWorkflows completes the workflow name of trigger, delete and versions.
func completeWorkflows(c *cli.Context) {
	if completingFlag(c) {
		cli.DefaultCompleteWithFlags(c.Command)(c)
		return
	}
	if c.NArg() > 0 {
		return
	}
	cl, ctx, cancel, ok := completionSession(c)
	if !ok {
		return
	}
	defer cancel()
	var wfs []engine.WorkflowView
	if _, err := cl.get(ctx, "/workflows", &wfs); err != nil {
		return
	}
	for _, w := range wfs {
		fmt.Fprintln(c.App.Writer, w.Name)
	}
}

// completeRuns completes a run id (the newest runs) and, for logs, the task
// name of that run.
func completeRuns(c *cli.Context) {
	if completingFlag(c) {
		cli.DefaultCompleteWithFlags(c.Command)(c)
		return
	}
	cl, ctx, cancel, ok := completionSession(c)
	if !ok {
		return
	}
	defer cancel()
	switch {
	case c.NArg() == 0:
		var runs []engine.RunView
		if _, err := cl.get(ctx, "/runs?limit=50", &runs); err != nil {
			return
		}
		for _, r := range runs {
			fmt.Fprintln(c.App.Writer, r.ID)
		}
	case c.NArg() == 1 && c.Command.Name == "logs":
		var run engine.RunView
		if _, err := cl.get(ctx, "/runs/"+url.PathEscape(c.Args().First()), &run); err != nil {
			return
		}
		for _, t := range run.Tasks {
			if t.Instances == 0 {
				fmt.Fprintln(c.App.Writer, t.Name)
			}
		}
	}
}
