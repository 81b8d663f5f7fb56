package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"

	"github.com/opencontainers/runc/libcontainer"
	"golang.org/x/sys/unix"
)

// A stopped process of the job (SIGSTOP, SIGTSTP: a shell's job control, a
// job pausing a helper) cannot be dumped as it is. CRIU seizes the job's
// processes with ptrace once their cgroup is frozen, and attaching to a
// stopped process waits until it has run once more, which a frozen cgroup
// never lets it: CRIU hangs until the dump's timeout, the job frozen all
// along (CRIU's own tests of stopped processes fail with its cgroup
// freezer too), and a stopped process frozen does not heed SIGCONT
// until thawed. So a dump that finds a process of the job frozen
// stopped thaws the job, continues its stopped processes and freezes it
// again (freezeForDump); it records them in the image and stops them
// again where the job goes on: at once if it stays (a checkpoint that
// leaves it running, a failed dump), after the restore otherwise. They
// run for the moment between, and their parent hears of both changes
// (SIGCHLD), as it would of any SIGCONT and SIGSTOP; a process stopped by
// SIGTSTP comes back stopped by SIGSTOP.

// stoppedProcess is a process of the job in the stopped state: a pidfd
// of it, which a signal reaches only while it lives (its pid may be
// another process's by the time the dump is over), and its pid in the
// job's pid namespace.
type stoppedProcess struct{ pidfd, ns int }

// continueStopped continues c's stopped processes and returns them; the
// caller closes them (closeStopped).
func continueStopped(c *libcontainer.Container) ([]stoppedProcess, error) {
	pids, err := c.Processes()
	if err != nil {
		return nil, fmt.Errorf("list the job's processes: %w", err)
	}
	var stopped []stoppedProcess
	for _, pid := range pids {
		p, ok := openStopped(pid)
		if !ok {
			continue
		}
		stopped = append(stopped, p)
		if err := unix.PidfdSendSignal(p.pidfd, unix.SIGCONT, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
			return stopped, fmt.Errorf("continue stopped process %d: %w", pid, err)
		}
	}
	return stopped, nil
}

// openStopped returns process pid if it is stopped. The pidfd is opened
// first: the state read after it is that process's, or the pidfd's
// process is gone.
func openStopped(pid int) (stoppedProcess, bool) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return stoppedProcess{}, false // exited
	}
	st, ns, err := processState(pid)
	if err != nil || st != 'T' {
		unix.Close(fd)
		return stoppedProcess{}, false
	}
	return stoppedProcess{pidfd: fd, ns: ns}, true
}

// stopAgain stops the processes continueStopped continued, where the job
// stays.
func stopAgain(stopped []stoppedProcess) error {
	var errs []error
	for _, p := range stopped {
		if err := unix.PidfdSendSignal(p.pidfd, unix.SIGSTOP, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("stop process %d of the job again: %w", p.ns, err))
		}
	}
	return errors.Join(errs...)
}

func closeStopped(stopped []stoppedProcess) {
	for _, p := range stopped {
		unix.Close(p.pidfd)
	}
}

// stopRestored stops the processes of the restored container c whose pids
// in its namespace are ns: those stopped when it was dumped.
func stopRestored(c *libcontainer.Container, ns []int) error {
	if len(ns) == 0 {
		return nil
	}
	pids, err := c.Processes()
	if err != nil {
		return fmt.Errorf("list the restored job's processes: %w", err)
	}
	var errs []error
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue // exited
		}
		if _, nsPid, err := processState(pid); err == nil && slices.Contains(ns, nsPid) {
			if err := unix.PidfdSendSignal(fd, unix.SIGSTOP, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
				errs = append(errs, fmt.Errorf("stop restored process %d: %w", pid, err))
			}
		}
		unix.Close(fd)
	}
	return errors.Join(errs...)
}

// processState returns the state letter of process pid (R, S, T, ...)
// and its pid in its own pid namespace, from /proc/PID/status.
func processState(pid int) (byte, int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, err
	}
	var state byte
	ns := pid
	for line := range bytes.Lines(b) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		f := bytes.Fields(v)
		switch {
		case string(k) == "State" && len(f) > 0 && len(f[0]) == 1:
			state = f[0][0]
		case string(k) == "NSpid" && len(f) > 0:
			if ns, err = strconv.Atoi(string(f[len(f)-1])); err != nil {
				return 0, 0, fmt.Errorf("NSpid of %d: %w", pid, err)
			}
		}
	}
	return state, ns, nil
}
