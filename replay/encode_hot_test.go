package replay

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// The hot records' direct encoding is byte for byte msgpack's, over the
// edges of every size class of their fields and random values.
func TestHotEncodingIsMsgpack(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 0))
	ints := []int64{0, 1, -1, 31, -32, -33, 127, 128, -128, -129, 255, 256, 32767, 32768, -32768, -32769, 65535, 65536,
		math.MaxInt32, math.MaxInt32 + 1, math.MinInt32, math.MinInt32 - 1, math.MaxUint32, math.MaxUint32 + 1, math.MaxInt64, math.MinInt64}
	lens := []int{0, 1, 31, 32, 255, 256, 65535, 65536}
	pickInt := func() int64 {
		if rng.IntN(2) == 0 {
			return ints[rng.IntN(len(ints))]
		}
		return int64(rng.Uint64()) >> rng.IntN(64)
	}
	pickStr := func() string {
		return strings.Repeat("é", lens[rng.IntN(len(lens))]/2) + strings.Repeat("x", rng.IntN(3))
	}
	pickBytes := func() []byte {
		if rng.IntN(4) == 0 {
			return nil
		}
		return bytes.Repeat([]byte("7"), lens[rng.IntN(len(lens))])
	}
	pickFloat := func() float64 {
		return []float64{0, math.Copysign(0, -1), 0.25, rng.Float64(), -1e300}[rng.IntN(5)]
	}
	for i := 0; i < 3000; i++ {
		ref := TaskRef{Run: pickStr(), Task: int(pickInt())}
		recs := []Record{
			&TaskDispatched{TaskRef: ref, Attempt: int(pickInt()), At: pickInt()},
			&TaskStarted{TaskRef: ref, Attempt: int(pickInt()), PID: int(pickInt()), StartTime: uint64(pickInt()), At: pickInt()},
			&TaskFinished{TaskRef: ref, Attempt: int(pickInt()), OK: rng.IntN(2) == 0, ExitCode: int(pickInt()), Error: pickStr(),
				Output: pickBytes(), Jitter: pickFloat(), At: pickInt()},
		}
		for _, r := range recs {
			got, err := Encode(r)
			if err != nil {
				t.Fatal(err)
			}
			want, err := encodeReflect(r)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("seed %d: %s %+v:\n got  %x\n want %x", seed, r.Kind(), r, got[:min(len(got), 80)], want[:min(len(want), 80)])
			}
			if _, err := Decode(got); err != nil {
				t.Fatalf("seed %d: decode %s: %v", seed, r.Kind(), err)
			}
		}
	}
}

func BenchmarkEncodeHot(b *testing.B) {
	recs := []Record{
		&TaskDispatched{TaskRef: TaskRef{Run: "01a21048-3080-7a82-862e-5c3cc9073931", Task: 3}, Attempt: 1, At: 1 << 60},
		&TaskStarted{TaskRef: TaskRef{Run: "01a21048-3080-7a82-862e-5c3cc9073931", Task: 3}, Attempt: 1, PID: 12345, StartTime: 99999, At: 1 << 60},
		&TaskFinished{TaskRef: TaskRef{Run: "01a21048-3080-7a82-862e-5c3cc9073931", Task: 3}, Attempt: 1, OK: true, At: 1 << 60},
	}
	for _, enc := range []struct {
		name string
		f    func(Record) ([]byte, error)
	}{{"direct", Encode}, {"msgpack", encodeReflect}} {
		b.Run(enc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				for _, r := range recs {
					enc.f(r)
				}
			}
		})
	}
}
