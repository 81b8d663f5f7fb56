package startd

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/starter"
)

// scratchPrefix starts the name of every job scratch directory, so that a
// restarted startd can recognise and remove what a crashed one left.
const scratchPrefix = "scratch."

// run is one starter process and the scratch directory it works in.
type run struct {
	cmd     *exec.Cmd
	scratch string
	log     *os.File
	// job is the ad of the job the starter runs; it is only read.
	job *classad.ClassAd
	// done is closed once the starter has exited and its scratch directory
	// is gone.
	done chan struct{}
	// err is the starter's exit status; read it only after done.
	err error
	// cleanup removes what the starter's job may have left.
	cleanup func() error
}

// startStarter creates a fresh scratch directory for slot under executeDir
// and runs argv with spec (its ScratchDir filled in) as JSON on standard
// input, in its own process group, appending its output to
// executeDir/starter.<slot>.log.
func startStarter(argv []string, executeDir, slot string, spec starter.Spec) (*run, error) {
	scratch, err := os.MkdirTemp(executeDir, scratchPrefix+slot+".")
	if err != nil {
		return nil, fmt.Errorf("create scratch directory: %w", err)
	}
	r, err := startIn(argv, executeDir, slot, scratch, spec)
	if err != nil {
		os.RemoveAll(scratch)
		return nil, err
	}
	return r, nil
}

func startIn(argv []string, executeDir, slot, scratch string, spec starter.Spec) (*run, error) {
	spec.ScratchDir = scratch
	var in bytes.Buffer
	if err := spec.Write(&in); err != nil {
		return nil, fmt.Errorf("encode starter spec: %w", err)
	}
	logPath := filepath.Join(executeDir, "starter."+slot+".log")
	log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open starter log: %w", err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = scratch
	cmd.Stdin = &in
	cmd.Stdout = log
	cmd.Stderr = log
	// Its own process group, so that a kill reaches the job under it too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start starter %s: %w", argv[0], err)
	}
	return &run{cmd: cmd, scratch: scratch, log: log, done: make(chan struct{}),
		cleanup: func() error { return cleanupSlot(executeDir, slot, spec.Sandbox) }}, nil
}

// wait waits for the starter to exit, removes its scratch directory and
// closes done.
func (r *run) wait() {
	r.err = r.cmd.Wait()
	if err := r.cleanup(); err != nil && r.err == nil {
		r.err = err
	}
	r.log.Close()
	if err := os.RemoveAll(r.scratch); err != nil && r.err == nil {
		r.err = fmt.Errorf("remove scratch directory: %w", err)
	}
	close(r.done)
}

// kill sends SIGTERM to the starter's process group and SIGKILL if it has
// not exited after grace, then waits until it is gone. Someone must be
// running wait.
func (r *run) kill(grace time.Duration) {
	select {
	case <-r.done: // gone already; its pid may belong to someone else now
		return
	default:
	}
	pgid := -r.cmd.Process.Pid
	syscall.Kill(pgid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-r.done:
		return
	case <-t.C:
	}
	syscall.Kill(pgid, syscall.SIGKILL)
	<-r.done
}

// signal sends sig to the starter alone (not to its job, which the
// starter steers itself), unless it has exited.
func (r *run) signal(sig syscall.Signal) {
	select {
	case <-r.done: // its pid may belong to someone else now
	default:
		_ = r.cmd.Process.Signal(sig)
	}
}

// killAfter sends SIGKILL to the starter's process group if it has not
// exited within grace. Someone must be running wait.
func (r *run) killAfter(grace time.Duration) {
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-r.done:
	case <-t.C:
		syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
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
