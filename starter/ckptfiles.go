package starter

import (
	"context"
	"fmt"
	"log/slog"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/wire"
)

// checkpointFiles are the files of a job that checkpoints itself
// (checkpoint_exit_code), kept by its shadow (see shadow's
// SaveCheckpointFiles). They are the job's only where it works in its
// submit-side directory, through iofs: the shadow copies them from there
// and back.
type checkpointFiles struct {
	client wire.ShadowClient
	secret string
	logger *slog.Logger
	// sync brings the job's writes to the submit side: the files saved
	// are those the job had written when it exited.
	sync func(context.Context) error
}

// save has the shadow keep the job's checkpoint files as they are now.
func (f *checkpointFiles) save(ctx context.Context) error {
	if err := f.sync(ctx); err != nil {
		return fmt.Errorf("bring the job's writes to the submit side: %w", err)
	}
	r, err := f.client.SaveCheckpointFiles(ctx, &wire.CheckpointFilesRequest{Secret: f.secret})
	if err != nil {
		return fmt.Errorf("save checkpoint files: %w", err)
	}
	f.logger.Info("checkpoint files saved", "files", r.Files, "bytes", r.Bytes)
	return nil
}

// restoreThen returns start preceded by the restore of the job's last
// saved checkpoint files into its directory. A job whose files cannot be
// restored does not start: started afresh, it would lose its work.
func (f *checkpointFiles) restoreThen(start func(context.Context, *Task) (Job, error)) func(context.Context, *Task) (Job, error) {
	return func(ctx context.Context, t *Task) (Job, error) {
		r, err := f.client.RestoreCheckpointFiles(ctx, &wire.CheckpointFilesRequest{Secret: f.secret})
		switch {
		case status.Code(err) == codes.NotFound:
			f.logger.Warn("the job has no checkpoint files to restore; starting it afresh", "err", err)
		case err != nil:
			//lint:ignore ST1005 a hold reason, written as HTCondor writes it
			return nil, fmt.Errorf("Cannot restore the job's checkpoint files: %v", err)
		default:
			f.logger.Info("checkpoint files restored", "files", r.Files, "bytes", r.Bytes)
		}
		return start(ctx, t)
	}
}
