package wal

import (
	"bytes"
	"fmt"
	"testing"
)

// BenchmarkAppendFrame: the CPU cost of encoding one entry as a commit
// does (length prefix, frame, header checksum, checksum), for a frame of
// one record and of 100 (group commit), 128 bytes each. The header
// checksum's cost is in the first: a hash of a few bytes per frame.
func BenchmarkAppendFrame(b *testing.B) {
	for _, n := range []int{1, 100} {
		recs := make([][]byte, n)
		for i := range recs {
			recs[i] = bytes.Repeat([]byte{byte(i)}, 128)
		}
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			var buf []byte
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				buf = appendEntry(buf[:0], uint64(i+1), recs)
			}
			b.SetBytes(int64(len(buf)))
		})
	}
}
