package transfer

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	"google.golang.org/protobuf/encoding/protodelim"

	"harrier.dev/harrier/wire"
)

// An archive is a transfer stream kept in a file: its chunks one after
// the other, each preceded by its length (protodelim). It carries a tree
// with the stream's guarantees (names confined, links kept inside, every
// file checked with its SHA-256, modes and times kept), where the tree
// must travel inside something else: a job's scratch directory inside
// its checkpoint image.

// maxArchiveChunk bounds a chunk read from an archive: its data and
// the rest, small.
const maxArchiveChunk = ChunkSize + 64<<10

// Archive writes the whole tree beneath from to w, but for the
// top-level entries named in leaveOut, and returns how many files and
// bytes of data it holds.
func Archive(w io.Writer, from *os.Root, leaveOut ...string) (files int, n int64, err error) {
	bw := bufio.NewWriterSize(w, ChunkSize)
	s := &Sender{LeaveOut: leaveOut, Out: func(c *wire.TransferChunk) error {
		_, err := protodelim.MarshalTo(bw, c)
		return err
	}}
	if err := s.Send(from, ".", ""); err != nil {
		return 0, 0, err
	}
	if err := bw.Flush(); err != nil {
		return 0, 0, err
	}
	return s.Files, s.Bytes, nil
}

// Extract writes the tree archived in r beneath to, as a Receiver does
// with a stream, and returns how many files and bytes of data it wrote.
func Extract(r io.Reader, to *os.Root) (files int, n int64, err error) {
	br := bufio.NewReaderSize(r, ChunkSize)
	opts := protodelim.UnmarshalOptions{MaxSize: maxArchiveChunk}
	rc := &Receiver{To: to}
	err = rc.Receive(func(c *wire.TransferChunk) error {
		err := opts.UnmarshalFrom(br, c)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("archive: %w", err)
		}
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	return rc.Files, rc.Bytes, nil
}
