package shadow

import (
	"errors"
	"fmt"
	"io"
	"os"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/checkpoint"
	"harrier.dev/harrier/wire"
)

// The job's checkpoint images go home: the starter streams each one to the
// shadow, which keeps the latest good one in the agent's image store
// (owner-only, replaced atomically, see checkpoint.Store) and serves it to
// the starter that restores the job.

func (s *Shadow) imageStore() (*checkpoint.Store, error) {
	if s.spec.CheckpointDir == "" {
		return nil, status.Error(codes.FailedPrecondition, "this job keeps no checkpoints")
	}
	return checkpoint.OpenStore(s.spec.CheckpointDir)
}

// chunkReader turns the upload stream into the packed image's bytes.
type chunkReader struct {
	stream wire.Shadow_PutCheckpointServer
	buf    []byte
	n      int64
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		c, err := r.stream.Recv()
		if err != nil {
			return 0, err // io.EOF at the end of the upload
		}
		r.buf = c.Data
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	r.n += int64(n)
	return n, nil
}

func (v *service) PutCheckpoint(stream wire.Shadow_PutCheckpointServer) error {
	s := v.s
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	if !s.checkSecret(first.Secret) {
		return status.Error(codes.PermissionDenied, errBadSecret.Error())
	}
	store, err := s.imageStore()
	if err != nil {
		return err
	}
	r := &chunkReader{stream: stream, buf: first.Data}
	m, err := store.Put(s.spec.CheckpointKey, r)
	if err != nil {
		s.logger.Warn("checkpoint upload refused; the previous image stays", "err", err)
		if errors.Is(err, checkpoint.ErrBadImage) {
			return status.Error(codes.DataLoss, err.Error())
		}
		return status.Error(codes.Internal, err.Error())
	}
	info := first.GetInfo()
	ev := Event{Type: EventCheckpointed, ImageBytes: m.Size(), StoredBytes: r.n}
	if info != nil {
		ev.FrozenSeconds, ev.DumpSeconds, ev.Vacate = info.FrozenSeconds, info.DumpSeconds, info.Vacate
	}
	s.events(ev)
	return stream.SendAndClose(&wire.PutCheckpointReply{StoredBytes: r.n})
}

func (v *service) GetCheckpoint(req *wire.GetCheckpointRequest, stream wire.Shadow_GetCheckpointServer) error {
	s := v.s
	if !s.checkSecret(req.Secret) {
		return status.Error(codes.PermissionDenied, errBadSecret.Error())
	}
	store, err := s.imageStore()
	if err != nil {
		return err
	}
	f, err := store.Open(s.spec.CheckpointKey)
	if errors.Is(err, os.ErrNotExist) {
		return status.Error(codes.NotFound, "the job has no checkpoint")
	}
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			if serr := stream.Send(&wire.CheckpointChunk{Data: buf[:n]}); serr != nil {
				return serr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return status.Error(codes.Internal, fmt.Sprintf("read image: %v", err))
		}
	}
}
