package starter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/asuser"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/transfer"
	"harrier.dev/harrier/transferplugin"
	"harrier.dev/harrier/wire"
)

// Hold codes of file transfer, as HTCondor numbers them.
const (
	holdCodeOutput         = 12 // an output file could not be transferred
	holdCodeInputTooLarge  = 32 // max_transfer_input_mb
	holdCodeOutputTooLarge = 33 // max_transfer_output_mb
)

// urlTimeout bounds the fetch of one URL input.
const urlTimeout = 10 * time.Minute

// fileTransfer is HTCondor's file transfer for a job with
// should_transfer_files = YES: it runs in its scratch directory, where
// its inputs are put before it starts (transfer_input_files, through the
// shadow, and URLs fetched here), and from where its outputs go home
// when it ends (transfer_output_files, or every file it made or changed
// at the top of the directory), or, ON_EXIT_OR_EVICT, when it is evicted.
// IF_NEEDED means remote I/O: every execute machine reaches the shadow.
type fileTransfer struct {
	client  wire.ShadowClient
	secret  string
	scratch string
	job     *classad.ClassAd
	exe     string // the executable's name in the scratch directory
	logger  *slog.Logger
	// sessionUp, if set, waits while the session with the shadow is lost
	// (see sender.waitUp).
	sessionUp func(context.Context) error
	// plugins maps a URL scheme to the machine's transfer plugin for it;
	// user is who plugins and file:// outputs run as (nil: the starter).
	plugins map[string]string
	user    *asuser.Credential
	// stdio are the spooled standard output and error, as items of
	// outputItems, that go to output_destination with the outputs.
	stdio [][2]string
	// before is the top of the scratch directory as the job found it: a
	// file not there, or changed since, is an output.
	before map[string]stamp
}

type stamp struct {
	size  int64
	mtime time.Time
}

// transferFor returns the file transfer of job, or nil if it has none.
func transferFor(job *classad.ClassAd, client wire.ShadowClient, secret, scratch, exe string, logger *slog.Logger) *fileTransfer {
	if v, _ := job.EvalString("ShouldTransferFiles"); strings.ToUpper(v) != "YES" {
		return nil
	}
	return &fileTransfer{client: client, secret: secret, scratch: scratch, job: job, exe: filepath.Base(exe), logger: logger}
}

// submitDirName is where, in its scratch directory, a job with
// transferred files that asked for it (want_submit_dir) sees its
// submit-side directory, through iofs.
const submitDirName = ".submit"

// submitDir reports whether the job asked to see its submit-side
// directory too (want_submit_dir).
func (x *fileTransfer) submitDir() bool {
	b, _ := x.job.EvalBool("WantSubmitDir")
	return b
}

// inputs puts the job's inputs into its scratch directory; a failure
// gives the hold that names the file.
func (x *fileTransfer) inputs(ctx context.Context) *wire.Exited {
	root, err := os.OpenRoot(x.scratch)
	if err != nil {
		return &wire.Exited{HoldReason: "Cannot open the scratch directory: " + err.Error(), HoldCode: holdCodeInput}
	}
	defer root.Close()
	began := time.Now()
	n, size, made, err := x.fromShadow(ctx, root)
	if err != nil {
		code := holdCodeInput
		if status.Code(err) == codes.ResourceExhausted {
			code = holdCodeInputTooLarge
		}
		return &wire.Exited{HoldReason: "Failed to transfer input files: " + grpcMessage(err), HoldCode: int32(code)}
	}
	list, _ := x.job.EvalString("TransferInput")
	var urls []string
	for entry := range strings.SplitSeq(list, ",") {
		if entry = strings.TrimSpace(entry); strings.Contains(entry, "://") {
			urls = append(urls, entry)
		}
	}
	un, usize, err := x.fetchURLs(ctx, root, urls)
	if err != nil {
		var fe *transferplugin.FileError
		if errors.As(err, &fe) {
			return &wire.Exited{HoldReason: fmt.Sprintf("Failed to transfer input file %s: %v", fe.URL, fe.Err), HoldCode: holdCodeInput}
		}
		return &wire.Exited{HoldReason: "Failed to transfer input files: " + err.Error(), HoldCode: holdCodeInput}
	}
	n, size = n+un, size+usize
	x.logger.Info("inputs in place", "files", n, "bytes", size, "took", time.Since(began))
	x.before, err = topLevel(root)
	if err != nil {
		return &wire.Exited{HoldReason: "Cannot list the scratch directory: " + err.Error(), HoldCode: holdCodeInput}
	}
	// What an earlier run made is the job's output, whether this run
	// changes it or not (HTCondor's SpooledOutputFiles).
	for name := range made {
		delete(x.before, name)
	}
	return nil
}

// again empties the scratch directory and puts the job's inputs there
// anew, for a start afresh after a restore that put back another
// directory failed.
func (x *fileTransfer) again(ctx context.Context) error {
	if err := emptyDir(x.scratch); err != nil {
		return err
	}
	if hold := x.inputs(ctx); hold != nil {
		return errors.New(hold.HoldReason)
	}
	return nil
}

// fromShadow receives the stream of the shadow's TransferInput, and
// returns the names at the top of the scratch directory of what the
// job's earlier runs made (the intermediate files of an eviction).
func (x *fileTransfer) fromShadow(ctx context.Context, root *os.Root) (files int, n int64, made map[string]bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := x.client.TransferInput(ctx, &wire.TransferInputRequest{Secret: x.secret})
	if err != nil {
		return 0, 0, nil, err
	}
	made = map[string]bool{}
	r := &transfer.Receiver{To: root}
	err = r.Receive(func(c *wire.TransferChunk) error {
		err := stream.RecvMsg(c)
		if err == nil && c.Intermediate && c.Entry != nil {
			top, _, _ := strings.Cut(c.Entry.Name, "/")
			made[top] = true
		}
		return err
	})
	if err != nil {
		return 0, 0, nil, err
	}
	return r.Files, r.Bytes, made, nil
}

// fetchURL fetches a URL input (HTCondor's built-in file and http(s)
// plugins) into the top of the scratch directory under its last path
// element. A file:// URL names a file of this machine, which is read only
// if anyone may read it: the starter reads as root.
func fetchURL(ctx context.Context, root *os.Root, raw string) (int64, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return 0, err
	}
	name := path.Base(u.Path)
	if name == "/" || name == "." || name == "" {
		return 0, errors.New("the URL names no file")
	}
	var body io.Reader
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		ctx, cancel := context.WithTimeout(ctx, urlTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
		if err != nil {
			return 0, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("%s", resp.Status)
		}
		body = resp.Body
	case "file":
		f, err := openForAnyone(u.Path)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		body = f
	default:
		return 0, fmt.Errorf("no plugin for %s:// URLs", u.Scheme)
	}
	return transfer.WriteFile(root, name, body, 0o644)
}

// openForAnyone opens path if every user of the machine may read it.
func openForAnyone(p string) (*os.File, error) {
	p = filepath.Clean(p)
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return nil, err
		}
		if st.Mode().Perm()&0o001 == 0 {
			return nil, fmt.Errorf("%s: %w (not open to every user)", d, fs.ErrPermission)
		}
		if d == "/" {
			break
		}
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && (!st.Mode().IsRegular() || st.Mode().Perm()&0o004 == 0) {
		err = fmt.Errorf("%s: %w (not a regular file every user may read)", p, fs.ErrPermission)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// topLevel lists the regular files at the top of the directory.
func topLevel(root *os.Root) (map[string]stamp, error) {
	entries, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return nil, err
	}
	m := make(map[string]stamp, len(entries))
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		m[e.Name()] = stamp{info.Size(), info.ModTime()}
	}
	return m, nil
}

// outputs sends the job's outputs home when its end calls for it, and
// returns how the job ended as the shadow must hear it: held, with the
// file's name, if they could not be sent.
func (x *fileTransfer) outputs(ctx context.Context, ex *wire.Exited, killed bool) *wire.Exited {
	when, _ := x.job.EvalString("WhenToTransferOutput")
	when = strings.ToUpper(when)
	intermediate := false
	switch {
	case killed || ex.HoldReason != "" || x.before == nil:
		return ex // removed, held, or never started
	case ex.Evicted:
		if when != "ON_EXIT_OR_EVICT" {
			return ex
		}
		intermediate = true
	case when == "ON_SUCCESS" && (ex.BySignal || ex.ExitCode != 0):
		x.logger.Info("the job did not succeed; its outputs stay here (when_to_transfer_output = ON_SUCCESS)")
		return ex
	}
	root, err := os.OpenRoot(x.scratch)
	if dest := x.destination(); err == nil && dest != "" && !intermediate {
		defer root.Close()
		return x.outputsTo(ctx, root, dest, ex)
	}
	if err == nil {
		defer root.Close()
		err = x.send(ctx, root, intermediate)
		// A session with the shadow lost within the job's lease: the
		// outputs go once it is back (the shadow kept no part of the
		// broken transfer).
		for deadline := time.Now().Add(jobLease(x.job)); status.Code(err) == codes.Unavailable && x.sessionUp != nil && time.Now().Before(deadline); {
			x.logger.Warn("outputs not sent; waiting for the shadow", "err", err)
			if x.sessionUp(ctx) != nil {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			err = x.send(ctx, root, intermediate)
		}
	}
	if err == nil {
		return ex
	}
	if intermediate {
		// The job runs again all the same, from its inputs.
		x.logger.Warn("the evicted job's intermediate files were not sent home", "err", err)
		return ex
	}
	code := holdCodeOutput
	if status.Code(err) == codes.ResourceExhausted {
		code = holdCodeOutputTooLarge
	}
	return &wire.Exited{HoldReason: "Failed to transfer output files: " + grpcMessage(err), HoldCode: int32(code)}
}

// destination is output_destination, or "".
func (x *fileTransfer) destination() string {
	d, _ := x.job.EvalString("OutputDestination")
	return d
}

// outputsTo sends the job's outputs to output_destination; an evicted
// job's intermediate files go home all the same, to come back with its
// next start.
func (x *fileTransfer) outputsTo(ctx context.Context, root *os.Root, dest string, ex *wire.Exited) *wire.Exited {
	items, err := x.outputItems(root)
	if err == nil {
		items = append(items, x.stdio...)
		began := time.Now()
		x.report(ctx, &wire.TransferReport{})
		var n int
		var size int64
		n, size, err = x.toDestination(ctx, root, dest, items)
		if err == nil {
			x.logger.Info("outputs sent to output_destination", "destination", dest, "files", n, "bytes", size)
			x.report(ctx, &wire.TransferReport{Finished: true, Files: int32(n), Bytes: size, Seconds: time.Since(began).Seconds()})
			return ex
		}
	}
	return &wire.Exited{HoldReason: "Failed to transfer output files to " + dest + ": " + err.Error(), HoldCode: holdCodeOutputDestination}
}

// report tells the shadow of a transfer it does not see, for the job's
// event log; the transfer does not depend on it.
func (x *fileTransfer) report(ctx context.Context, r *wire.TransferReport) {
	r.Secret = x.secret
	if _, err := x.client.ReportTransfer(ctx, r); err != nil {
		x.logger.Warn("cannot tell the shadow of the transfer to output_destination", "finished", r.Finished, "err", err)
	}
}

// send streams the job's outputs to the shadow.
func (x *fileTransfer) send(ctx context.Context, root *os.Root, intermediate bool) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	items, err := x.outputItems(root)
	if err != nil {
		return err
	}
	bufs := wire.NewBuffers()
	stream, err := x.client.TransferOutput(ctx, bufs.CallOption())
	if err != nil {
		return err
	}
	s := &transfer.Sender{Out: stream.Send, Buffers: bufs}
	s.SendFirst(&wire.TransferChunk{Secret: x.secret, Intermediate: intermediate})
	// A failure here cancels the call (see above): the shadow keeps no
	// part of a transfer that did not end.
	for _, it := range items {
		if err := s.Send(root, it[0], it[1]); err != nil {
			return shadowReason(stream, err)
		}
	}
	if err := s.Flush(); err != nil {
		return shadowReason(stream, err)
	}
	reply, err := stream.CloseAndRecv()
	if err != nil {
		return err
	}
	x.logger.Info("outputs sent", "intermediate", intermediate, "files", reply.Files, "bytes", reply.Bytes)
	return nil
}

// shadowReason is the shadow's reason for ending a transfer that failed
// to send with err: io.EOF says it ended the call.
func shadowReason(stream wire.Shadow_TransferOutputClient, err error) error {
	if !errors.Is(err, io.EOF) {
		return err
	}
	_, err = stream.CloseAndRecv()
	return err
}

// outputItems lists what to send, as pairs of a name in the scratch
// directory and its name home: transfer_output_files ("dir/" its
// contents; a name lands under its last element unless
// preserve_relative_paths), or by default every regular file at the top
// that the job made or changed, but its executable and the starter's own.
// An evicted job's files go whole, to be put back as they were.
func (x *fileTransfer) outputItems(root *os.Root) ([][2]string, error) {
	list, given := x.job.EvalString("TransferOutput")
	preserve, _ := x.job.EvalBool("PreserveRelativePaths")
	var items [][2]string
	if given {
		for entry := range strings.SplitSeq(list, ",") {
			if entry = strings.TrimSpace(entry); entry == "" {
				continue
			}
			p := filepath.Clean(entry)
			if !filepath.IsLocal(p) {
				return nil, &transfer.FileError{Name: entry, Err: transfer.ErrEscape}
			}
			if _, err := root.Lstat(p); err != nil {
				return nil, &transfer.FileError{Name: entry, Err: unwrapErrno(err)}
			}
			as := filepath.Base(p)
			switch {
			case strings.HasSuffix(entry, "/") && !preserve:
				as = ""
			case preserve:
				as = filepath.ToSlash(p)
			}
			items = append(items, [2]string{p, as})
		}
		return items, nil
	}
	now, err := topLevel(root)
	if err != nil {
		return nil, err
	}
	for name, st := range now {
		if name == x.exe || name == JobAdFile || name == MachineAdFile || strings.HasPrefix(name, ".harrier") {
			continue
		}
		if old, ok := x.before[name]; ok && old.size == st.size && old.mtime.Equal(st.mtime) {
			continue
		}
		items = append(items, [2]string{name, name})
	}
	return items, nil
}

func unwrapErrno(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return err
}

// grpcMessage is the shadow's reason in a call's error, or the error.
func grpcMessage(err error) string {
	if st, ok := status.FromError(err); ok {
		return st.Message()
	}
	return err.Error()
}
