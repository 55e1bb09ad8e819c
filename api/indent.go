package api

import "io"

// indentChunk is how many bytes writeIndented gathers before a write.
const indentChunk = 32 << 10

// writeIndented writes src, compact JSON as json.Marshal writes it, to w
// indented as json.Indent(dst, src, "", "  ") indents it, a chunk at a
// time through buf (returned for reuse): a big answer needs no second
// copy of itself. Empty objects and arrays stay {} and [], as there.
func writeIndented(w io.Writer, src, buf []byte) ([]byte, error) {
	var (
		depth             int
		inString, escaped bool
		needIndent        bool // after { or [: indent unless it closes at once
		out               = buf[:0]
	)
	for _, c := range src {
		if len(out) >= indentChunk {
			if _, err := w.Write(out); err != nil {
				return out[:0], err
			}
			out = out[:0]
		}
		if inString {
			out = append(out, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		if needIndent && c != '}' && c != ']' {
			needIndent = false
			depth++
			out = appendNewline(out, depth)
		}
		switch c {
		case '"':
			inString = true
			out = append(out, c)
		case '{', '[':
			needIndent = true
			out = append(out, c)
		case ',':
			out = appendNewline(append(out, c), depth)
		case ':':
			out = append(out, c, ' ')
		case '}', ']':
			if needIndent {
				needIndent = false
			} else {
				depth--
				out = appendNewline(out, depth)
			}
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
	_, err := w.Write(out)
	return out[:0], err
}

func appendNewline(out []byte, depth int) []byte {
	out = append(out, '\n')
	for i := 0; i < depth; i++ {
		out = append(out, ' ', ' ')
	}
	return out
}
