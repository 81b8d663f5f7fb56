package starter

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"

	"harrier.dev/harrier/iofs"
)

// jobDir is the job's submit-side working directory, mounted with iofs on
// the execute machine. The mount lives in the starter, outside the job's
// container, and is bound into it at the directory's own path: the job
// finds its files under the names it was given at submit time, and a
// checkpoint of the container sees the mount as external.
type jobDir struct {
	mountpoint string
	server     *iofs.Server
}

// ioLease is how long the job's I/O waits for an unreachable shadow before
// it fails.
const ioLease = 2 * time.Minute

// mountJobDir mounts iofs for the job beside (not inside) its scratch
// directory, which is bound into the container too.
func mountJobDir(ctx context.Context, conn grpc.ClientConnInterface, secret, scratch string, logger *slog.Logger) (*jobDir, error) {
	mnt := filepath.Join(filepath.Dir(scratch), "iofs."+filepath.Base(scratch))
	if err := os.Mkdir(mnt, 0o755); err != nil && !os.IsExist(err) {
		return nil, fmt.Errorf("make iofs mount point: %w", err)
	}
	srv, err := iofs.Mount(ctx, mnt, iofs.NewShadowClient(conn, secret, ioLease), iofs.Options{
		LocalDir: scratch, StageDir: scratch, Logger: logger,
	})
	if err != nil {
		os.Remove(mnt)
		return nil, err
	}
	return &jobDir{mountpoint: mnt, server: srv}, nil
}

// sync brings what the job wrote to the submit side: the kernel caches
// the job's writes (see iofs.Server.Sync).
func (d *jobDir) sync(ctx context.Context) error {
	return d.server.Sync(ctx)
}

// unmount takes the mount down once the job is gone, after its last
// writes have reached the submit side: before the shadow hears that the
// job ended.
func (d *jobDir) unmount(ctx context.Context, logger *slog.Logger) {
	if err := d.sync(ctx); err != nil {
		logger.Error("the job's last writes did not reach the submit side", "err", err)
	}
	if err := d.server.Unmount(); err != nil {
		logger.Warn("unmount the job's directory", "err", err)
		return
	}
	d.server.Wait()
	os.Remove(d.mountpoint)
}
