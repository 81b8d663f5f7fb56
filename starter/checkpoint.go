package starter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"

	"harrier.dev/harrier/checkpoint"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

// errNoCheckpoint says the job cannot be checkpointed where it runs.
var errNoCheckpoint = errors.New("the job cannot be checkpointed here (not in a container)")

// checkpoints takes the job's checkpoints and sends them home: each image
// is made beside the job's scratch directory (outside its container),
// sealed, packed and streamed to the shadow, then removed here. The
// shadow stores it where the job's owner can change it: the seal, made
// with the pool's key, which no user holds, is how a restore tells an
// image one of the pool's starters made for this job from any other.
type checkpoints struct {
	client  wire.ShadowClient
	secret  string
	scratch string
	logger  *slog.Logger
	// seal seals the job's images and checks them before a restore; nil
	// when this machine cannot, and noSeal says why.
	seal   *checkpoint.Seal
	noSeal error
	// syncFiles, if set, brings the job's writes to the submit side: a
	// checkpoint counts only once the files it goes with are there.
	syncFiles func(context.Context) error
	n         atomic.Int64
}

// sealFor returns the seal of the job's images: the pool's key from the
// spec, bound to the job's GlobalJobId and Owner as the startd was told
// them with the claim. Without one, the job is neither checkpointed nor
// restored here, and the error says why.
func sealFor(spec *Spec) (*checkpoint.Seal, error) {
	if spec.CheckpointKeyFile == "" {
		return nil, errors.New("this machine has no checkpoint key")
	}
	key, err := checkpoint.LoadKey(spec.CheckpointKeyFile)
	if err != nil {
		return nil, err
	}
	ad, err := classad.Parse(spec.JobAd)
	if err != nil {
		return nil, fmt.Errorf("the job's ad: %w", err)
	}
	id, owner := stringAttr(ad, "GlobalJobId"), stringAttr(ad, "Owner")
	if id == "" || owner == "" {
		return nil, errors.New("the job has no GlobalJobId and Owner to bind its checkpoints to")
	}
	return key.For(id, owner), nil
}

// take checkpoints job; with vacate the job ends with the dump.
func (c *checkpoints) take(ctx context.Context, job Job, vacate bool) error {
	cp, ok := job.(Checkpointer)
	if !ok {
		return errNoCheckpoint
	}
	if c.seal == nil {
		return fmt.Errorf("cannot seal checkpoints: %w", c.noSeal)
	}
	dir := filepath.Join(filepath.Dir(c.scratch), "ckpt."+filepath.Base(c.scratch)+"."+strconv.FormatInt(c.n.Add(1), 10))
	defer os.RemoveAll(dir)
	defer os.RemoveAll(dir + ".work")
	stats, err := cp.Checkpoint(ctx, dir, !vacate)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	// Everything the job wrote before the dump froze it, and perhaps a
	// little after, which a job restored from it would write again.
	if c.syncFiles != nil {
		if err := c.syncFiles(ctx); err != nil {
			return fmt.Errorf("bring the job's writes to the submit side: %w", err)
		}
	}
	if err := c.upload(ctx, dir, stats, vacate); err != nil {
		return fmt.Errorf("send checkpoint to the shadow: %w", err)
	}
	c.logger.Info("checkpoint sent", "vacate", vacate, "frozen", stats.Frozen, "image_bytes", stats.ImageBytes,
		"pre_dumps", stats.PreDumps, "pre_dump_time", stats.PreDump)
	return nil
}

// upload packs the image in dir and streams it to the shadow.
func (c *checkpoints) upload(ctx context.Context, dir string, stats CheckpointStats, vacate bool) error {
	stream, err := c.client.PutCheckpoint(ctx)
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	go func() {
		_, err := checkpoint.Pack(pw, dir, c.seal)
		pw.CloseWithError(err)
	}()
	first := &wire.CheckpointChunk{Secret: c.secret, Info: &wire.CheckpointInfo{
		FrozenSeconds: stats.Frozen.Seconds(), DumpSeconds: stats.Dump.Seconds(),
		ImageBytes: stats.ImageBytes, Vacate: vacate}}
	buf := make([]byte, 1<<20)
	for {
		n, rerr := io.ReadFull(pr, buf)
		if n > 0 || first != nil {
			msg := first
			if msg == nil {
				msg = &wire.CheckpointChunk{}
			}
			first = nil
			msg.Data = buf[:n]
			if err := stream.Send(msg); err != nil {
				pr.CloseWithError(err)
				_, err = stream.CloseAndRecv()
				return err
			}
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			break
		}
		if rerr != nil {
			stream.CloseSend()
			return rerr
		}
	}
	_, err = stream.CloseAndRecv()
	return err
}

// fetch downloads the job's latest image into a new directory beside the
// scratch directory, checking its seal: an error wrapping
// checkpoint.ErrForged says the image is not one of this pool's starters
// made for this job.
func (c *checkpoints) fetch(ctx context.Context) (string, error) {
	if c.seal == nil {
		return "", fmt.Errorf("cannot check the seal of checkpoints: %w", c.noSeal)
	}
	stream, err := c.client.GetCheckpoint(ctx, &wire.GetCheckpointRequest{Secret: c.secret})
	if err != nil {
		return "", err
	}
	pr, pw := io.Pipe()
	go func() {
		for {
			chunk, err := stream.Recv()
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				pw.CloseWithError(err)
				return
			}
			if _, err := pw.Write(chunk.Data); err != nil {
				return
			}
		}
	}()
	dir := filepath.Join(filepath.Dir(c.scratch), "restore."+filepath.Base(c.scratch))
	if _, err := checkpoint.Unpack(pr, dir, c.seal); err != nil {
		pr.CloseWithError(err)
		return "", err
	}
	return dir, nil
}
