package executors

import (
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkRingWrite measures one write to a capped log's ring (the head
// already full): the bytes and the header that describes them, through
// the page cache (nothing is fsynced).
func BenchmarkRingWrite(b *testing.B) {
	for _, size := range []int{512, 4 << 10, 64 << 10} {
		b.Run(strconv.Itoa(size), func(b *testing.B) {
			c, err := newCappedLog(filepath.Join(b.TempDir(), "1.log"), 2<<20)
			if err != nil {
				b.Fatal(err)
			}
			c.Write(make([]byte, 1<<20)) // the head
			c.created()
			p := pattern(1, int64(size))
			b.SetBytes(int64(size))
			b.ResetTimer()
			for range b.N {
				c.Write(p)
			}
			b.StopTimer()
			if c.err != nil {
				b.Fatal(c.err)
			}
			if err := c.finish(); err != nil {
				b.Fatal(err)
			}
		})
	}
}
