package workflow

import (
	"fmt"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// YAML core tags, as returned by yaml.Node.ShortTag.
const (
	tagStr       = "!!str"
	tagInt       = "!!int"
	tagFloat     = "!!float"
	tagBool      = "!!bool"
	tagNull      = "!!null"
	tagTimestamp = "!!timestamp"
	tagBinary    = "!!binary"
	tagMerge     = "!!merge"
)

// maxAliasChain bounds alias resolution; real documents never chain aliases
// (an alias always points at an anchored, non-alias node).
const maxAliasChain = 64

// resolve follows aliases to the node they stand for. It returns nil, which
// callers treat as null, for a broken chain.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode; i++ {
		if i == maxAliasChain {
			return nil
		}
		n = n.Alias
	}
	return n
}

// isNull reports whether n is absent or a YAML null (`key:`, `~`, `null`).
func isNull(n *yaml.Node) bool {
	return n == nil || n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.ShortTag() == tagNull)
}

// isText reports whether n is a scalar whose YAML text can stand for a string
// value: a string, number, boolean or timestamp (not null, binary or a custom
// tag).
func isText(n *yaml.Node) bool {
	if n == nil || n.Kind != yaml.ScalarNode {
		return false
	}
	switch n.ShortTag() {
	case tagStr, tagInt, tagFloat, tagBool, tagTimestamp:
		return true
	}
	return false
}

// describe names the type of n for "expected X, got Y" messages.
func describe(n *yaml.Node) string {
	switch {
	case isNull(n):
		return "null"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind != yaml.ScalarNode:
		return "a YAML document"
	}
	switch tag := n.ShortTag(); tag {
	case tagStr:
		return "a string"
	case tagInt, tagFloat:
		return "a number"
	case tagBool:
		return "a boolean"
	case tagTimestamp:
		return "a timestamp"
	case tagBinary:
		return "binary data"
	default:
		return "a value tagged " + tag
	}
}

// lineOf is the 1-based line of n, 0 when unknown.
func lineOf(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	return n.Line
}

// columnOf is the 1-based column of n, 0 when unknown.
func columnOf(n *yaml.Node) int {
	if n == nil || n.Line == 0 {
		return 0
	}
	return n.Column
}

// entry is one key/value pair of a YAML mapping.
type entry struct {
	key  string
	path string     // key path of the value, e.g. "tasks.load.env"
	keyN *yaml.Node // the key, for its line
	val  *yaml.Node // the value, aliases resolved; may be null
}

// joinPath appends a mapping key to a key path. Keys outside the name charset
// are quoted so that the path stays readable.
func joinPath(path, key string) string {
	if !isPlainKey(key) {
		key = strconv.Quote(key)
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// indexPath appends a list index to a key path.
func indexPath(path string, i int) string {
	return fmt.Sprintf("%s[%d]", path, i)
}

func isPlainKey(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i]) {
			return false
		}
	}
	return true
}
