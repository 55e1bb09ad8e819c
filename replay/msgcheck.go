package replay

import (
	"encoding/binary"
	"fmt"
)

// maxMsgpackDepth bounds the nesting checkMsgpack accepts; orkwal's records
// nest a few levels (a task output's JSON is stored as bytes, not nested).
const maxMsgpackDepth = 64

// checkMsgpack walks one msgpack value and the bytes after it, checking
// that every length and count fits in the bytes that remain, before the
// decoder sees them: msgpack's decoder allocates a string or binary value's
// full length as soon as it reads its prefix, so a damaged prefix of a few
// bytes could ask for gigabytes. It does not check types; the decoder does.
func checkMsgpack(b []byte) error {
	rest, err := skipMsgpack(b, 0)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return fmt.Errorf("msgpack: %d bytes after the value", len(rest))
	}
	return nil
}

// skipMsgpack returns what follows the value at the start of b.
func skipMsgpack(b []byte, depth int) ([]byte, error) {
	if depth > maxMsgpackDepth {
		return nil, fmt.Errorf("msgpack: nested more than %d levels", maxMsgpackDepth)
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("msgpack: value cut short")
	}
	c, b := b[0], b[1:]
	var n uint64 // payload bytes, or elements for arrays and maps
	elems := 0   // 1: array, 2: map
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		return b, nil
	case c >= 0x80 && c <= 0x8f:
		n, elems = uint64(c&0x0f), 2
	case c >= 0x90 && c <= 0x9f:
		n, elems = uint64(c&0x0f), 1
	case c >= 0xa0 && c <= 0xbf:
		n = uint64(c & 0x1f)
	default:
		var size int // bytes of the length that follows, or of the fixed payload
		fixed := false
		switch c {
		case 0xc4, 0xd9: // bin8, str8
			size = 1
		case 0xc5, 0xda: // bin16, str16
			size = 2
		case 0xc6, 0xdb: // bin32, str32
			size = 4
		case 0xc7, 0xc8, 0xc9: // ext8/16/32: length, then a type byte
			size = 1 << (c - 0xc7)
		case 0xca, 0xcb: // float32, float64
			size, fixed = 4<<(c-0xca), true
		case 0xcc, 0xcd, 0xce, 0xcf, 0xd0, 0xd1, 0xd2, 0xd3: // uint8..64, int8..64
			size, fixed = 1<<((c-0xcc)%4), true
		case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext1..16: a type byte, then data
			size, fixed = 1+1<<(c-0xd4), true
		case 0xdc, 0xde: // array16, map16
			size, elems = 2, int(c-0xdc)/2+1
		case 0xdd, 0xdf: // array32, map32
			size, elems = 4, int(c-0xdd)/2+1
		default:
			return nil, fmt.Errorf("msgpack: unknown type byte 0x%02x", c)
		}
		if len(b) < size {
			return nil, fmt.Errorf("msgpack: value cut short")
		}
		if fixed {
			return b[size:], nil
		}
		switch size {
		case 1:
			n = uint64(b[0])
		case 2:
			n = uint64(binary.BigEndian.Uint16(b))
		case 4:
			n = uint64(binary.BigEndian.Uint32(b))
		}
		b = b[size:]
		if c >= 0xc7 && c <= 0xc9 {
			n++ // the ext type byte
		}
	}
	if elems == 0 {
		if n > uint64(len(b)) {
			return nil, fmt.Errorf("msgpack: a value of %d bytes with %d left", n, len(b))
		}
		return b[n:], nil
	}
	// Every element takes at least one byte.
	if n*uint64(elems) > uint64(len(b)) {
		return nil, fmt.Errorf("msgpack: %d elements with %d bytes left", n*uint64(elems), len(b))
	}
	var err error
	for i := uint64(0); i < n*uint64(elems); i++ {
		if b, err = skipMsgpack(b, depth+1); err != nil {
			return nil, err
		}
	}
	return b, nil
}
