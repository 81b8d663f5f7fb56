package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
)

// ErrNotFUSE reports a bind-mount source that should be a FUSE mount
// and is not: CRIU would restore the job onto a bare directory.
var ErrNotFUSE = errors.New("not a FUSE mount")

// RestoreOptions say how to bring a dumped container back.
type RestoreOptions struct {
	// Root and ID are the libcontainer state root and the new
	// container's ID.
	Root, ID string
	// Config is the container's configuration as a fresh start of the
	// job would have it on this machine, never one that came with the
	// image: the image brings the job's processes, and nothing else of
	// it is trusted. Its bind mounts must sit where the dumped job's did
	// (CRIU binds each one's source, here, at the same place); their
	// sources may differ.
	Config *configs.Config
	// Process is the job's first process as a fresh start would run it
	// (its user and groups bound what a restored process may have, see
	// ErrPrivilege), and receives the restored job's standard I/O (give
	// it pipes or writers, as when the job was started); Init must be
	// true.
	Process *libcontainer.Process
	// ImageDir holds the image; WorkDir (default ImageDir with
	// ".restore" appended) receives CRIU's log and statistics.
	ImageDir, WorkDir string
	// Input is the job's input file, opened afresh, when the dump
	// recorded one (Result.Input): it becomes Process.Stdin, and the
	// restored job reads on in it from where it was. Config must carry
	// ConfigFileLabel.
	Input *os.File
	// FUSE lists bind-mount sources in Config that must be FUSE mounts,
	// already served; Restore checks them before starting CRIU.
	FUSE []string
	// Timeout bounds the restore (default DefaultTimeout); Grace is as
	// in DumpOptions.
	Timeout, Grace time.Duration
	Logger         *slog.Logger // default slog.Default()
}

// RestoreResult is what a restore reports.
type RestoreResult struct {
	Stats RestoreStats
	// Wall is the time Restore took, container creation included.
	Wall time.Duration
}

// Restore creates container opts.ID from opts.Config and restores the
// image in opts.ImageDir into it. The image must have been unpacked with
// its seal checked (Unpack); before CRIU reads it, Restore checks that
// none of its processes would get more privilege than opts.Config and
// opts.Process give a fresh start (an error wrapping ErrPrivilege says
// one would). The returned container is freshly
// loaded from its state: the one libcontainer restored into cannot be
// signalled (runc 1.5.2 sets its start time only on start or load). The
// restored job is a child of this process: opts.Process.Wait waits for it.
// On
// an error nothing of the new container is left, unless the error wraps
// ErrStuck: then CRIU holds it until it exits, and the caller cleans up
// later (Load and Destroy).
func Restore(ctx context.Context, opts RestoreOptions) (*libcontainer.Container, *RestoreResult, error) {
	start := time.Now()
	if opts.WorkDir == "" {
		opts.WorkDir = filepath.Clean(opts.ImageDir) + ".restore"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Config == nil || opts.Process == nil {
		return nil, nil, fmt.Errorf("restore %s: no configuration or process", opts.ID)
	}
	for _, m := range opts.FUSE {
		ok, err := isFUSE(m)
		if err != nil {
			return nil, nil, fmt.Errorf("restore %s: %w", opts.ID, err)
		}
		if !ok {
			return nil, nil, fmt.Errorf("restore %s: %s: %w", opts.ID, m, ErrNotFUSE)
		}
	}
	if err := os.MkdirAll(opts.WorkDir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("restore %s: %w", opts.ID, err)
	}
	info, err := ReadInfo(opts.ImageDir)
	if err != nil {
		return nil, nil, fmt.Errorf("restore %s: %w", opts.ID, err)
	}
	want, err := privilegesOf(opts.Config, opts.Process)
	if err != nil {
		return nil, nil, fmt.Errorf("restore %s: %w", opts.ID, err)
	}
	if err := checkPrivileges(opts.ImageDir, want); err != nil {
		return nil, nil, fmt.Errorf("restore %s: %w", opts.ID, err)
	}
	if info.Input != "" {
		if opts.Input == nil {
			return nil, nil, fmt.Errorf("restore %s: %w", opts.ID, ErrNoInput)
		}
		opts.Process.Stdin = opts.Input
	}
	c, err := libcontainer.Create(opts.Root, opts.ID, opts.Config)
	if err != nil {
		return nil, nil, fmt.Errorf("restore %s: create container: %w", opts.ID, err)
	}
	if info.Input != "" {
		if err := restoreConfig(opts.Config, info.Input); err != nil {
			return nil, nil, fmt.Errorf("restore %s: %w", opts.ID, errors.Join(err, destroy(c)))
		}
	}
	w := watchdog{
		workDir: opts.WorkDir, log: "restore.log",
		timeout: opts.Timeout, grace: opts.Grace,
		logger: opts.Logger.With("container", opts.ID),
	}
	err = w.run(ctx, func(ctx context.Context) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return inPrivateMounts(func() error {
			return c.Restore(opts.Process, &libcontainer.CriuOpts{
				ImagesDirectory: opts.ImageDir,
				WorkDirectory:   opts.WorkDir,
				EmptyNs:         emptyNs(info.LoopbackOnly),
				// Connections in the job's own namespace, and its file
				// locks (see Dump).
				TcpEstablished: true,
				FileLocks:      true,
			})
		})
	})
	if errors.Is(err, ErrStuck) {
		// CRIU still holds the container's lock: destroying would block.
		return nil, nil, fmt.Errorf("restore %s: %w; container left for cleanup", opts.ID, err)
	}
	if err != nil {
		err = criuFailure(opts.WorkDir, "restore.log", err)
		return nil, nil, fmt.Errorf("restore %s: %w", opts.ID, errors.Join(err, destroy(c)))
	}
	loaded, err := libcontainer.Load(opts.Root, opts.ID)
	if err != nil {
		return nil, nil, fmt.Errorf("restore %s: load restored container: %w", opts.ID, err)
	}
	// A job that ended at once (it was about to when dumped) has no
	// network left to bring up: its exit is for Wait to report.
	if info.LoopbackOnly {
		if err := loopbackUp(opts.Process); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("restore %s: %w", opts.ID, errors.Join(err, destroy(loaded)))
		}
	}
	if err := stopRestored(loaded, info.Stopped); err != nil {
		opts.Logger.Warn("restored processes not stopped again", "container", opts.ID, "err", err)
	}
	res := &RestoreResult{Wall: time.Since(start)}
	if res.Stats, err = readRestoreStats(opts.WorkDir); err != nil {
		opts.Logger.Warn("restored without statistics", "container", opts.ID, "err", err)
	}
	return loaded, res, nil
}

// destroy removes a container whose restore failed, killing whatever
// CRIU had already restored.
func destroy(c *libcontainer.Container) error {
	_ = c.Signal(os.Kill)
	if err := c.Destroy(); err != nil {
		return fmt.Errorf("destroy: %w", err)
	}
	return nil
}
