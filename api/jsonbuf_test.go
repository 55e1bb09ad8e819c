package api

import (
	"runtime"
	"testing"
	"weak"
)

// TestBigJSONBufferIsLetGoByACollection: a big answer's buffer is reused
// from one request to the next, but a collection frees it when no request
// holds it (it is not live heap), and the next one's compact bytes are
// made the size of the last answer's at once; a small buffer stays kept.
func TestBigJSONBufferIsLetGoByACollection(t *testing.T) {
	jsonBufs.Lock()
	jsonBufs.free, jsonBufs.lastCompact = nil, 0
	jsonBufs.Unlock()
	const size = 1 << 20
	big := getJSONBuf()
	big.compact = append(big.compact, make([]byte, size)...)
	putJSONBuf(big)
	if b := getJSONBuf(); b != big {
		t.Fatal("the big buffer was not reused before a collection")
	}
	small := getJSONBuf()
	if small == big {
		t.Fatal("one buffer handed out twice")
	}
	small.out.WriteString("{}\n") // an answer of writeJSON
	putJSONBuf(small)
	putJSONBuf(big)
	bigRef := weak.Make(big)
	smallRef := weak.Make(small)
	big, small = nil, nil
	runtime.GC()
	if bigRef.Value() != nil {
		t.Error("a collection left the big buffer alive: it counts in the live heap")
	}
	if smallRef.Value() == nil {
		t.Error("the small buffer was not kept")
	}
	a, b := getJSONBuf(), getJSONBuf() // the small one, then a new one
	b.sizeCompact()
	if a != smallRef.Value() || cap(b.compact) < size {
		t.Errorf("after a collection: the small buffer kept %v, a new buffer's compact bytes %d, want at least the last answer's %d",
			a == smallRef.Value(), cap(b.compact), size)
	}
}
