package startd

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// clockTicks is the kernel's USER_HZ, the unit of CPU times in
// /proc/PID/stat; it is 100 on every Linux architecture Harrier runs on.
const clockTicks = 100

// loadWindow is the time constant of the load averages, that of the
// kernel's one-minute load average, so that CondorLoadAvg can be
// subtracted from LoadAvg.
const loadWindow = time.Minute

// loadMeter measures the CPU load caused by Harrier's own jobs: the CPU
// time used by each starter's process tree (the starter and everything it
// started, found in /proc, so that it works with and without containers),
// averaged like the kernel's one-minute load average. Short-lived
// processes that exit between two samples are not counted: the
// per-process times in /proc are all there is without cgroups.
type loadMeter struct {
	procRoot string // "/proc"
	// children is true if the kernel lists each task's children
	// (/proc/PID/task/TID/children), so that a tree is found by walking
	// down from the starter rather than by reading every process.
	children bool

	mu    sync.Mutex
	prev  map[int]uint64 // pid → CPU ticks at the last sample, for tree members
	last  time.Time
	loads map[int]float64 // slot id → load average
}

func newLoadMeter(procRoot string) *loadMeter {
	_, err := os.Stat(filepath.Join(procRoot, "thread-self", "children"))
	return &loadMeter{procRoot: procRoot, children: err == nil, prev: map[int]uint64{}, loads: map[int]float64{}}
}

// sample reads the process table and updates the load of every slot.
// starters maps slot ids to the pids of their running starters; a slot
// without one decays towards zero.
func (lm *loadMeter) sample(starters map[int]int, now time.Time) {
	var all map[int]proc // the whole process table, read only if needed
	trees := map[int]map[int]proc{}
	for slot, pid := range starters {
		if lm.children {
			trees[slot] = readTree(lm.procRoot, pid)
			continue
		}
		if all == nil {
			all = readProcs(lm.procRoot)
		}
		trees[slot] = map[int]proc{}
		for _, p := range descendants(all, pid) {
			trees[slot][p] = all[p]
		}
	}
	lm.mu.Lock()
	defer lm.mu.Unlock()
	dt := now.Sub(lm.last)
	first := lm.last.IsZero()
	lm.last = now
	next := map[int]uint64{}
	used := map[int]uint64{} // slot id → ticks used since the last sample
	for slot, tree := range trees {
		for p, pr := range tree {
			ticks := pr.ticks
			next[p] = ticks
			if prev, ok := lm.prev[p]; ok && ticks >= prev {
				used[slot] += ticks - prev
			} else if !ok {
				used[slot] += ticks // new since the last sample
			}
		}
	}
	lm.prev = next
	if first || dt <= 0 {
		return
	}
	for slot := range lm.loads {
		if _, ok := starters[slot]; !ok {
			lm.loads[slot] = decayLoad(lm.loads[slot], 0, dt)
		}
	}
	for slot := range starters {
		cpus := float64(used[slot]) / clockTicks / dt.Seconds()
		lm.loads[slot] = decayLoad(lm.loads[slot], cpus, dt)
	}
}

// load returns a slot's current load average (CondorLoadAvg).
func (lm *loadMeter) load(slot int) float64 {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	return lm.loads[slot]
}

// decayLoad advances an exponentially weighted load average by dt during
// which the load was cpus.
func decayLoad(prev, cpus float64, dt time.Duration) float64 {
	w := math.Exp(-dt.Seconds() / loadWindow.Seconds())
	return prev*w + cpus*(1-w)
}

// proc is what the load meter needs of one process.
type proc struct {
	ppid  int
	ticks uint64 // user + system CPU time
}

// readTree reads the process tree rooted at pid by following each task's
// list of children. Processes that vanish while it reads are skipped.
func readTree(root string, pid int) map[int]proc {
	out := map[int]proc{}
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if _, seen := out[p]; seen {
			continue
		}
		dir := filepath.Join(root, strconv.Itoa(p))
		b, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil {
			continue
		}
		st, err := parseStat(b)
		if err != nil {
			continue
		}
		out[p] = st
		tasks, _ := os.ReadDir(filepath.Join(dir, "task"))
		for _, t := range tasks {
			b, _ := os.ReadFile(filepath.Join(dir, "task", t.Name(), "children"))
			for _, f := range bytes.Fields(b) {
				if c, err := strconv.Atoi(string(f)); err == nil {
					queue = append(queue, c)
				}
			}
		}
	}
	return out
}

// readProcs reads every process's parent and CPU time. Processes that
// vanish while it reads are skipped.
func readProcs(root string) map[int]proc {
	procs := map[int]proc{}
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, e.Name(), "stat"))
		if err != nil {
			continue
		}
		if p, err := parseStat(b); err == nil {
			procs[pid] = p
		}
	}
	return procs
}

// parseStat parses the parent pid and the user and system CPU times from
// the contents of /proc/PID/stat. The command name, in parentheses, may
// itself contain spaces and parentheses, so fields are counted from the
// last ')'.
func parseStat(b []byte) (proc, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return proc{}, errors.New("parse stat: no command name")
	}
	// After the name: state ppid pgrp session tty_nr tpgid flags minflt
	// cminflt majflt cmajflt utime stime ...
	f := bytes.Fields(b[i+1:])
	if len(f) < 13 {
		return proc{}, fmt.Errorf("parse stat: %d fields after the name, want at least 13", len(f))
	}
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return proc{}, fmt.Errorf("parse stat: parent pid: %w", err)
	}
	utime, err := strconv.ParseUint(string(f[11]), 10, 64)
	if err != nil {
		return proc{}, fmt.Errorf("parse stat: utime: %w", err)
	}
	stime, err := strconv.ParseUint(string(f[12]), 10, 64)
	if err != nil {
		return proc{}, fmt.Errorf("parse stat: stime: %w", err)
	}
	if utime+stime < utime {
		return proc{}, errors.New("parse stat: CPU time overflows")
	}
	return proc{ppid: ppid, ticks: utime + stime}, nil
}

// descendants returns root and every process below it, if root exists.
func descendants(procs map[int]proc, root int) []int {
	if _, ok := procs[root]; !ok {
		return nil
	}
	children := map[int][]int{}
	for pid, p := range procs {
		children[p.ppid] = append(children[p.ppid], pid)
	}
	out := []int{root}
	seen := map[int]bool{root: true}
	for i := 0; i < len(out); i++ {
		for _, c := range children[out[i]] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	return out
}
