package shadow

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/transfer"
	"harrier.dev/harrier/wire"
)

// A self-checkpointing job (checkpoint_exit_code) keeps its own state in
// files and exits with its checkpoint code; its starter then asks the
// shadow to save those files and starts the job again. The shadow copies
// them, as they are in the job's submit-side directory, into the job's
// place beside its CRIU images in the agent's store (its owner's, which
// nobody else may enter, see Spec.CheckpointDir): a new set, which
// replaces the previous one only once whole. Before a later run that is
// not restored from a CRIU image, the starter has the shadow copy the
// last set back into the job's directory.
//
// The files are the job's transfer_checkpoint_files (TransferCheckpoint)
// or, as HTCondor then takes the job's output, the regular files directly
// in its directory that it wrote since its starter attached, but for its
// executable, input, output, error and event log.

// CheckpointFilesDir is where the store in storeDir keeps the checkpoint
// files of the job named key.
func CheckpointFilesDir(storeDir, key string) string {
	return filepath.Join(storeDir, key+".files")
}

func (v *service) SaveCheckpointFiles(_ context.Context, req *wire.CheckpointFilesRequest) (*wire.CheckpointFilesReply, error) {
	s := v.s
	if !s.checkSecret(req.Secret) {
		return nil, status.Error(codes.PermissionDenied, errBadSecret.Error())
	}
	n, size, err := s.saveCheckpointFiles()
	if err != nil {
		s.logger.Warn("checkpoint files not saved; the previous ones stay", "err", err)
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	s.logger.Info("checkpoint files saved", "files", n, "bytes", size)
	s.events(Event{Type: EventSelfCheckpointed, CheckpointFiles: n, StoredBytes: size})
	return &wire.CheckpointFilesReply{Files: int32(n), Bytes: size}, nil
}

func (v *service) RestoreCheckpointFiles(_ context.Context, req *wire.CheckpointFilesRequest) (*wire.CheckpointFilesReply, error) {
	s := v.s
	if !s.checkSecret(req.Secret) {
		return nil, status.Error(codes.PermissionDenied, errBadSecret.Error())
	}
	n, size, err := s.restoreCheckpointFiles()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, status.Error(codes.NotFound, err.Error())
	}
	if err != nil {
		s.logger.Warn("checkpoint files not restored", "err", err)
		return nil, status.Error(codes.Internal, err.Error())
	}
	s.logger.Info("checkpoint files restored", "files", n, "bytes", size)
	return &wire.CheckpointFilesReply{Files: int32(n), Bytes: size}, nil
}

// saveCheckpointFiles copies the job's checkpoint files into a new set
// and makes it the job's latest, then drops the job's CRIU image, older
// than the state the files hold.
func (s *Shadow) saveCheckpointFiles() (int, int64, error) {
	store, err := s.imageStore() // makes the owner's store if need be
	if err != nil {
		return 0, 0, err
	}
	iwd, err := s.openIwd()
	if err != nil {
		return 0, 0, err
	}
	defer iwd.Close()
	names, err := s.checkpointNames(iwd)
	if err != nil {
		return 0, 0, err
	}
	final := CheckpointFilesDir(s.spec.CheckpointDir, s.spec.CheckpointKey)
	tmp, err := os.MkdirTemp(s.spec.CheckpointDir, filepath.Base(final)+".new-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(tmp) // gone once renamed
	to, err := os.OpenRoot(tmp)
	if err != nil {
		return 0, 0, err
	}
	defer to.Close()
	var files int
	var size int64
	for _, name := range names {
		n, b, err := transfer.Copy(iwd, to, name, true)
		if err != nil {
			return 0, 0, fmt.Errorf("checkpoint file %w", err)
		}
		files, size = files+n, size+b
	}
	// The new set replaces the old one; a crash between the two renames
	// leaves the old one as .old, which restore falls back to.
	old := final + ".old"
	if err := os.RemoveAll(old); err != nil {
		return 0, 0, err
	}
	if err := os.Rename(final, old); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, 0, err
	}
	if err := os.Rename(tmp, final); err != nil {
		_ = os.Rename(old, final)
		return 0, 0, err
	}
	if err := syncDir(s.spec.CheckpointDir); err != nil {
		return 0, 0, err
	}
	if err := os.RemoveAll(old); err != nil {
		s.logger.Warn("remove the previous checkpoint files", "err", err)
	}
	if err := store.Remove(s.spec.CheckpointKey); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.logger.Warn("remove the job's CRIU image, older than its checkpoint files", "err", err)
	}
	return files, size, nil
}

// restoreCheckpointFiles copies the job's latest checkpoint files into its
// directory, replacing what is there under their names. An error wrapping
// fs.ErrNotExist says the job has none.
func (s *Shadow) restoreCheckpointFiles() (int, int64, error) {
	if s.spec.CheckpointDir == "" {
		return 0, 0, fmt.Errorf("this job keeps no checkpoints: %w", fs.ErrNotExist)
	}
	final := CheckpointFilesDir(s.spec.CheckpointDir, s.spec.CheckpointKey)
	from, err := os.OpenRoot(final)
	if errors.Is(err, fs.ErrNotExist) {
		from, err = os.OpenRoot(final + ".old")
	}
	if err != nil {
		return 0, 0, fmt.Errorf("the job's checkpoint files: %w", err)
	}
	defer from.Close()
	iwd, err := s.openIwd()
	if err != nil {
		return 0, 0, err
	}
	defer iwd.Close()
	files, size, err := transfer.Copy(from, iwd, ".", true)
	if err != nil {
		return 0, 0, fmt.Errorf("checkpoint file %w", err)
	}
	return files, size, nil
}

// openIwd opens the job's directory, or a spooled job's spool: the files
// are read and written beneath it only, whatever links the job made there.
func (s *Shadow) openIwd() (*os.Root, error) {
	if isSpooled(s.job) {
		return os.OpenRoot(SpoolDir(s.spec.CheckpointDir, s.spec.CheckpointKey))
	}
	iwd, _ := s.job.EvalString("Iwd")
	if !filepath.IsAbs(iwd) {
		return nil, fmt.Errorf("the job's Iwd %q is not absolute", iwd)
	}
	return os.OpenRoot(iwd)
}

// checkpointNames lists the job's checkpoint files, relative to its
// directory iwd.
func (s *Shadow) checkpointNames(iwd *os.Root) ([]string, error) {
	if list, ok := s.job.EvalString("TransferCheckpoint"); ok {
		names := strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
		for i, n := range names {
			n = filepath.Clean(strings.TrimSuffix(n, "/"))
			if !filepath.IsLocal(n) {
				return nil, fmt.Errorf("transfer_checkpoint_files: %q is not a name within the job's directory", names[i])
			}
			names[i] = n
		}
		return names, nil
	}
	since := s.attachTime().Add(-time.Second) // modification times may be whole seconds
	skip := map[string]bool{}
	for _, attr := range []string{"Cmd", "In", "Out", "Err", "UserLog"} {
		if p, ok := s.job.EvalString(attr); ok && p != "" {
			if !filepath.IsAbs(p) {
				p = filepath.Join(iwd.Name(), p)
			}
			skip[filepath.Clean(p)] = true
		}
	}
	entries, err := fs.ReadDir(iwd.FS(), ".")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if !e.Type().IsRegular() || skip[filepath.Join(iwd.Name(), e.Name())] {
			continue
		}
		info, err := e.Info()
		if err != nil || info.ModTime().Before(since) {
			continue
		}
		names = append(names, e.Name())
	}
	return names, nil
}

// syncDir makes the renames in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
