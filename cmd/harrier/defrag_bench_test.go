package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkDefrag measures fragmentation: a pool of two 8-core machines,
// each one partitionable slot, kept busy by one user's 1-core jobs of 15
// to 35 seconds (64 of them, four times the pool's cores), while another
// user's two whole-machine jobs (8 cores) wait. Without defragmentation
// they wait until the 1-core jobs run out, since every core that frees is
// taken again at once; with the defrag daemon (its default schedule,
// migrate) a machine is drained by checkpointing its jobs, which queue
// again, and the whole-machine job, its user ahead in the fair share,
// takes it. It reports the median wait of the whole-machine jobs, from
// submission to start (wait-s), for each way in one run.
//
//	go test ./cmd/harrier -run XXX -bench Defrag -benchtime 1x -v
func BenchmarkDefrag(b *testing.B) {
	for _, defrag := range []bool{false, true} {
		name := "without"
		if defrag {
			name = "migrating"
		}
		b.Run(name, func(b *testing.B) {
			var waits []float64
			for range b.N {
				waits = append(waits, defragScenario(b, defrag)...)
			}
			slices.Sort(waits)
			b.ReportMetric(waits[len(waits)/2], "wait-s")
			b.ReportMetric(waits[len(waits)-1], "max-wait-s")
		})
	}
}

// defragScenario runs the scenario once and returns each whole-machine
// job's wait in seconds.
func defragScenario(b *testing.B, defrag bool) []float64 {
	bin := publicBinary(b)
	p := startPoolFrom(b, bin, 2, `NUM_CPUS = 8
MEMORY = 8192
NUM_SLOTS_TYPE_1 = 1
SLOT_TYPE_1 = 100%
SLOT_TYPE_1_PARTITIONABLE = true
NEGOTIATOR_INTERVAL = 2
DEFRAG_INTERVAL = 2
DEFRAG_DRAINING_MACHINES_PER_HOUR = 3600
DEFRAG_MAX_CONCURRENT_DRAINING = 1
`)
	filler, whole := newUser(b), newUser(b)
	dir := b.TempDir()
	_ = os.Chmod(dir, 0o777)
	// Seconds counted one at a time, so that a restored job goes on
	// where it was.
	writeFile(b, filepath.Join(dir, "work.sh"), `#!/bin/sh
i=0
while [ "$i" -lt "$1" ]; do sleep 1; i=$((i + 1)); done
`, 0o755)
	p.submitAs(b, filler.Username, dir, "small.sub", `executable = work.sh
secs = 15 + ($(Process) * 7) % 21
arguments = $INT(secs)
request_cpus = 1
request_memory = 256
queue 64
`)
	eventually(b, 3*time.Minute, "the 1-core jobs to fill the pool", func() bool {
		out, _ := p.harrier(b, "q", "-allusers", "-af", "JobStatus")
		return slices.Index(strings.Fields(out), "1") >= 0 && countField(out, "2") == 16
	})
	c := p.submitAs(b, whole.Username, dir, "whole.sub", `executable = work.sh
arguments = 5
request_cpus = 8
request_memory = 1024
queue 2
`)
	if defrag {
		cmd := exec.Command(bin, "daemon", "defrag", "--config", filepath.Join(p.dir, poolConfigName))
		cmd.Env = append(os.Environ(), asHarrier+"=1")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		}()
	}
	var waits []float64
	for proc := range 2 {
		id := fmt.Sprintf("%d.%d", c, proc)
		if out, code := p.harrier(b, "wait", "--timeout", "600", id); code != 0 {
			b.Fatalf("wait %s: exit %d: %s", id, code, out)
		}
		h := p.historyAd(b, id)
		start, _ := h["JobCurrentStartDate"].(float64)
		queued, _ := h["QDate"].(float64)
		waits = append(waits, start-queued)
	}
	return waits
}

// countField counts the words of out that are want.
func countField(out, want string) int {
	n := 0
	for _, f := range strings.Fields(out) {
		if f == want {
			n++
		}
	}
	return n
}
