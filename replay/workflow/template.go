package workflow

import (
	"regexp"
	"strings"
)

// Templates are the texts filled at dispatch: a task's env values and an
// http task's url, header values, body and async status_url (a command
// holds placeholders only, and a url's values are escaped: command.go).
// They hold:
//
//	{{ params.NAME }}   a declared param of the run
//	{{ inputs.NAME }}   a declared input of the task
//	${env:NAME}         NAME from the daemon's environment
//	{{ "{{" }}          a literal "{{" (single quotes too)
//	$${                 a literal "${"
//
// and literal text around them. A template is scanned once, left to
// right, and what is filled in is never scanned again: a param whose value
// is "${env:TOKEN}" reaches the task as that text, not as the daemon's
// TOKEN.

// templateRe finds a template's next token: "$${", a ${...} reference
// (group 1: between the braces) or a {{ ... }} placeholder (group 2:
// between the braces, trimmed). At one position the alternatives are tried
// in this order, so "$${env:X}" is an escape followed by literal text.
var templateRe = regexp.MustCompile(`\$\$\{|\$\{([^}]*)\}|\{\{\s*([^}]*?)\s*\}\}`)

// tokenKind is the kind of one part of a template (see scanTemplate).
type tokenKind int

const (
	tokLiteral     tokenKind = iota // text as it is (an escape gives the text it stands for)
	tokPlaceholder                  // {{ REF }}: REF, trimmed
	tokEnvRef                       // ${...}: what is between the braces
)

// commandRe finds a command's next placeholder (group 1: between the
// braces, trimmed). In a command only {{ REF }} is a template: ${...} and
// $ are the shell's own.
var commandRe = regexp.MustCompile(`()\{\{\s*([^}]*?)\s*\}\}`)

// scanTemplate calls part for each part of template, left to right.
func scanTemplate(template string, part func(kind tokenKind, text string)) {
	scanWith(templateRe, template, part)
}

// scanCommand calls part for each part of a command argument: literal
// text and {{ REF }} placeholders (with the {{ "{{" }} escape).
func scanCommand(arg string, part func(kind tokenKind, text string)) {
	scanWith(commandRe, arg, part)
}

// scanWith scans with re, whose group 1 is a ${...} reference (empty in
// commandRe: never matched alone) and group 2 a placeholder.
func scanWith(re *regexp.Regexp, template string, part func(kind tokenKind, text string)) {
	at := 0
	for _, m := range re.FindAllStringSubmatchIndex(template, -1) {
		if m[0] > at {
			part(tokLiteral, template[at:m[0]])
		}
		at = m[1]
		switch {
		case m[2] >= 0 && m[4] < 0:
			part(tokEnvRef, template[m[2]:m[3]])
		case m[4] >= 0:
			ref := template[m[4]:m[5]]
			if ref == `"{{"` || ref == `'{{'` {
				part(tokLiteral, "{{")
			} else {
				part(tokPlaceholder, ref)
			}
		default: // $${
			part(tokLiteral, "${")
		}
	}
	if at < len(template) {
		part(tokLiteral, template[at:])
	}
}

// Expand fills template in one pass: placeholder(REF) for each {{ REF }},
// env(NAME) for each ${env:NAME}, the escapes' literal texts, the rest as
// it is. The parser has checked the template's references; this is how the
// engine fills them at dispatch.
func Expand(template string, placeholder, env func(string) string) string {
	return expand(template, placeholder, env, nil)
}

// expand is Expand, each placeholder's value passed through place(what
// precedes it once filled, value) when place is set.
func expand(template string, placeholder, env func(string) string, place func(prefix, v string) string) string {
	if !strings.ContainsAny(template, "{$") {
		return template
	}
	var b strings.Builder
	scanTemplate(template, func(kind tokenKind, text string) {
		switch kind {
		case tokLiteral:
			b.WriteString(text)
		case tokPlaceholder:
			v := placeholder(text)
			if place != nil {
				v = place(b.String(), v)
			}
			b.WriteString(v)
		case tokEnvRef:
			name, _ := strings.CutPrefix(text, "env:")
			b.WriteString(env(name))
		}
	})
	return b.String()
}
