package workflow

import (
	"regexp"
	"strconv"
	"strings"
)

// The YAML library's syntax errors say "yaml: line N: <what>", with a line
// that is often where the enclosing block starts rather than the culprit's,
// and no column. explainSyntax finds the culprit for the common mistakes
// (a tab, a key out of line) and says what YAML expected there.

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// explainSyntax sets e's line, column and message from the YAML error in
// e.Msg and the document's text.
func explainSyntax(e *Error, data []byte) {
	m := yamlLineRE.FindStringSubmatch(e.Msg)
	if m == nil {
		return
	}
	e.Line, _ = strconv.Atoi(m[1])
	e.Msg = "invalid YAML: " + m[2]
	lines := strings.Split(string(data), "\n")
	if line, col, ok := findTab(lines); ok {
		e.Line, e.Col = line, col
		e.Msg = "invalid YAML: a tab indents this line: YAML indents with spaces only"
		return
	}
	switch {
	case strings.HasPrefix(m[2], "did not find expected key"),
		strings.HasPrefix(m[2], "did not find expected <document start>"):
		if line, col, ok := findMisaligned(lines); ok {
			e.Line, e.Col = line, col
			e.Msg = "invalid YAML: wrong indentation: this line is not aligned with the keys above it (expected a key at the column of its siblings, or a value indented under its key)"
		}
	case strings.HasPrefix(m[2], "mapping values are not allowed in this context"):
		if e.Line > 0 && e.Line <= len(lines) {
			l := lines[e.Line-1]
			e.Col = len(l) - len(strings.TrimLeft(l, " ")) + 1
		}
		e.Msg = "invalid YAML: unexpected 'key:' here: this line is indented deeper than a key of the mapping above, or a value holds ': ' (quote the value)"
	case strings.HasPrefix(m[2], "found character that cannot start any token"):
		e.Msg += " (a value starting with @, ` or % must be quoted)"
	}
}

// findTab finds the first line indented with a tab.
func findTab(lines []string) (line, col int, ok bool) {
	for i, l := range lines {
		indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if j := strings.IndexByte(indent, '\t'); j >= 0 {
			return i + 1, j + 1, true
		}
	}
	return 0, 0, false
}

// findMisaligned finds the first line of block YAML whose indentation
// matches none of the blocks open above it: deeper than its sibling keys
// but not under a key that opens a block, or back out to a column no
// block started at. Lines inside flow collections and block scalars are
// not looked at (a rough test: after a line ending in | or >, lines
// indented deeper are skipped).
func findMisaligned(lines []string) (line, col int, ok bool) {
	stack := []int{0} // the indentations of the open blocks
	opens := false    // the previous line was a key with no value: a block may start
	scalar := -1      // the indentation of a block scalar's key, -1 outside one
	for i, l := range lines {
		text := strings.TrimLeft(l, " ")
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		indent := len(l) - len(text)
		if scalar >= 0 && indent > scalar {
			continue
		}
		scalar = -1
		top := stack[len(stack)-1]
		switch {
		case indent > top && opens:
			stack = append(stack, indent)
		case indent > top:
			return i + 1, indent + 1, true
		case indent < top:
			for len(stack) > 1 && stack[len(stack)-1] > indent {
				stack = stack[:len(stack)-1]
			}
			if stack[len(stack)-1] != indent {
				return i + 1, indent + 1, true
			}
		}
		trimmed := strings.TrimRight(text, " ")
		opens = strings.HasSuffix(trimmed, ":") || trimmed == "-"
		if strings.HasSuffix(trimmed, "|") || strings.HasSuffix(trimmed, ">") || strings.HasSuffix(trimmed, "|-") || strings.HasSuffix(trimmed, ">-") {
			scalar = indent
		}
		if strings.HasPrefix(text, "- ") && !opens { // a list item's mapping continues two columns in
			stack = append(stack, indent+2)
		}
	}
	return 0, 0, false
}
