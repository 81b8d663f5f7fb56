package shadow

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/checkpoint"
	"harrier.dev/harrier/wire"
)

// The job's checkpoint images go home: the starter streams each one to the
// shadow, which keeps the latest good one in the agent's image store
// (owner-only, replaced atomically, see checkpoint.Store) and serves it to
// the starter that restores the job, unless a file the job held open for
// reading has changed size since: then the starter follows the job's
// OnRestoreFailure (start afresh, or hold) without the image.

func (s *Shadow) imageStore() (*checkpoint.Store, error) {
	if s.spec.CheckpointDir == "" {
		return nil, status.Error(codes.FailedPrecondition, "this job keeps no checkpoints")
	}
	return checkpoint.OpenStore(s.spec.CheckpointDir)
}

// chunkReader turns the upload stream into the packed image's bytes.
// Every chunk after the first is received into msg's one buffer (see
// wire's codec), which is reused once its bytes are read.
type chunkReader struct {
	stream wire.Shadow_PutCheckpointServer
	msg    wire.CheckpointChunk
	buf    []byte
	n      int64
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if cap(r.msg.Data) == 0 {
			r.msg.Data = make([]byte, 0, chunkSize)
		}
		if err := r.stream.RecvMsg(&r.msg); err != nil {
			return 0, err // io.EOF at the end of the upload
		}
		r.buf = r.msg.Data
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	r.n += int64(n)
	return n, nil
}

// chunkSize is the size of the chunks the shadow serves an image in and
// of the buffer it receives an upload in (the starter's chunks are as
// large).
const chunkSize = 1 << 20

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
	began, cpu := time.Now(), processCPU()
	m, err := store.Put(s.spec.CheckpointKey, r)
	if err != nil {
		s.logger.Warn("checkpoint upload refused; the previous image stays", "err", err)
		if errors.Is(err, checkpoint.ErrBadImage) {
			return status.Error(codes.DataLoss, err.Error())
		}
		return status.Error(codes.Internal, err.Error())
	}
	s.logger.Info("checkpoint stored", "image_bytes", m.Size(), "stored_bytes", r.n,
		"took", time.Since(began), "cpu", processCPU()-cpu)
	info := first.GetInfo()
	ev := Event{Type: EventCheckpointed, ImageBytes: m.Size(), StoredBytes: r.n}
	if info != nil {
		ev.FrozenSeconds, ev.DumpSeconds, ev.Vacate = info.FrozenSeconds, info.DumpSeconds, info.Vacate
	} else {
		info = &wire.CheckpointInfo{}
	}
	if err := s.markOutput(store, info); err != nil {
		s.logger.Warn("keep where the job's output ended at its checkpoint", "err", err)
	}
	s.events(ev)
	return stream.SendAndClose(&wire.PutCheckpointReply{StoredBytes: r.n})
}

func (v *service) GetCheckpoint(req *wire.GetCheckpointRequest, stream wire.Shadow_GetCheckpointServer) error {
	s := v.s
	if !s.checkSecret(req.Secret) {
		return status.Error(codes.PermissionDenied, errBadSecret.Error())
	}
	began, cpu := time.Now(), processCPU()
	store, err := s.imageStore()
	if err != nil {
		return err
	}
	// CRIU would refuse the restore anyway; this says why, before the
	// image travels.
	if err := s.checkInputs(store); err != nil {
		if errors.Is(err, checkpoint.ErrInputChanged) {
			s.logger.Warn("not restoring the job", "err", err)
			return status.Error(codes.FailedPrecondition, err.Error())
		}
		s.logger.Warn("cannot check the job's inputs before its restore", "err", err)
	}
	f, err := store.Open(s.spec.CheckpointKey)
	if errors.Is(err, os.ErrNotExist) {
		return status.Error(codes.NotFound, "the job has no checkpoint")
	}
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	defer f.Close()
	var sent int64
	for {
		// Each chunk is read into a buffer the server's codec lends and
		// sent from it without a copy (see wire's Buffers): Send hands
		// the buffer to the codec, which takes it back once gRPC is
		// done with it, sent or not. A buffer never sent goes back here.
		buf := s.link.buffers.Get(chunkSize)
		n, err := f.Read(buf)
		if n > 0 {
			if serr := stream.Send(&wire.CheckpointChunk{Data: buf[:n]}); serr != nil {
				return serr
			}
			sent += int64(n)
		} else {
			s.link.buffers.Put(buf)
		}
		if errors.Is(err, io.EOF) {
			s.logger.Info("checkpoint served", "stored_bytes", sent, "took", time.Since(began), "cpu", processCPU()-cpu)
			return nil
		}
		if err != nil {
			return status.Error(codes.Internal, fmt.Sprintf("read image: %v", err))
		}
	}
}

// checkInputs compares the submit-side files the checkpointed job held
// open for reading with the sizes CRIU recorded, which it insists on at
// restore (see checkpoint.CheckInputs): a changed input makes the error
// wrap checkpoint.ErrInputChanged. Only files the job reaches through
// the shadow as they are on the submit machine are checked; staged
// copies (compress_files, fetch_files) and the execute machine's own
// files are made anew where the job runs.
func (s *Shadow) checkInputs(store *checkpoint.Store) error {
	info, err := store.Info(s.spec.CheckpointKey)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, checkpoint.ErrNoInfo) {
		return nil
	}
	if err != nil {
		return err
	}
	m, err := NewMapping(s.job)
	if err != nil {
		return err
	}
	return checkpoint.CheckInputs(info.Inputs, func(name string) (string, bool) {
		p, err := m.Resolve(name)
		if err != nil || p.Base() != methodRemote || slices.Contains(p.Methods, methodCompress) || slices.Contains(p.Methods, methodFetch) {
			return "", false
		}
		return p.Path, true
	})
}

// processCPU is the CPU time this process has used so far. The shadow
// logs what storing and serving an image cost in it: on a loaded machine the
// transfer is bound by CPU, not by the network.
func processCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
