package api

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestWriteIndentedIsIndent: writeIndented writes what json.Indent with
// the API's indent writes, whatever the chunk boundaries.
func TestWriteIndentedIsIndent(t *testing.T) {
	long := `"` + strings.Repeat(`a\"[{,:}]\\`, indentChunk/5) + `"`
	for _, src := range []string{`{}`, `[]`, `{"a":[]}`, `{"a":{},"b":[1,2,{}],"c":"x"}`, `[[],[[]],{"k":{"l":[true,null]}}]`,
		`{"s":"quote \" and \\ and [ { , : } ]","n":-1.5e3}`, `"plain"`, `3`, `[` + long + `,` + long + `,{"x":` + long + `}]`} {
		var want bytes.Buffer
		if err := json.Indent(&want, []byte(src), "", "  "); err != nil {
			t.Fatalf("%.40s: %v", src, err)
		}
		var got bytes.Buffer
		if _, err := writeIndented(&got, []byte(src), nil); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("%.60s:\ngot  %.300s\nwant %.300s", src, got.String(), want.String())
		}
	}
}
