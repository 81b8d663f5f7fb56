package startd

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"harrier.dev/harrier/childproc"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/starter"
)

// executeDirMode lets the users jobs run as through the execute directory
// to their own scratch directories, but not list it. Every job of the
// machine runs as the one slot user, and a container job sees the
// machine's file system, read-only: a job that could list the directory
// could read another job's scratch directory, which that same user owns.
// A scratch directory's name ends in 128 random bits.
const executeDirMode = 0o711

// scratchPrefix starts the name of every job scratch directory, so that a
// restarted startd can recognise and remove what a crashed one left.
const scratchPrefix = "scratch."

// starterProc is a starter process, steered with starter.Commands on its
// standard input. One that serves a claim's jobs in turn
// (starter.Spec.Reusable) reports starter.EventEnded when a job has ended
// and then waits for the next job; one that does not serves one job and
// exits.
type starterProc struct {
	cmd   *exec.Cmd
	stdin io.Closer
	send  *childproc.Sender[starter.Command]
	// ended receives a value for each job the starter reports ended.
	ended chan struct{}
	// exited is closed once the process has exited; err is its exit
	// status, to be read only after that.
	exited chan struct{}
	err    error
}

// run is one job in a starter process and the scratch directory it works
// in.
type run struct {
	proc    *starterProc
	scratch string
	// job is the ad of the job the starter runs; it is only read.
	job *classad.ClassAd
	// done is closed once the job has ended (the starter said so, or
	// exited) and its scratch directory is gone.
	done chan struct{}
	// err is the starter's exit status; read it only after done.
	err error
	// cleanup removes what the starter's job may have left.
	cleanup func() error
	// abortIO aborts the connections of the starter's iofs mounts.
	abortIO func() error
}

// startStarter creates a fresh scratch directory for slot under executeDir,
// named so that no one can guess it (see executeDirMode), and has a
// starter run the job in spec there: proc, a starter kept from the
// claim's previous job, if it is still there, or else a new one started
// with argv, in its own process group, appending its log to
// executeDir/starter.<slot>.log.
func startStarter(argv []string, proc *starterProc, executeDir, slot string, spec starter.Spec) (*run, error) {
	scratch := filepath.Join(executeDir, scratchPrefix+slot+"."+rand.Text())
	if err := os.Mkdir(scratch, 0o700); err != nil {
		return nil, fmt.Errorf("create scratch directory: %w", err)
	}
	spec.ScratchDir = scratch
	spec.Reusable = true
	if proc == nil || proc.give(spec) != nil {
		proc.stop()
		var err error
		if proc, err = newStarterProc(argv, executeDir, slot, spec); err != nil {
			os.RemoveAll(scratch)
			return nil, err
		}
	}
	return &run{proc: proc, scratch: scratch, done: make(chan struct{}),
		cleanup: func() error { return cleanupSlot(executeDir, slot, spec.Sandbox) },
		abortIO: func() error { return abortJobDirs(starter.JobDirsDir(executeDir), scratchPrefix+slot+".") },
	}, nil
}

func newStarterProc(argv []string, executeDir, slot string, spec starter.Spec) (*starterProc, error) {
	logPath := filepath.Join(executeDir, "starter."+slot+".log")
	log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open starter log: %w", err)
	}
	defer log.Close() // the starter has its own copy
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = childproc.Env(int(spec.Cpus))
	cmd.Dir = spec.ScratchDir
	cmd.Stderr = log
	// Its own process group, so that a kill reaches the job under it too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start starter %s: %w", argv[0], err)
	}
	p := &starterProc{cmd: cmd, stdin: stdin, send: childproc.NewSender[starter.Command](stdin),
		ended: make(chan struct{}, 1), exited: make(chan struct{})}
	if err := p.give(spec); err != nil {
		p.stop()
		return nil, err
	}
	go func() {
		events := childproc.NewReceiver[starter.Event](stdout)
		for {
			ev, err := events.Receive()
			if err != nil {
				// A starter that talks nonsense is not listened to
				// further, but is not left blocked on a full pipe.
				io.Copy(io.Discard, stdout)
				break
			}
			if ev.Type == starter.EventEnded {
				p.ended <- struct{}{}
			}
		}
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// give sends the starter the spec of its next job.
func (p *starterProc) give(spec starter.Spec) error {
	select {
	case <-p.exited:
		return errors.New("the starter has exited")
	default:
	}
	if err := p.send.Send(starter.Command{Job: &spec}); err != nil {
		return fmt.Errorf("send the job to its starter: %w", err)
	}
	return nil
}

// stop tells an idle starter that no job will follow and waits for it to
// exit. It does nothing to a nil starter.
func (p *starterProc) stop() {
	if p == nil {
		return
	}
	p.stdin.Close()
	<-p.exited
}

// wait waits for the job to end, removes its scratch directory and closes
// done. A starter that exited, killed perhaps, may have left containers and
// mounts: they are removed too. One that reported the job's end has removed
// them itself and stays for the claim's next job.
func (r *run) wait() {
	select {
	case <-r.proc.ended:
	case <-r.proc.exited:
		r.err = r.proc.err
		if err := r.cleanup(); err != nil && r.err == nil {
			r.err = err
		}
	}
	if err := os.RemoveAll(r.scratch); err != nil && r.err == nil {
		r.err = fmt.Errorf("remove scratch directory: %w", err)
	}
	close(r.done)
}

// kept returns the job's starter for the claim's next job, or nil if it
// has exited.
func (r *run) kept() *starterProc {
	select {
	case <-r.proc.exited:
		return nil
	default:
		return r.proc
	}
}

// kill tells the starter to vacate its job and kills its process group if
// it has not exited after grace, then waits until it is gone. Someone must
// be running wait.
func (r *run) kill(grace time.Duration) {
	select {
	case <-r.done: // gone already; its pid may belong to someone else now
		return
	default:
	}
	r.command(starter.Command{Vacate: true})
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-r.done:
		return
	case <-t.C:
	}
	r.sigkill()
	<-r.done
}

// killStuck is how long a starter sent SIGKILL has to exit before its
// iofs mounts are aborted.
const killStuck = 2 * time.Second

// sigkill sends SIGKILL to the starter's process group and sees that the
// starter exits. A starter killed while one of its threads waited on its
// own iofs mount (a stat of the job's directory as it mounts it, a sync
// of the job's files), the request taken by a thread the kill ended,
// would never exit: the kernel waits for an answer that cannot come.
// Aborting the mount's connection lets it go.
func (r *run) sigkill() {
	syscall.Kill(-r.proc.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-r.proc.exited:
	case <-time.After(killStuck):
		// Nothing else frees it: an error leaves it as it is.
		_ = r.abortIO()
	}
}

// abandon kills a job that was started for a slot the claim has left
// meanwhile, and cleans up after it, in the background.
func (r *run) abandon(grace time.Duration) {
	go r.wait()
	go r.kill(grace)
}

// command sends c to the job's starter, unless the job has ended. A
// starter that cannot be told is gone or going; wait notices.
func (r *run) command(c starter.Command) {
	select {
	case <-r.done:
	default:
		_ = r.proc.send.Send(c)
	}
}

// killAfter sends SIGKILL to the starter's process group if the job has
// not ended within grace. Someone must be running wait.
func (r *run) killAfter(grace time.Duration) {
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-r.done:
	case <-t.C:
		r.sigkill()
	}
}

// removeScratch removes every scratch directory in dir, left there by a
// startd that did not shut down cleanly.
func removeScratch(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("clean execute directory: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), scratchPrefix) {
			errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
		}
	}
	errs = append(errs, cleanupSandbox(dir))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("clean execute directory: %w", err)
	}
	return nil
}
