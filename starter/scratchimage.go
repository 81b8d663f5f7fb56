package starter

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"harrier.dev/harrier/transfer"
)

// Every job has files in its scratch directory that it expects to find
// again: a job with should_transfer_files = YES works there, and one
// that works in its submit-side directory through iofs has its HOME,
// TMPDIR and `local:` files there (a compiler's temporary files between
// its passes, sort's runs). The processes CRIU dumps may hold them open
// or come back to them by name, so a restore on another machine needs
// that directory as it was, the same files at the same paths with the
// same contents, before CRIU starts. So a job's images carry its scratch
// directory, archived (transfer.Archive) in the image directory as
// scratchArchive: sealed and checked with the image, and put back,
// replacing whatever the directory holds, just before the restore; what
// the runner keeps there itself (a container's image root, see
// ScratchKeeper) is left out. A vacate's archive is made once the dump
// has ended the job; a checkpoint that leaves the job running makes it
// while the dump has the job frozen (checkpoint.WithFrozen), which the
// job then is for longer. Either way it is the directory as the image
// has it: a job restored after a crash finds its files as its memory
// knows them (a database's pages, an appended log's end), not as the
// lost run left them.

// scratchArchive is the name of the scratch directory's archive in an
// image. CRIU reads only the files it knows.
const scratchArchive = "harrier-scratch.xfer"

// archiveScratch archives the scratch directory into the image dir.
func (c *checkpoints) archiveScratch(ctx context.Context, dir string) error {
	from, err := os.OpenRoot(c.scratch)
	if err != nil {
		return err
	}
	defer from.Close()
	f, err := os.OpenFile(filepath.Join(dir, scratchArchive), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	files, n, err := transfer.Archive(f, from, c.keptByRunner...)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("archive the scratch directory: %w", err)
	}
	c.logger.InfoContext(ctx, "scratch directory archived with the image", "files", files, "bytes", n)
	return nil
}

// restoreScratch empties the scratch directory and puts back the one
// archived in the image dir. An image without one (made by a starter
// that archived only transferred files' directories) leaves the
// directory as the job's start made it, and replaced false.
func (c *checkpoints) restoreScratch(ctx context.Context, dir string) (replaced bool, err error) {
	f, err := os.Open(filepath.Join(dir, scratchArchive))
	if errors.Is(err, os.ErrNotExist) {
		c.logger.InfoContext(ctx, "the image holds no scratch directory; the job finds its scratch directory as a start leaves it")
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	if err := emptyDir(c.scratch); err != nil {
		return true, err
	}
	to, err := os.OpenRoot(c.scratch)
	if err != nil {
		return true, err
	}
	defer to.Close()
	files, n, err := transfer.Extract(f, to)
	if err != nil {
		return true, fmt.Errorf("put back the scratch directory: %w", err)
	}
	c.logger.InfoContext(ctx, "scratch directory put back from the image", "files", files, "bytes", n)
	return true, nil
}

// emptyDir removes everything in the scratch directory dir.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("empty the scratch directory: %w", err)
		}
	}
	return nil
}
