package matchmaker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/wire"
)

// Contexts of calls made to an endpoint directly, as the access check
// leaves them for a startd and for an agent.
var (
	asStartd = wire.WithPeer(context.Background(), wire.Peer{Identity: "startd@test", Role: pki.RoleStartd})
	asAgent  = wire.WithPeer(context.Background(), wire.Peer{Identity: "agent@test", Role: pki.RoleAgent})
)

// fakeClock is a Clock that moves only when told.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func mustParse(t testing.TB, text string) *classad.ClassAd {
	t.Helper()
	ad, err := classad.Parse(text)
	if err != nil {
		t.Fatalf("parse %s: %v", text, err)
	}
	return ad
}

// machineText returns a slot ad; extra is spliced in as further attributes.
func machineText(name, state string, memory int, extra string) string {
	return fmt.Sprintf(`[ MyType = "Machine"; Name = %q; Machine = "host"; StartdAddr = "127.0.0.1:1";
		State = %q; Activity = "Idle"; Arch = "X86_64"; OpSys = "LINUX"; Cpus = 1; Memory = %d; Disk = 1000000;
		Requirements = TARGET.RequestMemory <= MY.Memory; %s ]`, name, state, memory, extra)
}

func machine(t testing.TB, name, state string, memory int, extra string) Machine {
	return Machine{Name: name, Ad: mustParse(t, machineText(name, state, memory, extra))}
}

// jobText returns a job ad; extra is spliced in as further attributes.
func jobText(cluster, proc int, owner, extra string) string {
	return fmt.Sprintf(`[ MyType = "Job"; ClusterId = %d; ProcId = %d; Owner = %q;
		RequestCpus = 1; RequestMemory = 512; RequestDisk = 1000;
		Requirements = TARGET.Arch == "X86_64" && TARGET.Memory >= MY.RequestMemory; %s ]`, cluster, proc, owner, extra)
}

// job returns a request for one job.
func job(t testing.TB, agent string, cluster, proc int, owner, extra string) Request {
	id := fmt.Sprintf("%d.%d", cluster, proc)
	return Request{ID: id, Agent: agent, AgentAddr: "127.0.0.1:2",
		Ad: mustParse(t, jobText(cluster, proc, owner, extra)), JobIDs: []string{id}}
}

// matchOf returns the match of r's first job with m.
func matchOf(r Request, m Machine) Match {
	return Match{Job: Job{ID: r.JobIDs[0], Agent: r.Agent, AgentAddr: r.AgentAddr, Ad: r.Ad}, Request: r.ID, Machine: m}
}

// manyJobs is a request of n jobs of owner in cluster, with extra
// attributes.
func manyJobs(t testing.TB, owner string, cluster, n int, extra string) Request {
	r := job(t, "ag", cluster, 0, owner, extra)
	for p := 1; p < n; p++ {
		r.JobIDs = append(r.JobIDs, fmt.Sprintf("%d.%d", cluster, p))
	}
	return r
}

// sharesOf counts a cycle's matches by whom each is charged to.
func sharesOf(res Result) map[string]int {
	out := map[string]int{}
	for _, m := range res.Matches {
		out[chargedTo(m.Job.Ad, "Owner")]++
	}
	return out
}
