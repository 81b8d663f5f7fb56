package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// A job that runs as a plain process (no container) is kept in a cgroup
// all the same, in the unified (v2) hierarchy, which machines of the
// hybrid kind mount too: it starts there (CLONE_INTO_CGROUP), cannot
// leave (the cgroup is root's), and when it ends every process it
// started ends with it, what left its process group for a session of
// its own included, which would otherwise live on as the slot user and
// see the slot's later jobs. Only the tree serves here: no controller,
// no limit.
//
// The processes are killed frozen, one by one, not with cgroup.kill:
// on this kernel a process cloned into a cgroup that was once killed
// that way is killed at once, and a slot's jobs share one cgroup.

// ProcessCgroup is the cgroup of a slot's plain-process jobs, one at a
// time.
type ProcessCgroup struct {
	dir  *os.File
	path string
}

// errNoUnified means the machine mounts no cgroup v2 hierarchy.
var errNoUnified = errors.New("no cgroup v2 hierarchy mounted")

// unifiedOwnDir is this process's own cgroup in the v2 hierarchy.
func unifiedOwnDir() (string, error) {
	dirs, err := hierarchies()
	if err != nil {
		return "", err
	}
	for _, d := range dirs {
		var st unix.Statfs_t
		if unix.Statfs(d, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			return d, nil
		}
	}
	return "", errNoUnified
}

// ProcessCgroups opens the cgroup of one slot's plain-process jobs for
// each job in turn.
type ProcessCgroups struct {
	path string
}

// NewProcessCgroups finds where slot's plain-process jobs are kept, once
// for all its jobs: it fails where they cannot be (not root, no cgroup v2
// hierarchy).
func NewProcessCgroups(stateRoot, slot string) (*ProcessCgroups, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("job cgroups: not running as root")
	}
	if err := checkSlot(slot); err != nil {
		return nil, err
	}
	own, err := unifiedOwnDir()
	if err != nil {
		return nil, fmt.Errorf("job cgroups: %w", err)
	}
	return &ProcessCgroups{path: processCgroupDir(own, stateRoot, slot)}, nil
}

// processCgroupDir is the cgroup of slot's plain-process jobs, beneath
// the slot's, in the v2 hierarchy whose own cgroup is own.
func processCgroupDir(own, stateRoot, slot string) string {
	return filepath.Join(own, slotCgroupPath(stateRoot, slot), "process")
}

// Open opens the cgroup for the slot's next job, making it if need be
// and ending what a dead starter's job left in it.
func (p *ProcessCgroups) Open() (*ProcessCgroup, error) {
	if err := os.MkdirAll(p.path, 0o755); err != nil {
		return nil, fmt.Errorf("job cgroup: %w", err)
	}
	if err := killUnified(p.path); err != nil {
		return nil, err
	}
	dir, err := os.OpenFile(p.path, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, fmt.Errorf("job cgroup: %w", err)
	}
	return &ProcessCgroup{dir: dir, path: p.path}, nil
}

// FD is the cgroup's directory, to start the job in
// (syscall.SysProcAttr's CgroupFD).
func (c *ProcessCgroup) FD() int { return int(c.dir.Fd()) }

// Kill ends every process in the cgroup and waits until they are gone.
func (c *ProcessCgroup) Kill() error { return killUnified(c.path) }

// Freeze stops every process in the cgroup (on), or lets them go on,
// and waits until the kernel says it is done: the job stops whole, what
// it left its process group for included, and notices nothing.
func (c *ProcessCgroup) Freeze(on bool) error { return freezeUnified(c.path, on) }

// CPU is the processor time the cgroup's processes have used, in user
// and system mode (cpu.stat, which every cgroup v2 has).
func (c *ProcessCgroup) CPU() (user, sys time.Duration, err error) {
	stat, err := readKeyed(filepath.Join(c.path, "cpu.stat"))
	if err != nil {
		return 0, 0, fmt.Errorf("job cgroup usage: %w", err)
	}
	return time.Duration(stat["user_usec"]) * time.Microsecond, time.Duration(stat["system_usec"]) * time.Microsecond, nil
}

// Close lets the cgroup go; it stays for the slot's next job, until
// Cleanup.
func (c *ProcessCgroup) Close() error { return c.dir.Close() }

// freezeUnified freezes the v2 cgroup dir and what is below it, or
// thaws it, and waits until the kernel says so.
func freezeUnified(dir string, on bool) error {
	want := int64(0)
	if on {
		want = 1
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.freeze"), []byte(strconv.FormatInt(want, 10)), 0); err != nil {
		return fmt.Errorf("freeze cgroup %s: %w", dir, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		events, err := readKeyed(filepath.Join(dir, "cgroup.events"))
		if err != nil {
			return fmt.Errorf("freeze cgroup %s: %w", dir, err)
		}
		if events["frozen"] == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("freeze cgroup %s: frozen not %d after 10 s", dir, want)
		}
	}
}

// killUnified ends every process in the v2 cgroup dir and below it:
// frozen, nothing forks while they are collected, and a frozen process
// dies of SIGKILL all the same. It waits until the kernel says the
// cgroup is empty, and thaws it. A missing cgroup has nothing to end.
func killUnified(dir string) error {
	if empty, err := unifiedEmpty(dir); err != nil || empty {
		return err // most jobs leave nothing behind
	}
	if err := freezeUnified(dir, true); err != nil {
		return fmt.Errorf("kill cgroup: %w", err)
	}
	defer freezeUnified(dir, false)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			procs, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
			for _, f := range bytes.Fields(procs) {
				if pid, err := strconv.Atoi(string(f)); err == nil {
					_ = unix.Kill(pid, unix.SIGKILL)
				}
			}
			return nil
		})
		if empty, err := unifiedEmpty(dir); err != nil || empty {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kill cgroup %s: processes still there after 10 s", dir)
		}
	}
}

// unifiedEmpty reports whether no process is left in the v2 cgroup dir
// or below it; a missing cgroup is empty.
func unifiedEmpty(dir string) (bool, error) {
	events, err := readKeyed(filepath.Join(dir, "cgroup.events"))
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("cgroup %s: %w", dir, err)
	}
	return events["populated"] == 0, nil
}

// KillProcesses ends what the plain-process job of a starter of slot
// that died left running. The cgroup stays for the slot's next job;
// Cleanup removes it.
func KillProcesses(stateRoot, slot string) error {
	if err := checkSlot(slot); err != nil {
		return err
	}
	own, err := unifiedOwnDir()
	if err != nil {
		return nil // none could have been made
	}
	return killUnified(processCgroupDir(own, stateRoot, slot))
}
