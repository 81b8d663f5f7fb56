package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/childproc"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/shadow"
	"harrier.dev/harrier/wire"
)

// fakeShadowEnv makes the test binary a fake shadow (see fakeShadow);
// its value says how the shadow treats a kill.
const fakeShadowEnv = "HARRIER_AGENT_FAKE_SHADOW"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeShadowEnv); mode != "" {
		fakeShadow(mode, os.Stdin, os.Stdout)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakeShadow speaks the shadow's protocol without running jobs: each job
// it is given is ready at once and executing; a kill stops it ("obey"), or
// is ignored ("deaf"). The end of its input ends it, as a real shadow's
// does.
func fakeShadow(mode string, in io.Reader, out io.Writer) {
	commands := childproc.NewReceiver[shadow.Command](in)
	events := childproc.NewSender[shadow.Event](out)
	for {
		c, err := commands.Receive()
		if err != nil {
			return
		}
		switch {
		case c.Job != nil:
			_ = events.Send(shadow.Event{Type: shadow.EventReady, Addr: "127.0.0.1:1", Fingerprint: "fake"})
			_ = events.Send(shadow.Event{Type: shadow.EventExecuting})
		case c.Kill && mode == "obey":
			_ = events.Send(shadow.Event{Type: shadow.EventKilled, Reason: c.Reason})
		}
	}
}

// fakeStartd grants every claim and activation.
type fakeStartd struct {
	wire.UnimplementedStartdServer
}

func (fakeStartd) RequestClaim(context.Context, *wire.RequestClaimRequest) (*wire.RequestClaimReply, error) {
	return &wire.RequestClaimReply{Accepted: true}, nil
}

func (fakeStartd) ActivateClaim(context.Context, *wire.ActivateClaimRequest) (*wire.ActivateClaimReply, error) {
	return &wire.ActivateClaimReply{}, nil
}

func (fakeStartd) KeepAlive(context.Context, *wire.KeepAliveRequest) (*wire.KeepAliveReply, error) {
	return &wire.KeepAliveReply{LeaseSeconds: 60}, nil
}

func (fakeStartd) ReleaseClaim(context.Context, *wire.ReleaseClaimRequest) (*wire.ReleaseClaimReply, error) {
	return &wire.ReleaseClaimReply{}, nil
}

// closedQueue is a queue that counts commits tried after it was marked
// done with.
type closedQueue struct {
	*jobqueue.Log
	done, late atomic.Bool
}

func (q *closedQueue) Commit(ctx context.Context, txn *jobqueue.Txn) error {
	if q.done.Load() {
		q.late.Store(true)
	}
	return q.Log.Commit(ctx, txn)
}

// servedAgent is an agent served on real listeners, with a fake startd
// and fake shadows in mode.
type servedAgent struct {
	a      *Agent
	q      *closedQueue
	startd string
	cancel context.CancelFunc
	served chan error
}

func serveAgent(t *testing.T, dir, mode string, grace time.Duration) *servedAgent {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "pki"), 0o700); err != nil {
		t.Fatal(err)
	}
	ca, err := pki.CreateCA(filepath.Join(dir, "pki"), "test")
	if err != nil {
		t.Fatal(err)
	}
	caPath := filepath.Join(dir, "pki", "ca.pem")
	tlsFor := func(identity string) (server, client string) {
		cert, key := filepath.Join(dir, "pki", identity+".pem"), filepath.Join(dir, "pki", identity+".key")
		if err := ca.Issue(identity, []string{"127.0.0.1"}, cert, key); err != nil {
			t.Fatal(err)
		}
		return cert, key
	}
	agentCert, agentKey := tlsFor("agent@test")
	startdCert, startdKey := tlsFor("startd@test")
	agentServer, err := pki.ServerConfig(agentCert, agentKey, caPath)
	if err != nil {
		t.Fatal(err)
	}
	agentClient, err := pki.ClientConfig(agentCert, agentKey, caPath)
	if err != nil {
		t.Fatal(err)
	}
	startdServer, err := pki.ServerConfig(startdCert, startdKey, caPath)
	if err != nil {
		t.Fatal(err)
	}
	startdLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(wire.ServerOptions(startdServer)...)
	wire.RegisterStartdServer(srv, fakeStartd{})
	go srv.Serve(startdLis)
	t.Cleanup(srv.Stop)

	log, err := jobqueue.Open(filepath.Join(dir, "queue"), jobqueue.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	q := &closedQueue{Log: log}
	t.Cleanup(func() { log.Close() })
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	local, err := net.Listen("unix", filepath.Join(dir, "agent.sock"))
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(fakeShadowEnv, mode)
	a, err := New(Config{
		Name: "agent@test", Logger: slog.New(slog.DiscardHandler), Queue: q,
		TLS: agentServer, ClientTLS: agentClient,
		MatchmakerAddr: "127.0.0.1:1", AdvertiseAddr: tcp.Addr().String(),
		AdvertiseInterval: time.Hour, ShadowCommand: []string{exe},
		ClaimWorkLife: time.Hour, StopGrace: grace,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sa := &servedAgent{a: a, q: q, startd: startdLis.Addr().String(), cancel: cancel, served: make(chan error, 1)}
	go func() { sa.served <- a.Serve(ctx, tcp, local) }()
	return sa
}

// submit queues n idle jobs of the test's user in cluster 1.
func (sa *servedAgent) submit(t *testing.T, n int) {
	t.Helper()
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	txn := &jobqueue.Txn{}
	for p := range n {
		ad, err := classad.Parse(fmt.Sprintf(`[ ClusterId = 1; ProcId = %d; JobStatus = 1; NumJobStarts = 0; Owner = %q; Requirements = true ]`, p, me.Username))
		if err != nil {
			t.Fatal(err)
		}
		txn.NewJob(jobqueue.JobID{Cluster: 1, Proc: p}, ad)
	}
	if err := sa.q.Commit(context.Background(), txn); err != nil {
		t.Fatal(err)
	}
}

// match tells the agent, as the negotiator would, that job p matched a
// slot of the fake startd.
func (sa *servedAgent) match(t *testing.T, p int) {
	t.Helper()
	req := &wire.MatchedRequest{JobId: fmt.Sprintf("1.%d", p), ClaimId: fmt.Sprintf("claim%d", p),
		Slot: fmt.Sprintf("slot%d@test", p), StartdAddr: sa.startd, MachineAd: `[ MyType = "Machine"; Requirements = true ]`}
	if _, err := (&agentService{a: sa.a}).Matched(context.Background(), req); err != nil {
		t.Fatal(err)
	}
}

// waitRunning waits until n jobs run; the deadline only bounds a broken
// test.
func (sa *servedAgent) waitRunning(t *testing.T, n int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		running := 0
		for p := range n {
			if sa.a.jobs.status(jobqueue.JobID{Cluster: 1, Proc: p}) == Running {
				running++
			}
		}
		if running == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d jobs running", running, n)
		}
	}
}

// stop stops the agent and marks the queue done with as Serve returns.
func (sa *servedAgent) stop(t *testing.T) {
	t.Helper()
	sa.cancel()
	err := <-sa.served
	sa.q.done.Store(true)
	if err != nil {
		t.Fatal(err)
	}
	sa.a.mu.Lock()
	left := len(sa.a.runs)
	sa.a.mu.Unlock()
	if left != 0 {
		t.Errorf("Serve returned with %d runs left", left)
	}
}

// An agent stopped while its jobs run stops them, records each stop as
// one move (the job is Idle again, to run elsewhere), and returns only
// then: nothing it started touches the queue after Serve returns.
func TestShutdownFinishesRunsInFlight(t *testing.T) {
	const jobs = 4
	sa := serveAgent(t, t.TempDir(), "obey", time.Hour)
	sa.submit(t, jobs)
	for p := range jobs {
		sa.match(t, p)
	}
	sa.waitRunning(t, jobs)
	sa.stop(t)
	for p := range jobs {
		ad, ok := sa.q.Get(jobqueue.JobID{Cluster: 1, Proc: p})
		if !ok {
			t.Fatalf("job 1.%d lost", p)
		}
		if st, last := statusOf(ad), JobStatus(mustInt(ad, AttrLastJobStatus)); st != Idle || last != Running {
			t.Errorf("job 1.%d is %s (was %s) once the agent stopped, want Idle after Running", p, st, last)
		}
	}
	if err := sa.q.Log.Close(); err != nil {
		t.Fatal(err)
	}
	if sa.q.late.Load() {
		t.Error("a commit came after Serve returned")
	}
}

// An agent whose shadows do not stop their jobs within the stop grace
// abandons the runs: no move is half made (the jobs are still Running in
// the queue, and requeued by the next agent), and Serve returns once the
// runs have.
func TestShutdownAbandonsRunsAfterGrace(t *testing.T) {
	const jobs = 3
	dir := t.TempDir()
	sa := serveAgent(t, dir, "deaf", 50*time.Millisecond)
	sa.submit(t, jobs)
	for p := range jobs {
		sa.match(t, p)
	}
	sa.waitRunning(t, jobs)
	sa.stop(t)
	if err := sa.q.Log.Close(); err != nil {
		t.Fatal(err)
	}
	if sa.q.late.Load() {
		t.Error("a commit came after Serve returned")
	}
	q, err := jobqueue.Open(filepath.Join(dir, "queue"), jobqueue.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	for p := range jobs {
		ad, ok := q.Get(jobqueue.JobID{Cluster: 1, Proc: p})
		if !ok {
			t.Fatalf("job 1.%d lost", p)
		}
		if st := statusOf(ad); st != Running {
			t.Errorf("abandoned job 1.%d is %s, want Running (its stop was abandoned whole)", p, st)
		}
	}
	a := newTestAgent(t, q)
	if err := a.recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	for p := range jobs {
		if st := a.jobs.status(jobqueue.JobID{Cluster: 1, Proc: p}); st != Idle {
			t.Errorf("job 1.%d is %s after the restart, want Idle", p, st)
		}
	}
}

// A stopping agent starts no run.
func TestStoppingAgentRefusesRuns(t *testing.T) {
	sa := serveAgent(t, t.TempDir(), "obey", time.Hour)
	sa.submit(t, 1)
	sa.stop(t)
	req := &wire.MatchedRequest{JobId: "1.0", ClaimId: "c", Slot: "slot1@test", StartdAddr: sa.startd, MachineAd: "[]"}
	if err := sa.a.startRun(jobqueue.JobID{Cluster: 1}, req); !errors.Is(err, errStopping) {
		t.Errorf("run started by a stopped agent: %v, want errStopping", err)
	}
}

func mustInt(ad *classad.ClassAd, name string) int64 {
	n, _ := ad.EvalInt(name)
	return n
}
