package agent_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/agent"
	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/childproc"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/peercred"
	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/wire"
)

// The tests in this file run a real agent on a durable queue and carry a
// job through its life as the pool would: the test submits it on the
// agent's local socket, tells the agent of a match as the matchmaker does
// (over mutual TLS, with a matchmaker's certificate), and a fake startd
// grants the claim. The agent runs a real child process as the claim's
// shadow: a shell script that speaks the shadow's protocol (shadow.Command
// lines in, shadow.Event lines out) and reports what the test scripts.

// patience bounds every wait, so that a broken agent fails its test
// instead of hanging the run; nothing is expected to come near it.
const patience = time.Minute

// Fake shadows. Each reads the job, says it is ready for the starter (the
// agent then activates the claim), and reports what its name says; all
// read the agent's commands until their input ends.
const (
	readyShadow = `read job
echo '{"type":"ready","addr":"127.0.0.1:9","fingerprint":"00"}'
`
	drain = `while read cmd; do :; done
`
	// A job that runs, is suspended and continued by the machine's owner,
	// reports its usage and a checkpoint that failed, and exits with 3.
	exitingShadow = readyShadow + `echo '{"type":"executing","host":"exec"}'
echo '{"type":"suspended","reason":"the owner came back"}'
echo '{"type":"resumed"}'
echo '{"type":"usage","user_cpu":1,"memory":1048576}'
echo '{"type":"checkpoint_failed","reason":"no criu here"}'
echo '{"type":"exited","exit_code":3,"user_cpu":1.5,"sys_cpu":0.5,"max_rss":2097152,"files":[{"path":"/data/in","opens":1,"reads":2,"bytes_read":10}]}'
` + drain
	// A job that cannot run as submitted.
	holdingShadow = readyShadow + `echo '{"type":"hold","reason":"Cannot fetch executable /x","code":6}'
` + drain
	// A job that runs until the agent's command, and then reports what
	// the command asked: killed for a kill, checkpointed and evicted for a
	// vacate.
	obeyingShadow = readyShadow + `echo '{"type":"executing","host":"exec"}'
while read cmd; do
	case "$cmd" in
	*'"kill":true'*) echo '{"type":"killed","reason":"told to"}' ;;
	*'"vacate":true'*) echo '{"type":"checkpointed","vacate":true,"image_bytes":100,"stored_bytes":50,"dump_seconds":0.25}'
		echo '{"type":"evicted","reason":"the agent vacated the job, which was checkpointed"}' ;;
	*'"checkpoint":true'*) echo '{"type":"checkpointed","image_bytes":100,"stored_bytes":50}' ;;
	esac
done
`
	// A shadow that gives up on the job when the agent tells it to (the
	// claim could not be activated), before any starter came.
	abandoningShadow = readyShadow + `while read cmd; do
	case "$cmd" in *'"kill":true'*) echo '{"type":"failed","reason":"killed before a starter came"}' ;; esac
done
`
	// A shadow that dies without a word.
	dyingShadow = readyShadow + "exit 1\n"
	// A claim's shadow that runs each job it is given to a clean exit;
	// its fingerprint is its process id.
	reusedShadow = `while read cmd; do
	case "$cmd" in *'"job":'*)
		echo '{"type":"ready","addr":"127.0.0.1:9","fingerprint":"'$$'"}'
		echo '{"type":"executing","host":"exec"}'
		echo '{"type":"exited","exit_code":0}' ;;
	esac
done
`
)

// fakeStartd grants claims, as far as the agent can tell.
type fakeStartd struct {
	wire.UnimplementedStartdServer
	refuseClaim, refuseActivation bool
	// refuseSlots are slots whose claims it refuses.
	refuseSlots map[string]bool

	mu          sync.Mutex
	claims      []*wire.RequestClaimRequest
	activations []*wire.ActivateClaimRequest
	releases    []string
}

func (s *fakeStartd) RequestClaim(_ context.Context, req *wire.RequestClaimRequest) (*wire.RequestClaimReply, error) {
	s.mu.Lock()
	s.claims = append(s.claims, req)
	s.mu.Unlock()
	if s.refuseClaim || s.refuseSlots[req.Slot] {
		return &wire.RequestClaimReply{Reason: "the owner is back"}, nil
	}
	_, host, _ := strings.Cut(req.Slot, "@")
	return &wire.RequestClaimReply{Accepted: true, MachineAd: `[ MyType = "Machine"; Name = "` + req.Slot + `"; Machine = "` + host + `"; Requirements = true; CheckpointPlatform = "LINUX X86_64 fake" ]`}, nil
}

func (s *fakeStartd) ActivateClaim(_ context.Context, req *wire.ActivateClaimRequest) (*wire.ActivateClaimReply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.activations = append(s.activations, req)
	if s.refuseActivation {
		return nil, status.Error(codes.PermissionDenied, "not your claim")
	}
	return &wire.ActivateClaimReply{}, nil
}

func (s *fakeStartd) KeepAlive(context.Context, *wire.KeepAliveRequest) (*wire.KeepAliveReply, error) {
	return &wire.KeepAliveReply{LeaseSeconds: 60}, nil
}

func (s *fakeStartd) ReleaseClaim(_ context.Context, req *wire.ReleaseClaimRequest) (*wire.ReleaseClaimReply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releases = append(s.releases, req.ClaimId)
	return &wire.ReleaseClaimReply{}, nil
}

func (s *fakeStartd) seen() (activations []*wire.ActivateClaimRequest, releases []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append(activations, s.activations...), append(releases, s.releases...)
}

// pool is an agent with its fake startd, and the clients the test plays
// the matchmaker and a user with.
type pool struct {
	t          *testing.T
	startd     *fakeStartd
	startdAddr string
	ckptDir    string
	schedd     wire.ScheddClient
	matchmaker wire.AgentClient
}

// newPool runs an agent whose shadows run script, with a fake startd;
// tweak, if given, adjusts the agent's configuration.
func newPool(t *testing.T, script string, startd *fakeStartd, tweak ...func(*agent.Config)) *pool {
	t.Helper()
	dir := t.TempDir()
	ca, err := pki.CreateCA(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	caPath := filepath.Join(dir, pki.CACertFile)
	caPEM, err := os.ReadFile(caPath)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(identity string) (cert, key string) {
		name := strings.Split(identity, "@")[0]
		cert, key = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".key")
		if err := ca.Issue(identity, []string{"127.0.0.1"}, cert, key); err != nil {
			t.Fatal(err)
		}
		return cert, key
	}
	tlsFor := func(identity string) (server, client *tls.Config) {
		cert, key := issue(identity)
		s, err := pki.ServerConfig(cert, key, caPath)
		if err != nil {
			t.Fatal(err)
		}
		c, err := pki.ClientConfig(cert, key, caPath)
		if err != nil {
			t.Fatal(err)
		}
		return s, c
	}
	p := &pool{t: t, startd: startd, ckptDir: filepath.Join(dir, "ckpt")}

	// The fake startd.
	startdTLS, _ := tlsFor("startd@exec")
	srv := grpc.NewServer(wire.ServerOptions(startdTLS)...)
	wire.RegisterStartdServer(srv, startd)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.startdAddr = lis.Addr().String()
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)

	// The agent.
	agentTLS, agentClientTLS := tlsFor("agent@submit")
	q, err := jobqueue.Open(filepath.Join(dir, "queue"), jobqueue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "agent.sock")
	local, err := peercred.Listen(sock, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cfg := agent.Config{
		Name: "agent@submit", Logger: slog.New(slog.NewTextHandler(t.Output(), nil)), Queue: q,
		TLS: agentTLS, ClientTLS: agentClientTLS, CAPEM: caPEM,
		MatchmakerAddr: "127.0.0.1:1", AdvertiseAddr: tcp.Addr().String(), AdvertiseInterval: time.Hour,
		ShadowCommand: []string{"/bin/sh", "-c", script}, CheckpointDir: p.ckptDir,
	}
	for _, f := range tweak {
		f(&cfg)
	}
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, tcp, local) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
		q.Close()
	})

	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	p.schedd = wire.NewScheddClient(conn)
	_, mmTLS := tlsFor("matchmaker@cm")
	mm, err := wire.Dial(tcp.Addr().String(), mmTLS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mm.Close() })
	p.matchmaker = wire.NewAgentClient(mm)
	return p
}

// submit queues one job with the extra attributes and returns its id.
func (p *pool) submit(attrs ...string) string {
	p.t.Helper()
	return p.submitCluster(1, attrs...)[0]
}

// submitCluster queues a cluster of n jobs and returns their ids.
func (p *pool) submitCluster(n int, attrs ...string) []string {
	p.t.Helper()
	ctx := p.t.Context()
	nc, err := p.schedd.NewCluster(ctx, &wire.NewClusterRequest{})
	if err != nil {
		p.t.Fatal(err)
	}
	c := strconv.Itoa(int(nc.Cluster))
	req := &wire.SubmitRequest{Cluster: nc.Cluster}
	var ids []string
	for proc := range n {
		ad := "[ " + strings.Join(append([]string{"ClusterId = " + c, "ProcId = " + strconv.Itoa(proc), "JobStatus = 1", `Cmd = "/bin/true"`,
			`Iwd = "/tmp"`, "Requirements = true", "RequestCpus = 1", "RequestMemory = 128", "JobUniverse = 5"}, attrs...), "; ") + " ]"
		req.Ads = append(req.Ads, ad)
		ids = append(ids, c+"."+strconv.Itoa(proc))
	}
	if _, err := p.schedd.Submit(ctx, req); err != nil {
		p.t.Fatal(err)
	}
	return ids
}

// match tells the agent, as the matchmaker does, that job id matched the
// fake startd's slot.
func (p *pool) match(id string) error {
	p.t.Helper()
	_, err := p.matchmaker.Matched(p.t.Context(), &wire.MatchedRequest{JobId: id, ClaimId: "claim-" + id,
		MachineAd: `[ MyType = "Machine"; Name = "slot1@exec"; Requirements = true; CheckpointPlatform = "LINUX X86_64 fake" ]`, StartdAddr: p.startdAddr, Slot: "slot1@exec"})
	return err
}

// job returns the job's ad from the queue, or from the history once it
// left the queue (left is then true).
func (p *pool) job(id string) (ad *classad.ClassAd, left bool) {
	p.t.Helper()
	for _, query := range []func(context.Context, *wire.JobQueryRequest, ...grpc.CallOption) (grpc.ServerStreamingClient[wire.JobQueryReply], error){
		p.schedd.Query, p.schedd.History,
	} {
		stream, err := query(p.t.Context(), &wire.JobQueryRequest{Ids: []string{id}})
		if err != nil {
			p.t.Fatal(err)
		}
		for {
			r, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				p.t.Fatal(err)
			}
			if len(r.Ads) > 0 {
				ad, err := classad.Parse(r.Ads[0])
				if err != nil {
					p.t.Fatal(err)
				}
				return ad, left
			}
		}
		left = true
	}
	p.t.Fatalf("job %s is neither queued nor in the history", id)
	return nil, false
}

// await waits until the job's ad satisfies cond (a ClassAd expression),
// and returns the ad.
func (p *pool) await(id, cond string) (*classad.ClassAd, bool) {
	p.t.Helper()
	expr, err := classad.ParseExpr(cond)
	if err != nil {
		p.t.Fatal(err)
	}
	deadline := time.Now().Add(patience)
	for {
		ad, left := p.job(id)
		if ad.EvalExpr(expr, nil).IsTrue() {
			return ad, left
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("job %s never came to %s: %s", id, cond, ad)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (p *pool) act(action wire.ActRequest_Action, id string) {
	p.t.Helper()
	r, err := p.schedd.Act(p.t.Context(), &wire.ActRequest{Action: action, Ids: []string{id}, Reason: "by the test"})
	if err != nil {
		p.t.Fatal(err)
	}
	for _, res := range r.Results {
		if !res.Ok {
			p.t.Fatalf("%v %s: %+v", action, id, res)
		}
	}
}

func intAttr(ad *classad.ClassAd, name string) int64 {
	n, _ := ad.EvalInt(name)
	return n
}

// TestJobRunsToItsExit: a matched job's claim is requested and activated
// with what the shadow said, the job's run is recorded (start, owner's
// suspension, usage, failed checkpoint) and its exit takes it out of the
// queue with its exit code; the claim is released.
func TestJobRunsToItsExit(t *testing.T) {
	p := newPool(t, exitingShadow, &fakeStartd{})
	id := p.submit()
	if err := p.match(id); err != nil {
		t.Fatal(err)
	}
	ad, left := p.await(id, "JobStatus == 4")
	if !left {
		t.Error("a completed job stayed in the queue")
	}
	if intAttr(ad, "ExitCode") != 3 || intAttr(ad, "NumJobStarts") != 1 || intAttr(ad, "NumJobMatches") != 1 {
		t.Errorf("completed job: %s", ad)
	}
	if cpu, _ := ad.EvalReal("RemoteUserCpu"); cpu != 1.5 {
		t.Errorf("RemoteUserCpu %v, want 1.5", cpu)
	}
	act, _ := p.startd.seen()
	if len(act) != 1 || act[0].ShadowAddr != "127.0.0.1:9" || act[0].ShadowFingerprint != "00" || len(act[0].Secret) != 64 {
		t.Errorf("activations %v, want one with the shadow's address, fingerprint and a fresh secret", act)
	}
	waitReleased(t, p, "claim-"+id)
}

func waitReleased(t *testing.T, p *pool, claim string) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		if _, rel := p.startd.seen(); len(rel) > 0 {
			if rel[0] != claim {
				t.Errorf("released %v, want %s", rel, claim)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("claim %s was never released", claim)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestJobHeldByItsShadow: a job its shadow cannot run is held with the
// shadow's reason and code.
func TestJobHeldByItsShadow(t *testing.T) {
	p := newPool(t, holdingShadow, &fakeStartd{})
	id := p.submit()
	if err := p.match(id); err != nil {
		t.Fatal(err)
	}
	ad, _ := p.await(id, "JobStatus == 5")
	if r, _ := ad.EvalString("HoldReason"); r != "Cannot fetch executable /x" || intAttr(ad, "HoldReasonCode") != 6 {
		t.Errorf("held job: %s", ad)
	}
	// Released, it waits for its next match.
	p.act(wire.ActRequest_RELEASE, id)
	p.await(id, "JobStatus == 1")
}

// TestShadowOnOneProcessor: a shadow's Go runtime gets one processor, not
// the submit machine's all, and the collector of a process with a small
// heap (childproc.Env).
func TestShadowOnOneProcessor(t *testing.T) {
	for _, name := range []string{"GOMAXPROCS", "GOGC"} {
		t.Setenv(name, "")
		os.Unsetenv(name)
	}
	p := newPool(t, readyShadow+`echo '{"type":"hold","reason":"procs='"$GOMAXPROCS"' gogc='"$GOGC"'","code":6}'
`+drain, &fakeStartd{})
	id := p.submit()
	if err := p.match(id); err != nil {
		t.Fatal(err)
	}
	ad, _ := p.await(id, "JobStatus == 5")
	if r, _ := ad.EvalString("HoldReason"); r != fmt.Sprintf("procs=1 gogc=%d", childproc.ChildGOGC) {
		t.Errorf("the shadow's GOMAXPROCS and GOGC: %q, want procs=1 gogc=%d", r, childproc.ChildGOGC)
	}
}

// TestRunningJobRemoved: a removal reaches the running job's shadow, and
// the job leaves the queue once the shadow reports it stopped.
func TestRunningJobRemoved(t *testing.T) {
	p := newPool(t, obeyingShadow, &fakeStartd{})
	id := p.submit()
	if err := p.match(id); err != nil {
		t.Fatal(err)
	}
	p.await(id, "JobStatus == 2")
	if err := p.match(id); err == nil {
		t.Error("a running job was matched again")
	}
	p.act(wire.ActRequest_REMOVE, id)
	ad, left := p.await(id, "JobStatus == 3")
	if !left {
		t.Error("a removed job stayed in the queue")
	}
	if r, _ := ad.EvalString("RemoveReason"); r == "" {
		t.Errorf("removed job without a reason: %s", ad)
	}
}

// TestRunningJobHeldAndReleased: a hold stops the running job; the job
// stays held until released.
func TestRunningJobHeldAndReleased(t *testing.T) {
	p := newPool(t, obeyingShadow, &fakeStartd{})
	id := p.submit()
	if err := p.match(id); err != nil {
		t.Fatal(err)
	}
	p.await(id, "JobStatus == 2")
	p.act(wire.ActRequest_HOLD, id)
	p.await(id, "JobStatus == 5")
	waitReleased(t, p, "claim-"+id)
	p.act(wire.ActRequest_RELEASE, id)
	p.await(id, "JobStatus == 1")
}

// TestRunningJobVacated: a checkpoint and a vacate asked for on the local
// socket reach the shadow; the job's checkpoints are counted and, evicted,
// it waits for its next match.
func TestRunningJobVacated(t *testing.T) {
	p := newPool(t, obeyingShadow, &fakeStartd{})
	id := p.submit()
	if err := p.match(id); err != nil {
		t.Fatal(err)
	}
	p.await(id, "JobStatus == 2")
	p.act(wire.ActRequest_CHECKPOINT, id)
	p.await(id, "NumCkpts == 1")
	p.act(wire.ActRequest_VACATE, id)
	ad, _ := p.await(id, "JobStatus == 1 && NumCkpts == 2")
	if intAttr(ad, "LastCkptSize") != 50 {
		t.Errorf("vacated job: %s", ad)
	}
	// Its image is restored only on a machine of the platform it was
	// taken on.
	if pl, _ := ad.EvalString("LastCheckpointPlatform"); pl != "LINUX X86_64 fake" {
		t.Errorf("LastCheckpointPlatform %q, want the machine's", pl)
	}
	waitReleased(t, p, "claim-"+id)
}

// TestRunsThatFailBeforeTheJobStarts: a claim refused, an activation
// refused and a shadow that dies all leave the job idle to be matched
// again; the two that got as far as a shadow count as its exceptions.
func TestRunsThatFailBeforeTheJobStarts(t *testing.T) {
	t.Run("claim refused", func(t *testing.T) {
		p := newPool(t, exitingShadow, &fakeStartd{refuseClaim: true})
		id := p.submit()
		if err := p.match(id); err != nil {
			t.Fatal(err)
		}
		waitFree(t, p, id)
		if act, _ := p.startd.seen(); len(act) != 0 {
			t.Errorf("a refused claim was activated: %v", act)
		}
	})
	t.Run("activation refused", func(t *testing.T) {
		p := newPool(t, abandoningShadow, &fakeStartd{refuseActivation: true})
		id := p.submit()
		if err := p.match(id); err != nil {
			t.Fatal(err)
		}
		ad, _ := p.await(id, "NumShadowExceptions == 1")
		if r, _ := ad.EvalString("LastShadowException"); !strings.Contains(r, "not your claim") {
			t.Errorf("LastShadowException %q, want the startd's refusal", r)
		}
		p.await(id, "JobStatus == 1")
	})
	t.Run("shadow dies", func(t *testing.T) {
		p := newPool(t, dyingShadow, &fakeStartd{})
		id := p.submit()
		if err := p.match(id); err != nil {
			t.Fatal(err)
		}
		ad, _ := p.await(id, "NumShadowExceptions == 1")
		if st := intAttr(ad, "JobStatus"); st != 1 {
			t.Errorf("JobStatus %d, want idle", st)
		}
	})
}

// waitFree waits until the agent has given up the job's run: the job can
// be matched again.
func waitFree(t *testing.T, p *pool, id string) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for p.match(id) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("job %s was never free to be matched again", id)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if ad, _ := p.job(id); intAttr(ad, "JobStatus") != 1 {
		t.Errorf("job after a refused claim: %s", ad)
	}
}

// TestClaimReused: within its work life a claim runs the cluster's next
// job without a new match, through the same shadow process, activated anew
// with a secret of its own; the claim is released once no job is left.
func TestClaimReused(t *testing.T) {
	p := newPool(t, reusedShadow, &fakeStartd{}, func(c *agent.Config) { c.ClaimWorkLife = time.Hour })
	ids := p.submitCluster(2)
	if err := p.match(ids[0]); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if ad, _ := p.await(id, "JobStatus == 4"); intAttr(ad, "ExitCode") != 0 {
			t.Errorf("job %s: %s", id, ad)
		}
	}
	waitReleased(t, p, "claim-"+ids[0])
	act, rel := p.startd.seen()
	if len(act) != 2 || act[0].ClaimId != act[1].ClaimId || act[0].Secret == act[1].Secret {
		t.Fatalf("activations %v, want two of the one claim, each with its own secret", act)
	}
	if act[0].ShadowFingerprint != act[1].ShadowFingerprint {
		t.Errorf("the jobs had shadows %s and %s, want the claim's one", act[0].ShadowFingerprint, act[1].ShadowFingerprint)
	}
	if len(rel) != 1 {
		t.Errorf("releases %v, want one", rel)
	}
	if ad, _ := p.job(ids[1]); intAttr(ad, "NumJobMatches") != 0 {
		t.Errorf("the second job was matched: %s", ad)
	}
}

// TestAccountingGroups: a job of one of the pool's accounting groups is
// charged to group.owner, whatever its submitter wrote of who it is
// charged to; a group the pool does not list charges the owner; and no
// one edits who a queued job is charged to.
func TestAccountingGroups(t *testing.T) {
	p := newPool(t, obeyingShadow, &fakeStartd{}, func(c *agent.Config) { c.AccountingGroups = []string{"group_physics"} })
	in := p.submit(`AcctGroup = "Group_Physics"`, `AcctGroupUser = "mallory"`, `AccountingGroup = "group_chem.mallory"`)
	out := p.submit(`AcctGroup = "group_madeup"`, `AccountingGroup = "group_madeup.x"`)
	none := p.submit(`AccountingGroup = "group_physics.x"`)
	ad, _ := p.await(in, "JobStatus == 1")
	owner, _ := ad.EvalString("Owner")
	if g, _ := ad.EvalString("AccountingGroup"); g != "group_physics."+owner {
		t.Errorf("AccountingGroup %q, want group_physics.%s", g, owner)
	}
	if u, _ := ad.EvalString("AcctGroupUser"); u != owner {
		t.Errorf("AcctGroupUser %q, want the owner %s", u, owner)
	}
	for _, id := range []string{out, none} {
		ad, _ := p.await(id, "JobStatus == 1")
		if g, ok := ad.Lookup("AccountingGroup"); ok {
			t.Errorf("job %s, in no group of the pool's, is charged to %s", id, g)
		}
	}
	for _, attr := range []string{"AccountingGroup", "AcctGroup", "AcctGroupUser"} {
		_, err := p.schedd.Edit(p.t.Context(), &wire.EditRequest{Ids: []string{in}, Attrs: []*wire.EditAttribute{{Name: attr, Expr: `"group_physics.root"`}}})
		if status.Code(err) != codes.PermissionDenied {
			t.Errorf("edit of %s: %v, want PermissionDenied", attr, err)
		}
	}
}

// TestJobMachineAttrs: the machine attributes a job names, and those the
// pool names for every job, are recorded in its ad at each start, earlier
// runs' values kept for as many runs as asked.
func TestJobMachineAttrs(t *testing.T) {
	p := newPool(t, obeyingShadow, &fakeStartd{}, func(c *agent.Config) { c.MachineAttrs = []string{"CheckpointPlatform"} })
	id := p.submit(`JobMachineAttrs = "Name,Missing"`, "JobMachineAttrsHistoryLength = 2")
	if err := p.match(id); err != nil {
		t.Fatal(err)
	}
	ad, _ := p.await(id, "JobStatus == 2")
	first, _ := ad.EvalString("MachineAttrName0")
	if first != "slot1@exec" {
		t.Fatalf("MachineAttrName0 = %q after the first start, want the slot's name: %s", first, ad)
	}
	if pl, _ := ad.EvalString("MachineAttrCheckpointPlatform0"); pl != "LINUX X86_64 fake" {
		t.Errorf("MachineAttrCheckpointPlatform0 = %q, want the machine's", pl)
	}
	if v := ad.Eval("MachineAttrMissing0"); !v.IsUndefined() {
		t.Errorf("MachineAttrMissing0 = %v, want undefined", v)
	}
	p.act(wire.ActRequest_VACATE, id)
	p.await(id, "JobStatus == 1")
	waitReleased(t, p, "claim-"+id)
	if err := p.match(id); err != nil {
		t.Fatal(err)
	}
	ad, _ = p.await(id, "JobStatus == 2 && NumJobStarts == 2")
	if m, _ := ad.EvalString("MachineAttrName1"); m != first {
		t.Errorf("MachineAttrName1 = %q, want the first run's %q", m, first)
	}
	if _, ok := ad.Lookup("MachineAttrName2"); ok {
		t.Errorf("more history than asked: %s", ad)
	}
}

// TestNiceUser: a nice user's job is charged to nice-user.owner, whatever
// group it names.
func TestNiceUser(t *testing.T) {
	p := newPool(t, obeyingShadow, &fakeStartd{}, func(c *agent.Config) { c.AccountingGroups = []string{"group_physics"} })
	id := p.submit("NiceUser = true", `AcctGroup = "group_physics"`)
	ad, _ := p.await(id, "JobStatus == 1")
	owner, _ := ad.EvalString("Owner")
	if g, _ := ad.EvalString("AccountingGroup"); g != "nice-user."+owner {
		t.Errorf("a nice user's job is charged to %q, want nice-user.%s", g, owner)
	}
}
