package jobqueue

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
)

// Frame layout: magic, payload length, CRC-32C of length and payload.
const (
	frameHeaderSize = 12
	maxFramePayload = 1 << 30
)

var (
	frameMagic = [4]byte{'H', 'J', 'Q', 1}
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

// errBadFrame marks a frame that is incomplete or fails its checks.
var errBadFrame = errors.New("bad frame")

// beginFrame appends a header with room for the length and checksum to buf;
// the caller appends the payload and then calls finishFrame(buf, start).
func beginFrame(buf []byte) (out []byte, start int) {
	start = len(buf)
	buf = append(buf, frameMagic[:]...)
	return append(buf, make([]byte, 8)...), start
}

// finishFrame fills in the header of the frame that begins at buf[start].
func finishFrame(buf []byte, start int) error {
	n := len(buf) - start - frameHeaderSize
	if n > maxFramePayload {
		return ErrTooLarge
	}
	binary.LittleEndian.PutUint32(buf[start+4:], uint32(n))
	crc := crc32.Update(0, castagnoli, buf[start+4:start+8])
	crc = crc32.Update(crc, castagnoli, buf[start+frameHeaderSize:])
	binary.LittleEndian.PutUint32(buf[start+8:], crc)
	return nil
}

// parseFrame checks the frame at the start of b and returns its payload
// and total size. It returns errBadFrame if b does not start with a whole,
// intact frame.
func parseFrame(b []byte) (payload []byte, size int, err error) {
	if len(b) < frameHeaderSize || !bytes.Equal(b[:4], frameMagic[:]) {
		return nil, 0, errBadFrame
	}
	n := binary.LittleEndian.Uint32(b[4:8])
	if n > maxFramePayload || uint64(len(b)-frameHeaderSize) < uint64(n) {
		return nil, 0, errBadFrame
	}
	end := frameHeaderSize + int(n)
	crc := crc32.Update(0, castagnoli, b[4:8])
	crc = crc32.Update(crc, castagnoli, b[frameHeaderSize:end])
	if crc != binary.LittleEndian.Uint32(b[8:12]) {
		return nil, 0, errBadFrame
	}
	return b[frameHeaderSize:end], end, nil
}

// validFrameAfter reports whether an intact frame starts anywhere in b.
// Recovery uses it to tell a torn tail (nothing valid follows the bad
// frame) from damage in the middle of the file.
func validFrameAfter(b []byte) bool {
	for {
		i := bytes.Index(b, frameMagic[:])
		if i < 0 {
			return false
		}
		if _, _, err := parseFrame(b[i:]); err == nil {
			return true
		}
		b = b[i+1:]
	}
}

// frameReader reads frames one by one from a file.
type frameReader struct {
	r     io.Reader
	off   int64 // offset of the next frame
	limit int64 // size of the input, so a damaged length allocates nothing
	hdr   [frameHeaderSize]byte
	buf   []byte
}

// next returns the next payload, valid until the following call, and its
// offset. At the clean end of the input it returns io.EOF; at an
// incomplete or damaged frame, errBadFrame.
func (fr *frameReader) next() (payload []byte, off int64, err error) {
	off = fr.off
	if _, err := io.ReadFull(fr.r, fr.hdr[:]); err != nil {
		if err == io.EOF {
			return nil, off, io.EOF
		}
		if err == io.ErrUnexpectedEOF {
			return nil, off, errBadFrame
		}
		return nil, off, err
	}
	n := binary.LittleEndian.Uint32(fr.hdr[4:8])
	if !bytes.Equal(fr.hdr[:4], frameMagic[:]) || n > maxFramePayload ||
		off+frameHeaderSize+int64(n) > fr.limit {
		return nil, off, errBadFrame
	}
	if cap(fr.buf) < frameHeaderSize+int(n) {
		fr.buf = make([]byte, frameHeaderSize+int(n))
	}
	b := fr.buf[:frameHeaderSize+int(n)]
	copy(b, fr.hdr[:])
	if _, err := io.ReadFull(fr.r, b[frameHeaderSize:]); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, off, errBadFrame
		}
		return nil, off, err
	}
	payload, size, err := parseFrame(b)
	if err != nil {
		return nil, off, err
	}
	fr.off += int64(size)
	return payload, off, nil
}
