package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/opencontainers/runc/libcontainer"
)

// ErrVfork says a process of the job stayed in a vfork for longer than a
// dump waits: it waits for its child to exec or exit, and CRIU cannot
// seize it meanwhile. The job is left running.
var ErrVfork = errors.New("a process of the job stays in vfork")

// ErrStopping says processes of the job kept stopping each other for
// longer than a dump waits: CRIU cannot seize a stopped process in a
// frozen job. The job is left running.
var ErrStopping = errors.New("processes of the job keep stopping")

// vforkPatience is how long a dump waits for the job to leave its vforks.
const vforkPatience = 2 * time.Second

// freezeForDump freezes c at a moment when CRIU can seize every task.
//
// A task waiting for the child it vforked to exec or exit cannot be
// seized: CRIU waits for it to stop until its own timeout (10 s, the job
// frozen all along) and fails. Shells (dash vforks every command),
// posix_spawn and Go's os/exec all vfork, so a busy script is often
// frozen in that window; the window closes when the child execs, well
// within a millisecond. So while some task is frozen inside a vfork,
// the job is thawed and frozen again a little later.
//
// A stopped task cannot be seized in a frozen cgroup at all (see
// stopped.go): while one is frozen stopped, the job is thawed, its
// stopped processes continued, and it is frozen again at once. It
// returns those it continued, which the caller closes.
//
// It reports whether c is frozen. A job that cannot be frozen at once (a
// process in the middle of a slow FUSE request) is left to CRIU to
// freeze, with more patience, its stopped processes continued first.
func freezeForDump(ctx context.Context, c *libcontainer.Container) (bool, []stoppedProcess, error) {
	deadline := time.Now().Add(vforkPatience)
	wait := time.Millisecond
	var continued []stoppedProcess
	for {
		if c.Pause() != nil {
			more, err := continueStopped(c)
			return false, append(continued, more...), err
		}
		vfork, stopped, err := unseizable(c)
		if err == nil && vfork == 0 && !stopped {
			return true, continued, nil
		}
		if rerr := c.Resume(); rerr != nil {
			return false, continued, errors.Join(err, fmt.Errorf("thaw: %w", rerr))
		}
		if err != nil {
			return false, continued, err
		}
		if stopped {
			more, err := continueStopped(c)
			continued = append(continued, more...)
			if err != nil {
				return false, continued, err
			}
		}
		if time.Now().After(deadline) {
			if vfork == 0 {
				return false, continued, fmt.Errorf("%w (after %v)", ErrStopping, vforkPatience)
			}
			return false, continued, fmt.Errorf("%w (pid %d, after %v)", ErrVfork, vfork, vforkPatience)
		}
		if stopped && vfork == 0 {
			continue // frozen again at once
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false, continued, ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 20*time.Millisecond)
	}
}

// unseizable returns the host pid of a frozen task of c that waits for
// the child it vforked, or 0 if there is none, and whether a task of c
// is frozen stopped. A sleeping task's wchan names where it sleeps: the
// wait for a vfork child is in kernel_clone (wait_for_vfork_done,
// inlined there), in _do_fork before Linux 5.10; a stopped task waits in
// do_signal_stop.
func unseizable(c *libcontainer.Container) (vfork int, stopped bool, err error) {
	pids, err := c.Processes()
	if err != nil {
		return 0, false, fmt.Errorf("list the job's processes: %w", err)
	}
	for _, pid := range pids {
		dir := "/proc/" + strconv.Itoa(pid) + "/task/"
		tasks, err := os.ReadDir(dir)
		if err != nil {
			continue // exited
		}
		for _, t := range tasks {
			w, err := os.ReadFile(dir + t.Name() + "/wchan")
			if err != nil {
				continue
			}
			switch string(w) {
			case "kernel_clone", "wait_for_vfork_done", "_do_fork":
				vfork = pid
			case "do_signal_stop":
				stopped = true
			}
		}
	}
	return vfork, stopped, nil
}
