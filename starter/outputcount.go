package starter

import (
	"errors"
	"io"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// outputCount counts the bytes of standard output and error the job has
// written through the starter's pipes, streamed to the shadow, so that a
// checkpoint can tell the shadow how much of its output the job had
// written when it was taken: after a restore from it, the shadow drops
// what a run wrote later (which the restored job writes again).
//
// A byte is counted in the same step, under mu, as it leaves its pipe:
// what the pipes hold and what was counted add up, at any moment, to
// all the job wrote.
type outputCount struct {
	mu    sync.Mutex
	read  [3]int64    // by descriptor
	pipes [3]*os.File // the read ends of the run's streamed descriptors
}

// reader returns the read end r of descriptor fd's pipe, for the run
// starting, as a reader whose bytes are counted on from those of the
// runs before.
func (o *outputCount) reader(fd int, r *os.File) io.Reader {
	rc, err := r.SyscallConn()
	if err != nil {
		return r // not counted: at leaves the descriptor out
	}
	o.mu.Lock()
	o.pipes[fd] = r
	o.mu.Unlock()
	return &countedPipe{o: o, fd: fd, rc: rc}
}

// at returns, per descriptor streamed, the bytes the job has written so
// far: those read and those still in the pipe.
func (o *outputCount) at() (stdout, stderr *int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var n [3]*int64
	for fd := 1; fd <= 2; fd++ {
		if o.pipes[fd] == nil {
			continue
		}
		waiting, ok := pipeBytes(o.pipes[fd])
		if !ok {
			continue
		}
		v := o.read[fd] + waiting
		n[fd] = &v
	}
	return n[1], n[2]
}

// pipeBytes is how many bytes wait in the pipe p (FIONREAD), asked
// without changing its descriptor's mode (as Fd would).
func pipeBytes(p *os.File) (int64, bool) {
	rc, err := p.SyscallConn()
	if err != nil {
		return 0, false
	}
	var n int
	var ierr error
	if err := rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); err != nil || ierr != nil {
		return 0, false
	}
	return int64(n), true
}

// countedPipe reads a pipe, counting each read with it under the count's
// lock; between reads it waits in the runtime's poller, unlocked.
type countedPipe struct {
	o  *outputCount
	fd int
	rc syscall.RawConn
}

func (p *countedPipe) Read(b []byte) (int, error) {
	var (
		n    int
		rerr error
	)
	err := p.rc.Read(func(fd uintptr) bool {
		p.o.mu.Lock()
		n, rerr = unix.Read(int(fd), b)
		if n > 0 {
			p.o.read[p.fd] += int64(n)
		}
		p.o.mu.Unlock()
		return !errors.Is(rerr, unix.EAGAIN) && !errors.Is(rerr, unix.EINTR)
	})
	switch {
	case err != nil:
		return 0, err
	case rerr != nil:
		return 0, rerr
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}
