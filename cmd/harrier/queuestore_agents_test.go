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

	"harrier.dev/harrier/internal/pgtest"
)

// TestAgentsShareQueueDatabase: two agents on two hosts keep their queues
// in one PostgreSQL database. Each numbers its own clusters and runs only
// its own jobs; q -global lists both agents' jobs, to each user as q would
// show them; both agents are killed (SIGKILL) while jobs run and started
// again, and every job completes exactly once, under its own agent. Then
// psql answers the provenance question from the views: what ran on a
// host, and what did it read.
func TestAgentsShareQueueDatabase(t *testing.T) {
	srv := pgtest.Start(t, pgtest.Options{})
	db := srv.NewDatabase(t)
	n := newNetnsPool(t, "cm", "s1", "s2", "exec1", "exec2")
	n.extra = "QUEUE_STORE = postgres\nQUEUE_DSN = " + srv.URL(db)
	roles := map[string]string{"cm": "matchmaker", "s1": "agent", "s2": "agent", "exec1": "startd", "exec2": "startd"}
	n.configure("cm", roles)
	n.daemon("cm", "matchmaker")
	agents := map[string]*exec.Cmd{}
	for _, h := range []string{"s1", "s2"} {
		n.daemon(h, "agent")
		agents[h] = n.procs[len(n.procs)-1]
	}
	n.daemon("exec1", "startd")
	n.daemon("exec2", "startd")
	n.waitForSlots("s1", "slot1@exec1", "slot1@exec2")

	// Each job reads its agent's in.txt through remote I/O and runs long
	// enough for the agents to be killed under it.
	const jobs = 3
	input := strings.Repeat("provenance\n", 1000)
	for _, h := range []string{"s1", "s2"} {
		work := filepath.Join(n.hosts[h].dir, "work")
		writeFile(t, filepath.Join(work, "in.txt"), input, 0o644)
		writeFile(t, filepath.Join(work, "job.sh"), "#!/bin/sh\nwc -c < in.txt\nsleep 5\n", 0o755)
		writeFile(t, filepath.Join(work, "job.sub"), fmt.Sprintf(
			"executable = job.sh\noutput = out.$(Process)\nerror = err.$(Process)\nlog = job.log\nqueue %d\n", jobs), 0o644)
		_ = os.Chmod(work, 0o755)
		out, code := n.tool(h, "submit", filepath.Join(work, "job.sub"))
		// Cluster numbers are each agent's own: both start at 1.
		if code != 0 || !strings.Contains(out, fmt.Sprintf("%d job(s) submitted to cluster 1.", jobs)) {
			t.Fatalf("submit on %s: exit %d: %s", h, code, out)
		}
	}

	// q -global lists every agent's jobs, agent by agent.
	out, code := n.tool("s1", "q", "-global", "-nobatch")
	if code != 0 || !strings.Contains(out, "-- Schedd: s1\n") || !strings.Contains(out, "-- Schedd: s2\n") ||
		strings.Count(out, " root ") != 2*jobs {
		t.Errorf("q -global on s1: exit %d:\n%s", code, out)
	}
	out, code = n.tool("s2", "q", "-global", "-af", "GlobalJobId")
	ids := strings.Fields(out)
	if code != 0 || len(ids) != 2*jobs || !strings.HasPrefix(ids[0], "s1#1.0#") || !strings.HasPrefix(ids[len(ids)-1], fmt.Sprintf("s2#1.%d#", jobs-1)) {
		t.Errorf("q -global -af GlobalJobId on s2: exit %d:\n%s", code, out)
	}
	// Another user sees, as harrier q shows them, only their own jobs by
	// default, and every agent's with -allusers.
	u := newUser(t)
	bin := publicBinary(t)
	env := []string{asHarrier + "=1", "HARRIER_POOL=" + n.hosts["s1"].dir}
	if out, code := asUser(t, bin, u.Username, env, "q", "-global"); code != 0 || !strings.Contains(out, "All queues are empty") {
		t.Errorf("q -global as %s: exit %d:\n%s", u.Username, code, out)
	}
	if out, code := asUser(t, bin, u.Username, env, "q", "-global", "-allusers", "-totals"); code != 0 ||
		strings.Count(out, fmt.Sprintf("Total for query: %d jobs", jobs)) != 2 {
		t.Errorf("q -global -allusers -totals as %s: exit %d:\n%s", u.Username, code, out)
	}

	// Kill both agents while jobs run, and start them again.
	eventually(t, 120*time.Second, "a job to run", func() bool {
		return strings.TrimSpace(srv.Psql(t, db, "SELECT count(*) FROM jobs WHERE status_name = 'Running'")) != "0"
	})
	for h, cmd := range agents {
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		n.procs = slices.DeleteFunc(n.procs, func(c *exec.Cmd) bool { return c == cmd })
		n.daemon(h, "agent")
	}
	for _, h := range []string{"s1", "s2"} {
		eventually(t, 60*time.Second, h+"'s agent to answer again", func() bool {
			_, code := n.tool(h, "q")
			return code == 0
		})
		for p := range jobs {
			if out, code := n.tool(h, "wait", "--timeout", "180", fmt.Sprintf("1.%d", p)); code != 0 {
				t.Fatalf("wait for 1.%d on %s: exit %d: %s", p, h, code, out)
			}
		}
	}

	// Every job completed once, in its own agent's history, with one
	// submit and one terminated event; and some job's run was cut by the
	// agents' deaths.
	got := srv.Psql(t, db, `SELECT h.agent, h.cluster, h.proc, h.status_name, h.exit_code, count(*) OVER (PARTITION BY h.agent, h.cluster, h.proc),
			split_part(h.global_job_id, '#', 1),
			(SELECT count(*) FROM job_events e WHERE (e.agent, e.cluster, e.proc) = (h.agent, h.cluster, h.proc) AND e.event = 'Submit'),
			(SELECT count(*) FROM job_events e WHERE (e.agent, e.cluster, e.proc) = (h.agent, h.cluster, h.proc) AND e.event = 'Terminated')
		FROM job_history h ORDER BY 1, 2, 3`)
	var want []string
	for _, h := range []string{"s1", "s2"} {
		for p := range jobs {
			want = append(want, fmt.Sprintf("%s|1|%d|Completed|0|1|%s|1|1", h, p, h))
		}
	}
	if strings.TrimSpace(got) != strings.Join(want, "\n") {
		t.Errorf("job_history (agent, cluster, proc, status, exit code, records, GlobalJobId's agent, submit events, terminated events):\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	if evicted := srv.Psql(t, db, `SELECT count(*) FROM job_events WHERE event = 'Evicted' AND reason LIKE '%agent restarted%'`); strings.TrimSpace(evicted) == "0" {
		t.Error("no job was running when the agents were killed")
	}
	if left := srv.Psql(t, db, "SELECT count(*) FROM jobs"); strings.TrimSpace(left) != "0" {
		t.Errorf("%s jobs left in the queues", left)
	}
	for _, h := range []string{"s1", "s2"} {
		out, code := n.tool(h, "history", "-af", "GlobalJobId")
		ids := strings.Fields(out)
		if code != 0 || len(ids) != jobs {
			t.Errorf("history on %s: exit %d:\n%s", h, code, out)
		}
		for _, id := range ids {
			if !strings.HasPrefix(id, h+"#1.") {
				t.Errorf("history on %s holds %s", h, id)
			}
		}
		log, _ := os.ReadFile(filepath.Join(n.hosts[h].dir, "work", "job.log"))
		if c := strings.Count(string(log), "Job terminated."); c != jobs {
			t.Errorf("%s's job.log tells of %d terminations, want %d:\n%s", h, c, jobs, log)
		}
	}

	// The provenance question, asked of each execute host: what ran on it
	// today, and what did it read? The answer agrees with where each
	// agent says its jobs ran, and with what they read.
	var ran []string
	for _, h := range []string{"s1", "s2"} {
		out, _ := n.tool(h, "history", "-af", "ClusterId", "ProcId", "LastRemoteHost")
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(line)
			if len(f) == 3 {
				ran = append(ran, fmt.Sprintf("%s|%s|%s.%s|%s|%d", strings.TrimPrefix(f[2], "slot1@"), h, f[0], f[1],
					filepath.Join(n.hosts[h].dir, "work", "in.txt"), len(input)))
			}
		}
	}
	slices.Sort(ran)
	var answers []string
	for _, machine := range []string{"exec1", "exec2"} {
		out := srv.Psql(t, db, fmt.Sprintf(`SELECT machine, agent, cluster || '.' || proc, file, bytes_read FROM usage
			WHERE machine = '%s' AND started >= now() - interval '1 day' AND file LIKE '%%/in.txt' ORDER BY agent, cluster, proc`, machine))
		answers = append(answers, strings.Fields(out)...)
	}
	if len(ran) != 2*jobs || !slices.Equal(answers, ran) {
		t.Errorf("what ran on exec1 and exec2 today, and what it read (psql on the usage view):\n%s\nwant (from harrier history):\n%s",
			strings.Join(answers, "\n"), strings.Join(ran, "\n"))
	}
}
