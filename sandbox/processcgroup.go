package sandbox

import (
	"bytes"
	"errors"
	"fmt"
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
// started ends with it (cgroup.kill), what left its process group for a
// session of its own included, which would otherwise live on as the
// slot user and see the slot's later jobs. Only the tree serves here:
// no controller, no limit.

// ProcessCgroup is the cgroup of one plain-process job at a time. The
// slot's next job takes it over when nothing was left to kill in it;
// one killed goes (Close): this kernel kills what is cloned into a
// cgroup that was killed before (cgroup.kill), or below one.
type ProcessCgroup struct {
	dir    *os.File
	path   string
	killed bool
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

// ProcessCgroups reports whether plain-process jobs can be kept in
// cgroups here: as root, with a cgroup v2 hierarchy.
func ProcessCgroups() error {
	if os.Geteuid() != 0 {
		return errors.New("not running as root")
	}
	_, err := unifiedOwnDir()
	return err
}

// processCgroupsDir holds the cgroups of slot's plain-process jobs,
// beneath the slot's, in the v2 hierarchy whose own cgroup is own.
func processCgroupsDir(own, stateRoot, slot string) string {
	return filepath.Join(own, slotCgroupPath(stateRoot, slot), "process")
}

// NewProcessCgroup opens the cgroup for the next plain-process job of
// slot: the last job's, or one made afresh.
func NewProcessCgroup(stateRoot, slot string) (*ProcessCgroup, error) {
	if err := checkSlot(slot); err != nil {
		return nil, err
	}
	own, err := unifiedOwnDir()
	if err != nil {
		return nil, fmt.Errorf("job cgroup: %w", err)
	}
	path := filepath.Join(processCgroupsDir(own, stateRoot, slot), "job")
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, fmt.Errorf("job cgroup: %w", err)
	}
	// A cgroup left with processes in it was a dead starter's: it is
	// killed, and made again.
	if empty, err := unifiedEmpty(path); err != nil || !empty {
		err = errors.Join(err, killUnified(path), rmdirRetry(path), os.Mkdir(path, 0o755))
		if err != nil {
			return nil, fmt.Errorf("job cgroup: %w", err)
		}
	}
	dir, err := os.OpenFile(path, os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, fmt.Errorf("job cgroup: %w", err)
	}
	return &ProcessCgroup{dir: dir, path: path}, nil
}

// FD is the cgroup's directory, to start the job in
// (syscall.SysProcAttr's CgroupFD).
func (c *ProcessCgroup) FD() int { return int(c.dir.Fd()) }

// Kill ends every process in the cgroup and waits until they are gone.
func (c *ProcessCgroup) Kill() error {
	empty, err := unifiedEmpty(c.path)
	if err != nil || empty {
		return err
	}
	c.killed = true
	return killUnified(c.path)
}

// Freeze stops every process in the cgroup (on), or lets them go on,
// and waits until the kernel says it is done: the job stops whole, what
// it left its process group for included, and notices nothing.
func (c *ProcessCgroup) Freeze(on bool) error {
	v, want := "0", "frozen 0"
	if on {
		v, want = "1", "frozen 1"
	}
	if err := os.WriteFile(filepath.Join(c.path, "cgroup.freeze"), []byte(v), 0); err != nil {
		return fmt.Errorf("freeze cgroup %s: %w", c.path, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		events, err := os.ReadFile(filepath.Join(c.path, "cgroup.events"))
		if err != nil {
			return fmt.Errorf("freeze cgroup %s: %w", c.path, err)
		}
		if bytes.Contains(events, []byte(want)) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("freeze cgroup %s: not %s after 10 s", c.path, want)
		}
	}
}

// CPU is the processor time the cgroup's processes have used, in user
// and system mode (cpu.stat, which every cgroup v2 has).
func (c *ProcessCgroup) CPU() (user, sys time.Duration, err error) {
	b, err := os.ReadFile(filepath.Join(c.path, "cpu.stat"))
	if err != nil {
		return 0, 0, fmt.Errorf("job cgroup usage: %w", err)
	}
	for line := range bytes.Lines(b) {
		name, v, _ := bytes.Cut(bytes.TrimSpace(line), []byte(" "))
		usec, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			continue
		}
		switch string(name) {
		case "user_usec":
			user = time.Duration(usec) * time.Microsecond
		case "system_usec":
			sys = time.Duration(usec) * time.Microsecond
		}
	}
	return user, sys, nil
}

// Close lets the cgroup go, for the slot's next job; one Kill had to
// kill in is removed.
func (c *ProcessCgroup) Close() error {
	c.dir.Close()
	if !c.killed {
		return nil
	}
	return rmdirRetry(c.path)
}

// killUnified ends every process in the v2 cgroup dir and below it, and
// waits until the kernel says it is empty. A missing cgroup has nothing
// to end.
func killUnified(dir string) error {
	if empty, err := unifiedEmpty(dir); err != nil || empty {
		return err // most jobs leave nothing behind
	}
	err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if _, serr := os.Stat(dir); errors.Is(serr, os.ErrNotExist) {
			return nil
		}
		// A kernel before 5.14, without cgroup.kill: frozen, nothing
		// forks while the processes are collected.
		_ = os.WriteFile(filepath.Join(dir, "cgroup.freeze"), []byte("1"), 0)
		defer os.WriteFile(filepath.Join(dir, "cgroup.freeze"), []byte("0"), 0)
	case err != nil:
		return fmt.Errorf("kill cgroup %s: %w", dir, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if empty, err := unifiedEmpty(dir); err != nil || empty {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kill cgroup %s: processes still there after 10 s", dir)
		}
		if procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err == nil {
			for _, f := range bytes.Fields(procs) {
				if pid, err := strconv.Atoi(string(f)); err == nil {
					_ = unix.Kill(pid, unix.SIGKILL)
				}
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// unifiedEmpty reports whether no process is left in the v2 cgroup dir
// or below it; a missing cgroup is empty.
func unifiedEmpty(dir string) (bool, error) {
	events, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("cgroup %s: %w", dir, err)
	}
	return bytes.Contains(events, []byte("populated 0")), nil
}

// cleanupProcessCgroups ends what a dead starter's plain-process job of
// slot left running; removeCgroupTree then removes the cgroups.
func cleanupProcessCgroups(stateRoot, slot string) error {
	own, err := unifiedOwnDir()
	if err != nil {
		return nil // none could have been made
	}
	return killUnified(processCgroupsDir(own, stateRoot, slot))
}
