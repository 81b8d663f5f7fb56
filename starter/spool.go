package starter

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

// outputSpool keeps the standard output and error of a job with
// transferred files in its scratch directory while it runs, as HTCondor
// does unless the job asks for them streamed (stream_output,
// stream_error): such a job needs nothing of its submit machine until it
// ends, when they are sent home with its other outputs. The files travel
// with the scratch directory in the job's checkpoint images.
type outputSpool struct {
	scratch string
	spooled [3]bool // by descriptor: 1 stdout, 2 stderr
}

// spoolNames are the files, in the scratch directory, that hold the
// output; the ".harrier" prefix keeps them out of the job's outputs.
var spoolNames = [3]string{1: ".harrier_stdout", 2: ".harrier_stderr"}

// spoolFor returns the spool of a job with transferred files that does
// not stream both outputs, or nil.
func spoolFor(job *classad.ClassAd, xfer *fileTransfer, scratch string) *outputSpool {
	if xfer == nil {
		return nil
	}
	sp := &outputSpool{scratch: scratch}
	for fd, attr := range map[int]string{1: "StreamOut", 2: "StreamErr"} {
		stream, _ := job.EvalBool(attr)
		sp.spooled[fd] = !stream
	}
	if !sp.spooled[1] && !sp.spooled[2] {
		return nil
	}
	return sp
}

// open opens the spool file of descriptor fd for appending (nil if fd is
// streamed); fresh empties it first, for a job that starts from its
// beginning. The file is opened beneath the scratch directory, which the
// job's user owns: a link the job put in its place is not followed out.
func (sp *outputSpool) open(fd int, fresh bool) (*os.File, error) {
	if sp == nil || !sp.spooled[fd] {
		return nil, nil
	}
	root, err := os.OpenRoot(sp.scratch)
	if err != nil {
		return nil, fmt.Errorf("open scratch directory: %w", err)
	}
	defer root.Close()
	flags := os.O_WRONLY | os.O_CREATE | os.O_APPEND
	if fresh {
		flags |= os.O_TRUNC
	}
	return openRegular(root, spoolNames[fd], flags)
}

// openRegular opens name beneath root, refusing anything but a regular
// file with no other name: the job, whose user owns the directory, may
// have put a FIFO, a device, or a hard link to another file in its place,
// which the root starter would then read or append to. (What it writes
// there itself is its own output, going to its own output file.)
func openRegular(root *os.Root, name string, flags int) (*os.File, error) {
	f, err := root.OpenFile(name, flags|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	st, err := f.Stat()
	sys, _ := st.Sys().(*syscall.Stat_t)
	if err != nil || !st.Mode().IsRegular() || sys == nil || sys.Nlink != 1 {
		f.Close()
		return nil, fmt.Errorf("open %s: not a regular file of one name", name)
	}
	return f, nil
}

// sendHome sends the spooled output to the shadow, as the job would have
// streamed it, before its exit is reported.
func (sp *outputSpool) sendHome(send *sender) error {
	if sp == nil {
		return nil
	}
	root, err := os.OpenRoot(sp.scratch)
	if err != nil {
		return fmt.Errorf("open scratch directory: %w", err)
	}
	defer root.Close()
	buf := make([]byte, 64<<10)
	for fd, spooled := range sp.spooled {
		if !spooled {
			continue
		}
		f, err := openRegular(root, spoolNames[fd], os.O_RDONLY)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", spoolNames[fd], err)
		}
		for {
			n, err := f.Read(buf)
			if n > 0 {
				data := append([]byte(nil), buf[:n]...)
				if err := send.msg(&wire.StarterMessage{Body: &wire.StarterMessage_Output{Output: &wire.Output{Fd: int32(fd), Data: data}}}); err != nil {
					f.Close()
					return fmt.Errorf("send %s: %w", spoolNames[fd], err)
				}
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				f.Close()
				return fmt.Errorf("read %s: %w", spoolNames[fd], err)
			}
		}
		f.Close()
	}
	return nil
}
