package workflow

import (
	"net/url"
	"strings"
)

// A command holds {{ params.NAME }} and {{ inputs.NAME }} placeholders
// (checked at load like every template's) and no other template: ${...}
// and $ are the shell's. ExpandCommand fills them at dispatch so that a
// value is always data, never code or structure:
//
//   - in a shell script (a string command, run as sh -c SCRIPT, or an argv
//     list ["sh", "-c", SCRIPT]) each value becomes one shell word, quoted
//     for where it stands: '...' outside quotes, escaped inside '...' or
//     "...";
//   - in an argv list each value becomes part of its argument, as it is
//     (an argument is never split).

// ShellScript reports whether argv is sh -c SCRIPT (what a string command
// becomes).
func ShellScript(argv []string) bool {
	return len(argv) == 3 && argv[0] == "sh" && argv[1] == "-c"
}

// ExpandCommand fills the placeholders of a command (see above).
func ExpandCommand(argv []string, placeholder func(ref string) string) []string {
	out := argv
	copied := false
	for i, arg := range argv {
		if !strings.Contains(arg, "{{") {
			continue
		}
		if !copied { // specs are shared and immutable
			out, copied = append([]string(nil), argv...), true
		}
		out[i] = expandArg(arg, ShellScript(argv) && i == 2, placeholder)
	}
	return out
}

func expandArg(arg string, shell bool, placeholder func(string) string) string {
	var b strings.Builder
	var sh shellState
	scanCommand(arg, func(kind tokenKind, text string) {
		switch {
		case kind != tokPlaceholder:
			sh.advance(text)
			b.WriteString(text)
		case shell:
			b.WriteString(sh.quote(placeholder(text)))
		default:
			b.WriteString(placeholder(text))
		}
	})
	return b.String()
}

// shellState follows a POSIX shell script's quoting, left to right: the
// contexts a value may land in.
type shellState struct {
	stack   []byte // enclosing contexts, innermost last: '\'', '"', '(' for $( ), '`'
	escaped bool   // the previous character was a backslash outside '...'
}

func (s *shellState) top() byte {
	if len(s.stack) == 0 {
		return 0
	}
	return s.stack[len(s.stack)-1]
}

func (s *shellState) push(c byte) { s.stack = append(s.stack, c) }
func (s *shellState) pop()        { s.stack = s.stack[:len(s.stack)-1] }

func (s *shellState) advance(lit string) {
	for i := 0; i < len(lit); i++ {
		c, top := lit[i], s.top()
		subst := c == '$' && i+1 < len(lit) && lit[i+1] == '('
		switch {
		case s.escaped:
			s.escaped = false
		case top == '\'':
			if c == '\'' {
				s.pop()
			}
		case c == '\\':
			s.escaped = true
		case subst:
			s.push('(')
			i++
		case top == '"':
			if c == '"' {
				s.pop()
			} else if c == '`' {
				s.push('`')
			}
		case c == '\'' || c == '"':
			s.push(c)
		case c == ')' && top == '(' || c == '`' && top == '`':
			s.pop()
		case c == '`':
			s.push('`')
		}
	}
}

// quote is v as one word (or as part of the quoted word it stands in).
func (s *shellState) quote(v string) string {
	switch s.top() {
	case '\'':
		return strings.ReplaceAll(v, "'", `'\''`)
	case '"':
		r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`, "`", "\\`")
		return r.Replace(v)
	case '`': // the shell unescapes \\ and \` of a `...` before it parses it
		return strings.NewReplacer(`\`, `\\`, "`", "\\`").Replace(singleQuoted(v))
	}
	return singleQuoted(v)
}

func singleQuoted(v string) string {
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}

// checkCommandTemplates checks a command's placeholders as checkTemplates
// does a template's: each must name a declared param or input, so that it
// can be filled (a shell script's may not follow an unquoted backslash).
func (p *parser) checkCommandTemplates(spec *Spec, pt parsedTask, path string) error {
	t := pt.task
	shell := ShellScript(t.Command)
	for i, arg := range t.Command {
		at := indexPath(joinPath(path, "command"), i)
		if shell && i == 2 {
			at = joinPath(path, "command")
		}
		var bad string
		scanCommand(arg, func(kind tokenKind, text string) {
			if kind == tokPlaceholder && bad == "" && !knownPlaceholder(spec, t, text) {
				bad = text
			}
		})
		if bad != "" {
			return p.fail(pt.node, at, "placeholder {{%s}}: use {{params.NAME}} of a declared param or {{inputs.NAME}} of a declared input ({{ \"{{\" }} for a literal {{)", bad)
		}
		if shell && i == 2 && !checkShellPlaceholders(arg) {
			return p.fail(pt.node, at, "a placeholder right after a backslash: the value is quoted as one shell word, remove the backslash")
		}
	}
	return nil
}

// checkShellPlaceholders refuses a placeholder right after an unquoted
// backslash in a shell script: the backslash would take the value's
// opening quote.
func checkShellPlaceholders(script string) bool {
	var sh shellState
	ok := true
	scanCommand(script, func(kind tokenKind, text string) {
		if kind == tokPlaceholder && sh.escaped {
			ok = false
		}
		if kind != tokPlaceholder {
			sh.advance(text)
		}
	})
	return ok
}

// ExpandURL fills a URL template (see Expand) so that a param or an input
// cannot change the URL's structure: each value is escaped for where it
// lands, found from what precedes it once filled: in the query (after
// '?') as a query value (url.QueryEscape: & = + # escaped), in the path or
// the fragment as a path segment (url.PathEscape: / ? # escaped), before
// the path (scheme, host) also with '@' escaped. ${env:NAME} values are
// the operator's and go in as they are.
func ExpandURL(template string, placeholder, env func(string) string) string {
	return expand(template, placeholder, env, escapeForURL)
}

// escapeForURL escapes v for the place in a URL that follows prefix.
func escapeForURL(prefix, v string) string {
	switch {
	case strings.Contains(prefix, "#"): // the fragment
		return url.PathEscape(v)
	case strings.Contains(prefix, "?"): // the query
		return url.QueryEscape(v)
	}
	if i := strings.Index(prefix, "://"); i >= 0 && strings.Contains(prefix[i+3:], "/") { // the path
		return url.PathEscape(v)
	}
	return strings.ReplaceAll(url.PathEscape(v), "@", "%40") // scheme or host: never a user name
}
