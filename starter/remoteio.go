package starter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
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
// directory, which is bound into the container too. Only the user the
// job runs as (job) and root may use it; the files of the job's owner on
// the submit side (owner, nil if the shadow did not say) show as job's.
func mountJobDir(ctx context.Context, conn grpc.ClientConnInterface, secret, scratch string, job iofs.IDs, owner *iofs.IDs, logger *slog.Logger) (*jobDir, error) {
	mnt := jobDirMountpoint(scratch)
	if err := os.Mkdir(filepath.Dir(mnt), 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("make iofs mount point: %w", err)
	}
	if err := os.Mkdir(mnt, 0o755); errors.Is(err, os.ErrExist) {
		// The slot's last job's: its mount is gone unless its unmount
		// failed, and then goes now, so that the job sees only its own.
		if err := unix.Unmount(mnt, unix.MNT_DETACH); err != nil && err != unix.EINVAL {
			return nil, fmt.Errorf("detach the slot's last job's directory from %s: %w", mnt, err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("make iofs mount point: %w", err)
	}
	srv, err := iofs.Mount(ctx, mnt, iofs.NewShadowClient(conn, secret, ioLease), iofs.Options{
		LocalDir: scratch, StageDir: scratch, Logger: logger, JobUID: job.UID, JobGID: job.GID, Owner: owner,
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
}

// jobDirMountpoint is where the jobs of the slot whose job has the
// scratch directory scratch (EXECUTE/scratch.SLOT.RANDOM) mount their
// directories: EXECUTE/iofs/scratch.SLOT.dir, one directory that the
// slot's jobs use in turn and its starter removes when its claim ends
// (the startd, when the starter died). It is kept between jobs because
// making and removing a directory each job cost more than the mount, on
// a file system where inodes are made and freed all day. Its parent,
// JobDirsDir, is root's alone: a job sees its directory through the bind
// in its container, and nobody else on the machine reaches the mount,
// not even for what the kernel still caches of it. The name keeps the
// prefix by which the startd finds a slot's mounts.
func jobDirMountpoint(scratch string) string {
	base := filepath.Base(scratch)
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		base = base[:i+1] + "dir"
	}
	return filepath.Join(JobDirsDir(filepath.Dir(scratch)), base)
}

// JobDirsDir is the directory of the jobs' iofs mount points in the
// execute directory.
func JobDirsDir(executeDir string) string { return filepath.Join(executeDir, "iofs") }
