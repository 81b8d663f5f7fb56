package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkDrain moves 1, 4 or 16 counting jobs (one a slot) between
// the two execute hosts of a netns pool, back and forth, alternately by
// draining the host they are on (the drain cancelled afterwards) and, as
// the baseline, by harrier vacate of their cluster (each job must run on
// another host than its last). It reports the median time from the
// command to the host having no job left (drain-empty-s, vacate-empty-s)
// and to every job running on the other host (drain-elsewhere-s,
// vacate-elsewhere-s), as harrier status and harrier q see them, polled.
// An even -benchtime gives each way half the iterations.
//
//	go test ./cmd/harrier -run XXX -bench Drain -benchtime 6x -v
func BenchmarkDrain(b *testing.B) {
	for _, jobs := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("%djobs", jobs), func(b *testing.B) { benchmarkDrain(b, jobs) })
	}
}

func benchmarkDrain(b *testing.B, jobs int) {
	n := newNetnsPool(b, "submit", "exec1", "exec2")
	roles := map[string]string{"submit": "matchmaker,agent", "exec1": "startd", "exec2": "startd"}
	n.configure("submit", roles)
	for _, h := range []string{"exec1", "exec2"} {
		appendConf(b, filepath.Join(n.hosts[h].dir, poolConfigName), fmt.Sprintf("NUM_SLOTS = %d\n", jobs))
	}
	n.daemon("submit", "matchmaker")
	n.daemon("submit", "agent")
	n.master("exec1", "startd")
	n.master("exec2", "startd")
	n.waitForSlots("submit", "slot1@exec1", "slot1@exec2")

	work := filepath.Join(n.hosts["submit"].dir, "work")
	if out, err := exec.Command("cp", "-a", filepath.Join("..", "..", "examples", "migration"), work).CombinedOutput(); err != nil {
		b.Fatalf("copy example: %v: %s", err, out)
	}
	// Each job counts in its own directory; all start on exec1.
	writeFile(b, filepath.Join(work, "count.sub"), fmt.Sprintf(`executable   = count.sh
arguments    = 1000000
initialdir   = job$(Process)
output       = count.out
requirements = ifThenElse(MY.LastRemoteHost =?= undefined, TARGET.Machine == "exec1", TARGET.Machine =!= splitslotname(MY.LastRemoteHost)[1])
queue %d
`, jobs), 0o644)
	for i := range jobs {
		if err := os.MkdirAll(filepath.Join(work, fmt.Sprintf("job%d", i)), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.Link(filepath.Join(work, "count.sh"), filepath.Join(work, fmt.Sprintf("job%d", i), "count.sh")); err != nil {
			b.Fatal(err)
		}
	}
	for d := work; d != "/" && d != "/tmp"; d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755)
	}
	if out, code := n.tool("submit", "submit", filepath.Join(work, "count.sub")); code != 0 {
		b.Fatalf("submit: exit %d: %s", code, out)
	}
	// on counts the jobs running on each host.
	on := func() map[string]int {
		out, code := n.tool("submit", "q", "-json")
		var ads []map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &ads) != nil {
			b.Fatalf("q -json: exit %d: %s", code, out)
		}
		hosts := map[string]int{}
		for _, ad := range ads {
			if st, _ := ad["JobStatus"].(float64); st == 2 {
				remote, _ := ad["RemoteHost"].(string)
				_, h, _ := strings.Cut(remote, "@")
				hosts[h]++
			}
		}
		return hosts
	}
	// busy counts the slots of host with a job on them.
	busy := func(host string) int {
		out, _ := n.tool("submit", "status", "-af", "State", "-constraint", fmt.Sprintf("Machine == %q", host))
		return strings.Count(out, "Claimed") + strings.Count(out, "Preempting")
	}
	eventually(b, 3*time.Minute, "every job to run on exec1", func() bool { return on()["exec1"] == jobs })

	times := map[string][]time.Duration{}
	from, to := "exec1", "exec2"
	i := 0
	for b.Loop() {
		way := []string{"drain", "vacate"}[i%2]
		i++
		start := time.Now()
		var out string
		var code int
		if way == "drain" {
			out, code = n.tool(from, "drain", from)
		} else {
			out, code = n.tool("submit", "vacate", "1")
		}
		if code != 0 {
			b.Fatalf("%s %s: exit %d: %s", way, from, code, out)
		}
		var emptied time.Duration
		eventually(b, 5*time.Minute, "every job to run on "+to, func() bool {
			if emptied == 0 && busy(from) == 0 {
				emptied = time.Since(start)
			}
			return emptied != 0 && on()[to] == jobs
		})
		took := time.Since(start)
		times[way+"-empty"] = append(times[way+"-empty"], emptied)
		times[way+"-elsewhere"] = append(times[way+"-elsewhere"], took)
		b.Logf("%s of %s with %d jobs: empty after %s, every job on %s after %s", way, from, jobs,
			emptied.Round(time.Millisecond), to, took.Round(time.Millisecond))
		b.StopTimer()
		if way == "drain" {
			if out, code := n.tool(from, "drain", "-cancel", from); code != 0 {
				b.Fatalf("drain -cancel %s: exit %d: %s", from, code, out)
			}
			eventually(b, time.Minute, from+" back in service", func() bool {
				out, _ := n.tool("submit", "status", "-af", "Draining", "-constraint", fmt.Sprintf("Machine == %q", from))
				return strings.Count(out, "false") == jobs
			})
		}
		from, to = to, from
		b.StartTimer()
	}
	b.StopTimer()
	for name, ds := range times {
		slices.Sort(ds)
		b.ReportMetric(ds[len(ds)/2].Seconds(), name+"-s")
	}
	b.ReportMetric(0, "ns/op")
}
