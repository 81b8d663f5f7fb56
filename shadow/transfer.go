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

// A job with should_transfer_files = YES runs in its scratch directory on
// the execute machine. Its starter asks the shadow for the job's inputs
// (TransferInput) before the job starts and sends its outputs home
// (TransferOutput) after it ends; the shadow reads and writes them as the
// job's owner, beneath the job's directory (os.Root, see package
// transfer). An input named by an absolute path is read where it is, as
// the owner may. The intermediate files an evicted job sends home
// (when_to_transfer_output = ON_EXIT_OR_EVICT) go to the job's place in
// its owner's store (IntermediateFilesDir), not to its directory: they
// are sent again, after its inputs, when it starts anew, and dropped once
// its final outputs have arrived.

// IntermediateFilesDir is where the store in storeDir keeps the files an
// evicted job sent home, for its next start.
func IntermediateFilesDir(storeDir, key string) string {
	return filepath.Join(storeDir, key+".xfer")
}

// inputItem is one entry of transfer_input_files: name beneath from, sent
// as as ("" for a directory's contents).
type inputItem struct {
	entry string // as the user wrote it, for messages
	from  *os.Root
	name  string
	as    string
	// intermediate: the files an evicted job's last run left, which
	// are its outputs, not its inputs.
	intermediate bool
}

func (v *service) TransferInput(req *wire.TransferInputRequest, stream wire.Shadow_TransferInputServer) error {
	s := v.s
	if !s.checkSecret(req.Secret) {
		return status.Error(codes.PermissionDenied, errBadSecret.Error())
	}
	items, size, err := s.inputItems()
	defer func() {
		for _, it := range items {
			it.from.Close()
		}
	}()
	if err != nil {
		return err
	}
	began := time.Now()
	s.events(Event{Type: EventTransfer, Transfer: &TransferStats{}})
	snd := &transfer.Sender{Out: stream.Send, Buffers: s.link.buffers}
	for _, it := range items {
		snd.Out = stream.Send
		if it.intermediate {
			// The starter sends them home at the end, changed or not.
			snd.Out = func(c *wire.TransferChunk) error {
				c.Intermediate = true
				return stream.Send(c)
			}
		}
		if err := snd.Send(it.from, it.name, it.as); err != nil {
			s.logger.Warn("input transfer failed", "entry", it.entry, "err", err)
			return status.Error(codes.FailedPrecondition, inputError(it, err))
		}
	}
	st := &TransferStats{Finished: true, Files: snd.Files, Bytes: snd.Bytes, Seconds: time.Since(began).Seconds()}
	s.logger.Info("inputs transferred", "files", st.Files, "bytes", st.Bytes, "planned_bytes", size, "took", time.Since(began))
	s.events(Event{Type: EventTransfer, Transfer: st})
	return nil
}

// inputError names the input that failed as the user wrote it, and the
// file within it.
func inputError(it inputItem, err error) string {
	return fmt.Sprintf("transfer_input_files %s: %v", it.entry, err)
}

// inputItems resolves the job's transfer_input_files (URLs are the
// starter's) and the intermediate files of its last eviction, checking
// that each exists and that together they fit max_transfer_input_mb.
// The caller closes the items' roots, also on error.
func (s *Shadow) inputItems() ([]inputItem, int64, error) {
	iwd, err := s.openIwd()
	if err != nil {
		return nil, 0, status.Error(codes.FailedPrecondition, err.Error())
	}
	defer iwd.Close()
	list, _ := s.job.EvalString("TransferInput")
	preserve, _ := s.job.EvalBool("PreserveRelativePaths")
	var items []inputItem
	var size int64
	for entry := range strings.SplitSeq(list, ",") {
		if entry = strings.TrimSpace(entry); entry == "" || strings.Contains(entry, "://") {
			continue
		}
		it, err := resolveInput(iwd, entry, preserve)
		if err != nil {
			return items, 0, status.Error(codes.FailedPrecondition, fmt.Sprintf("transfer_input_files %s: %v", entry, err))
		}
		items = append(items, it)
		n, err := treeSize(it.from, it.name)
		if err != nil {
			return items, 0, status.Error(codes.FailedPrecondition, inputError(it, err))
		}
		size += n
	}
	if s.spec.CheckpointDir != "" {
		if from, err := os.OpenRoot(IntermediateFilesDir(s.spec.CheckpointDir, s.spec.CheckpointKey)); err == nil {
			items = append(items, inputItem{entry: "(intermediate files of the job's last run)", from: from, name: ".", as: "", intermediate: true})
		}
	}
	if max, ok := s.job.EvalInt("MaxTransferInputMB"); ok && max >= 0 && size > max<<20 {
		return items, 0, status.Error(codes.ResourceExhausted,
			fmt.Sprintf("transfer_input_files hold %d bytes, over max_transfer_input_mb = %d", size, max))
	}
	return items, size, nil
}

// resolveInput reads one entry of transfer_input_files: "dir/" sends the
// directory's contents, "dir" the directory; a relative name lands under
// its last element, or its whole name with preserve_relative_paths.
func resolveInput(iwd *os.Root, entry string, preserve bool) (inputItem, error) {
	contents := strings.HasSuffix(entry, "/")
	p := filepath.Clean(entry)
	it := inputItem{entry: entry}
	var err error
	if filepath.IsAbs(p) {
		it.from, err = os.OpenRoot(filepath.Dir(p))
		it.name, it.as = filepath.Base(p), filepath.Base(p)
	} else {
		if !filepath.IsLocal(p) {
			return it, transfer.ErrEscape
		}
		it.from, err = iwd.OpenRoot(".")
		it.name, it.as = p, filepath.Base(p)
		if preserve {
			it.as = filepath.ToSlash(p)
		}
	}
	if err != nil {
		return it, unwrapPathErr(err)
	}
	if contents {
		if !preserve || filepath.IsAbs(p) {
			it.as = ""
		}
		if _, err := it.from.Stat(it.name); err != nil {
			return it, unwrapPathErr(err)
		}
	} else if _, err := it.from.Lstat(it.name); err != nil {
		return it, unwrapPathErr(err)
	}
	return it, nil
}

// treeSize adds up the sizes of the regular files at and below name.
func treeSize(from *os.Root, name string) (int64, error) {
	var n int64
	err := fs.WalkDir(from.FS(), name, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return &transfer.FileError{Name: p, Err: unwrapPathErr(err)}
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return &transfer.FileError{Name: p, Err: unwrapPathErr(err)}
			}
			n += info.Size()
		}
		return nil
	})
	return n, err
}

func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func (v *service) TransferOutput(stream wire.Shadow_TransferOutputServer) error {
	s := v.s
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	if !s.checkSecret(first.Secret) {
		return status.Error(codes.PermissionDenied, errBadSecret.Error())
	}
	began := time.Now()
	s.events(Event{Type: EventTransfer, Transfer: &TransferStats{Output: true, Intermediate: first.Intermediate}})
	var r *transfer.Receiver
	if first.Intermediate {
		r, err = s.receiveIntermediate(stream, first)
	} else {
		r, err = s.receiveOutputs(stream, first)
	}
	if err != nil {
		s.logger.Warn("output transfer failed", "intermediate", first.Intermediate, "err", err)
		if errors.Is(err, transfer.ErrTooLarge) {
			return status.Error(codes.ResourceExhausted, err.Error())
		}
		return status.Error(codes.FailedPrecondition, err.Error())
	}
	st := &TransferStats{Output: true, Intermediate: first.Intermediate, Finished: true,
		Files: r.Files, Bytes: r.Bytes, Seconds: time.Since(began).Seconds()}
	s.logger.Info("outputs transferred", "intermediate", st.Intermediate, "files", st.Files, "bytes", st.Bytes, "took", time.Since(began))
	s.events(Event{Type: EventTransfer, Transfer: st})
	return stream.SendAndClose(&wire.TransferOutputReply{Files: int32(r.Files), Bytes: r.Bytes})
}

// receiveOutputs writes the job's outputs into its directory, renamed
// as transfer_output_remaps says, within max_transfer_output_mb; the
// intermediate files of its earlier runs are no longer needed.
func (s *Shadow) receiveOutputs(stream wire.Shadow_TransferOutputServer, first *wire.TransferChunk) (*transfer.Receiver, error) {
	to, err := s.openOutputDir()
	if err != nil {
		return nil, err
	}
	defer to.Close()
	r := &transfer.Receiver{To: to, Rename: transfer.OutputRemaps(s.job.EvalString("TransferOutputRemaps"))}
	if isSpooled(s.job) {
		r.Rename = nil // applied when they are fetched
	}
	if max, ok := s.job.EvalInt("MaxTransferOutputMB"); ok && max >= 0 {
		r.Limit = max << 20
		if max == 0 {
			r.Limit = -1 // nothing at all; checked below
		}
	}
	if err := receive(stream, first, r); err != nil {
		return nil, err
	}
	if r.Limit < 0 && r.Bytes > 0 {
		return nil, fmt.Errorf("%w of 0 MB", transfer.ErrTooLarge)
	}
	if s.spec.CheckpointDir != "" {
		if err := os.RemoveAll(IntermediateFilesDir(s.spec.CheckpointDir, s.spec.CheckpointKey)); err != nil {
			s.logger.Warn("remove the job's intermediate files", "err", err)
		}
	}
	return r, nil
}

// receiveIntermediate keeps an evicted job's files in its owner's store
// for its next start: a new set, which replaces the previous one once
// whole (the job's scratch directory as it was, not a merge).
func (s *Shadow) receiveIntermediate(stream wire.Shadow_TransferOutputServer, first *wire.TransferChunk) (*transfer.Receiver, error) {
	if _, err := s.imageStore(); err != nil { // makes the owner's store if need be
		return nil, err
	}
	final := IntermediateFilesDir(s.spec.CheckpointDir, s.spec.CheckpointKey)
	tmp, err := os.MkdirTemp(s.spec.CheckpointDir, filepath.Base(final)+".new-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp) // gone once renamed
	to, err := os.OpenRoot(tmp)
	if err != nil {
		return nil, err
	}
	defer to.Close()
	r := &transfer.Receiver{To: to}
	if err := receive(stream, first, r); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(final); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, final); err != nil {
		return nil, err
	}
	return r, syncDir(s.spec.CheckpointDir)
}

// openOutputDir opens where the job's outputs go: its directory, or a
// spooled job's output spool.
func (s *Shadow) openOutputDir() (*os.Root, error) {
	if isSpooled(s.job) {
		return os.OpenRoot(SpoolOutputDir(s.spec.CheckpointDir, s.spec.CheckpointKey))
	}
	return s.openIwd()
}

// receive feeds the stream, from first on, to r.
func receive(stream wire.Shadow_TransferOutputServer, first *wire.TransferChunk, r *transfer.Receiver) error {
	if err := r.Chunk(first); err != nil {
		return err
	}
	return r.Receive(func(c *wire.TransferChunk) error { return stream.RecvMsg(c) })
}

// ReportTransfer hears of a transfer the starter makes without the shadow
// (outputs to output_destination): the job's event log gets its 040
// events as for outputs sent home.
func (v *service) ReportTransfer(_ context.Context, req *wire.TransferReport) (*wire.TransferReportReply, error) {
	s := v.s
	if !s.checkSecret(req.Secret) {
		return nil, status.Error(codes.PermissionDenied, errBadSecret.Error())
	}
	st := &TransferStats{Output: true}
	if req.Finished {
		st.Finished, st.Files, st.Bytes, st.Seconds = true, int(req.Files), req.Bytes, req.Seconds
	}
	s.events(Event{Type: EventTransfer, Transfer: st})
	return &wire.TransferReportReply{}, nil
}
