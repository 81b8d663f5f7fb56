package matchmaker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

// fakeNotifier records notifications and fails those to startds in fail.
type fakeNotifier struct {
	fail map[string]bool // startd addresses that do not answer

	mu     sync.Mutex
	startd []*wire.StartdMatchedRequest
	agent  []*wire.MatchedRequest
	told   chan *wire.MatchedRequest // every agent notification
}

func newFakeNotifier(failing ...string) *fakeNotifier {
	n := &fakeNotifier{fail: map[string]bool{}, told: make(chan *wire.MatchedRequest, 100)}
	for _, a := range failing {
		n.fail[a] = true
	}
	return n
}

func (n *fakeNotifier) StartdMatched(ctx context.Context, addr string, req *wire.StartdMatchedRequest) error {
	if n.fail[addr] {
		return errors.New("connection refused")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.startd = append(n.startd, req)
	return nil
}

func (n *fakeNotifier) AgentMatched(ctx context.Context, addr string, req *wire.MatchedRequest) error {
	n.mu.Lock()
	n.agent = append(n.agent, req)
	n.mu.Unlock()
	n.told <- req
	return nil
}

// waitMatch waits for the next agent notification.
func (n *fakeNotifier) waitMatch(t *testing.T) *wire.MatchedRequest {
	t.Helper()
	select {
	case req := <-n.told:
		return req
	case <-time.After(30 * time.Second):
		t.Fatal("no match notified")
		return nil
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startDriver runs a driver whose periodic cycle never comes during a test,
// so that every cycle seen was caused by an advertisement.
func startDriver(t *testing.T, n Notifier) (*driver, *collectorEndpoint) {
	c := NewCollector(newFakeClock())
	d := &driver{
		log: quietLogger(), collector: c, notifier: n, clock: newFakeClock(), name: "negotiator@test",
		metrics:  newCycleMetrics(prometheus.NewRegistry()),
		interval: time.Hour, debounce: time.Millisecond,
		kick: make(chan struct{}, 1), sem: make(chan struct{}, 4),
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return d, &collectorEndpoint{collector: c, kick: d.Kick, defaultLease: time.Minute}
}

func advertiseMachine(t *testing.T, e *collectorEndpoint, name, addr string) {
	t.Helper()
	text := machineText(name, StateUnclaimed, 1024, `StartdAddr = "`+addr+`"`)
	if _, err := e.Advertise(asStartd, &wire.AdvertiseRequest{Type: TypeMachine, Name: name, Ad: text}); err != nil {
		t.Fatal(err)
	}
}

func advertiseJobs(t *testing.T, e *collectorEndpoint, agent string, texts ...string) {
	t.Helper()
	if _, err := e.AdvertiseJobs(asAgent, &wire.AdvertiseJobsRequest{Agent: agent, AgentAddr: agent + ":9", Ads: texts}); err != nil {
		t.Fatal(err)
	}
}

func TestNewMachineTriggersCycle(t *testing.T) {
	n := newFakeNotifier()
	d, e := startDriver(t, n)
	// Stored without asking for a cycle: only the machine may cause one.
	d.collector.AdvertiseJobs("ag", "ag:9", []Request{job(t, "", 1, 0, "alice", "")}, time.Minute)
	advertiseMachine(t, e, "slot1@a", "a:1")
	req := n.waitMatch(t)
	if req.JobId != "1.0" || req.Slot != "slot1@a" || req.StartdAddr != "a:1" {
		t.Errorf("agent told %+v", req)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.startd) != 1 || n.startd[0].ClaimId != req.ClaimId || n.startd[0].Slot != "slot1@a" {
		t.Fatalf("startd told %v; agent's claim %s", n.startd, req.ClaimId)
	}
	if len(req.ClaimId) != 32 {
		t.Errorf("claim id %q: want 128 bits in hex", req.ClaimId)
	}
	job, err := classad.Parse(n.startd[0].JobAd)
	if err != nil {
		t.Fatalf("job ad sent to startd: %v", err)
	}
	if owner, _ := job.EvalString("Owner"); owner != "alice" {
		t.Errorf("job ad sent to startd has Owner %q", owner)
	}
}

func TestMatchIsRecordedAndNextJobWaits(t *testing.T) {
	n := newFakeNotifier()
	_, e := startDriver(t, n)
	advertiseMachine(t, e, "slot1@a", "a:1")
	advertiseJobs(t, e, "ag", jobText(1, 0, "alice", ""))
	if req := n.waitMatch(t); req.JobId != "1.0" {
		t.Fatalf("matched %s, want 1.0", req.JobId)
	}
	ctx := context.Background()
	machines, err := e.Query(ctx, &wire.QueryRequest{Type: TypeMachine, Constraint: `State == "Matched"`})
	if err != nil || len(machines.Ads) != 1 {
		t.Errorf("matched machines: %v, %v", machines, err)
	}
	jobs, err := e.Query(ctx, &wire.QueryRequest{Type: TypeJob})
	if err != nil || len(jobs.Ads) != 0 {
		t.Errorf("idle jobs after the match: %v, %v", jobs, err)
	}
	// The startd comes back Unclaimed: the agent's next job gets it.
	advertiseJobs(t, e, "ag", jobText(2, 0, "alice", ""))
	advertiseMachine(t, e, "slot1@a", "a:1")
	if req := n.waitMatch(t); req.JobId != "2.0" {
		t.Errorf("matched %s, want 2.0", req.JobId)
	}
}

func TestUnreachableStartdReturnsJob(t *testing.T) {
	n := newFakeNotifier("dead:1")
	_, e := startDriver(t, n)
	// The dead startd's slot ranks first by name; after it fails, the job
	// goes back and is matched with the live one.
	advertiseMachine(t, e, "slot1@a", "dead:1")
	advertiseMachine(t, e, "slot1@b", "live:1")
	advertiseJobs(t, e, "ag", jobText(1, 0, "alice", ""))
	if req := n.waitMatch(t); req.Slot != "slot1@b" || req.JobId != "1.0" {
		t.Errorf("agent told %+v", req)
	}
}

func TestCyclePublishesStatistics(t *testing.T) {
	n := newFakeNotifier()
	d, e := startDriver(t, n)
	d.collector.Advertise(TypeMachine, "slot1@a", mustParse(t, machineText("slot1@a", StateUnclaimed, 1024, "")), time.Minute)
	d.collector.AdvertiseJobs("ag", "ag:9", []Request{job(t, "", 1, 0, "alice", ""), job(t, "", 1, 1, "alice", "")}, time.Minute)
	s := d.cycle(context.Background())
	if s.Matches != 1 || s.Rejections != 1 || s.IdleJobs != 2 || s.CandidateSlots != 1 {
		t.Errorf("stats %+v", s)
	}
	reply, err := e.Query(context.Background(), &wire.QueryRequest{Type: TypeNegotiator})
	if err != nil || len(reply.Ads) != 1 {
		t.Fatalf("negotiator ads %v, %v", reply, err)
	}
	ad := mustParse(t, reply.Ads[0])
	for attr, want := range map[string]int64{
		"LastNegotiationCycleMatches0": 1, "LastNegotiationCycleRejections0": 1,
		"LastNegotiationCycleNumIdleJobs0": 2, "LastNegotiationCycleCandidateSlots0": 1,
	} {
		if got, ok := ad.EvalInt(attr); !ok || got != want {
			t.Errorf("%s = %d (%v), want %d", attr, got, ok, want)
		}
	}
	n.waitMatch(t)
}

func TestPeriodicCycleMatchesWithoutEvents(t *testing.T) {
	n := newFakeNotifier()
	c := NewCollector(newFakeClock())
	d := &driver{
		log: quietLogger(), collector: c, notifier: n, clock: newFakeClock(), name: "negotiator@test",
		metrics:  newCycleMetrics(prometheus.NewRegistry()),
		interval: 10 * time.Millisecond, debounce: time.Hour,
		kick: make(chan struct{}, 1), sem: make(chan struct{}, 1),
	}
	// Stored behind the driver's back: no kick, only the timer can match.
	c.Advertise(TypeMachine, "slot1@a", mustParse(t, machineText("slot1@a", StateUnclaimed, 1024, "")), time.Minute)
	c.AdvertiseJobs("ag", "ag:9", []Request{job(t, "", 1, 0, "alice", "")}, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	if req := n.waitMatch(t); req.JobId != "1.0" {
		t.Errorf("matched %s, want 1.0", req.JobId)
	}
}

func TestCyclePublishesPrioritiesAndSignificantAttributes(t *testing.T) {
	n := newFakeNotifier()
	clock := newFakeClock()
	c := NewCollector(clock)
	acct := NewAccountant(time.Hour, 1, nil)
	d := &driver{
		log: quietLogger(), collector: c, notifier: n, clock: clock, name: "negotiator@test",
		metrics:    newCycleMetrics(prometheus.NewRegistry()),
		negotiator: Negotiator{Priorities: acct}, accountant: acct,
		interval: time.Hour, debounce: time.Hour,
		kick: make(chan struct{}, 1), sem: make(chan struct{}, 1),
	}
	busy := machineText("slot1@a", StateClaimed, 1024, `RemoteOwner = "bob"; Rank = TARGET.Department == "CS"`)
	c.Advertise(TypeMachine, "slot1@a", mustParse(t, busy), 10*time.Hour)
	d.cycle(context.Background())
	clock.Advance(time.Hour)
	d.cycle(context.Background())
	ads := c.Query(TypeAccounting, classad.Expr{})
	if len(ads) != 1 {
		t.Fatalf("accounting ads %v", ads)
	}
	if name, _ := ads[0].EvalString("Name"); name != "bob" {
		t.Errorf("accounting ad for %q", name)
	}
	// One half-life at one slot from 0.5: 0.75.
	if p, _ := ads[0].EvalReal("Priority"); p != 0.75 {
		t.Errorf("bob's priority %v, want 0.75", p)
	}
	neg := c.Query(TypeNegotiator, classad.Expr{})
	if len(neg) != 1 {
		t.Fatalf("negotiator ads %v", neg)
	}
	if s, _ := neg[0].EvalString(AttrSignificantAttributes); s != "department,requestmemory" {
		t.Errorf("significant attributes %q", s)
	}
}

func TestResourceRequestMatchesItsJobsInOrder(t *testing.T) {
	n := newFakeNotifier()
	_, e := startDriver(t, n)
	advertiseMachine(t, e, "slot1@a", "a:1")
	advertiseMachine(t, e, "slot1@b", "b:1")
	advertiseJobs(t, e, "ag", `[ MyType = "Job"; Owner = "alice"; ClusterId = 3; ProcId = 0; RequestMemory = 512;
		AutoClusterId = 77; JobIds = { "3.0", "3.1", "3.2" }; Requirements = TARGET.Memory >= MY.RequestMemory ]`)
	got := map[string]bool{n.waitMatch(t).JobId: true, n.waitMatch(t).JobId: true}
	if !got["3.0"] || !got["3.1"] {
		t.Errorf("matched %v, want 3.0 and 3.1", got)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, req := range n.startd {
		job := mustParse(t, req.JobAd)
		id, _ := job.EvalString("JobId")
		if !got[id] {
			t.Errorf("startd told of job %q", id)
		}
		if _, ok := job.Lookup("JobIds"); ok {
			t.Errorf("startd got the request's job list: %s", req.JobAd)
		}
	}
	left, err := e.Query(context.Background(), &wire.QueryRequest{Type: TypeJob})
	if err != nil || len(left.Ads) != 1 {
		t.Fatalf("requests left %v, %v", left, err)
	}
}
