package startd

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/platform"
	"harrier.dev/harrier/starter"
	"harrier.dev/harrier/wire"
)

// starterScript records the spec and working directory it was given in
// the directory named by its first argument, then runs until the test
// creates the file "go" there, so that the test decides when the starter
// exits.
const starterScript = `head -n 1 > "$1/spec.json"; pwd > "$1/cwd.tmp"; mv "$1/cwd.tmp" "$1/cwd"
while [ ! -e "$1/go" ]; do sleep 0.05; done`

const jobAd = `[ MyType = "Job"; ClusterId = 7; ProcId = 0; Owner = "alice"; Requirements = TARGET.Arch =!= undefined && TARGET.Cpus >= 1 ]`

// harness is a startd serving over TLS on 127.0.0.1, a fake collector it
// advertises to, and a client of its Startd service.
type harness struct {
	s         *Startd
	collector *fakeCollector
	client    wire.StartdClient
	addr      string
	// certs issued the test's certificates; agentTLS is the client's.
	certs    *testPKI
	agentTLS *tls.Config
	execDir  string
	outDir   string
	// idle is the keyboard idle time the startd measures, in seconds.
	idle   atomic.Int64
	cancel context.CancelFunc
	served chan error
}

// newHarness starts a startd whose START is "KeyboardIdle > 60"; the
// keyboard starts idle. tweak may adjust the startd before it serves.
func newHarness(t *testing.T, tweak func(*Startd)) *harness {
	t.Helper()
	return newHarnessWith(t, nil, tweak)
}

// newHarnessWith is newHarness with conf adjusting the configuration.
func newHarnessWith(t *testing.T, conf func(*Config), tweak func(*Startd)) *harness {
	t.Helper()
	certs := newTestPKI(t)
	serverTLS, clientTLS := certs.configs("startd@exec1")
	mmServerTLS, mmClientTLS := certs.configs("matchmaker@mm")
	_, agentTLS := certs.configs("agent@submit")
	collector, collectorAddr := startCollector(t, mmServerTLS)
	h := &harness{collector: collector, execDir: t.TempDir(), outDir: t.TempDir(), served: make(chan error, 1)}
	h.idle.Store(3600)

	// A scratch directory left by a crashed startd, and a log to keep.
	if err := os.MkdirAll(filepath.Join(h.execDir, "scratch.slot1.old", "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Name:           "exec1",
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		TLS:            serverTLS,
		ClientTLS:      clientTLS,
		MatchmakerAddr: collectorAddr,
		Start:          "KeyboardIdle > 60",
		Rank:           "TARGET.Owner == \"alice\"",
		ExecuteDir:     h.execDir,
		StarterCommand: []string{"/bin/sh", "-c", starterScript, "starter", h.outDir},
		CertFile:       "/pool/exec1.crt",
		KeyFile:        "/pool/exec1.key",
		CAFile:         "/pool/ca.crt",
	}
	if conf != nil {
		conf(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(h.execDir, "scratch.slot1.old")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("leftover scratch directory not removed: %v", err)
	}
	real := s.measure
	s.measure = func() (machine, error) {
		m, err := real()
		m.keyboardIdle = time.Duration(h.idle.Load()) * time.Second
		m.consoleIdle = m.keyboardIdle
		return m, err
	}
	if tweak != nil {
		tweak(s)
	}
	h.s = s

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.addr = lis.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.served <- s.Serve(ctx, lis) }()
	t.Cleanup(func() { h.stop(t) })

	dial := func(cfg *tls.Config) wire.StartdClient {
		conn, err := wire.Dial(h.addr, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return wire.NewStartdClient(conn)
	}
	h.client = poolClient{StartdClient: dial(agentTLS), mm: dial(mmClientTLS)}
	h.agentTLS, h.certs = agentTLS, certs
	return h
}

// stop shuts the startd down and waits for Serve to return.
func (h *harness) stop(t *testing.T) {
	if h.cancel == nil {
		return
	}
	h.cancel()
	h.cancel = nil
	if err := <-h.served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

func wantCode(t *testing.T, err error, code codes.Code) {
	t.Helper()
	if status.Code(err) != code {
		t.Errorf("got %v, want code %v", err, code)
	}
}

func adString(t *testing.T, ad *classad.ClassAd, name string) string {
	t.Helper()
	v, ok := ad.EvalString(name)
	if !ok {
		t.Errorf("ad has no string %s: %s", name, ad)
	}
	return v
}

func adInt(t *testing.T, ad *classad.ClassAd, name string) int64 {
	t.Helper()
	v, ok := ad.EvalInt(name)
	if !ok {
		t.Errorf("ad has no integer %s: %s", name, ad)
	}
	return v
}

// waitFile waits until the starter script has written name.
// activate matches slot for jobAd under claim id, claims it as
// agent@submit and activates it.
func (h *harness) activate(t *testing.T, slot, id string) {
	t.Helper()
	ctx := t.Context()
	if _, err := h.client.Matched(ctx, &wire.StartdMatchedRequest{Slot: slot, ClaimId: id, JobAd: jobAd}); err != nil {
		t.Fatal(err)
	}
	if r, err := h.client.RequestClaim(ctx, &wire.RequestClaimRequest{Slot: slot, ClaimId: id, JobAd: jobAd, Agent: "agent@submit"}); err != nil || !r.Accepted {
		t.Fatalf("claim: %+v, %v", r, err)
	}
	if _, err := h.client.ActivateClaim(ctx, &wire.ActivateClaimRequest{ClaimId: id, JobAd: jobAd, ShadowAddr: "10.0.0.1:9", ShadowFingerprint: "f1", Secret: "s3cret"}); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) waitFile(t *testing.T, name string) []byte {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(h.outDir, name))
		if err == nil {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("starter never wrote %s: %v", name, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func scratchDirs(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, scratchPrefix+"*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestClaimLifecycle(t *testing.T) {
	// The release below stops a starter that does not listen: it is
	// killed after the grace time, which need not be the daemon's 5 s.
	h := newHarness(t, func(s *Startd) { s.killGrace = 100 * time.Millisecond })
	ctx := t.Context()
	const slot = "slot1@exec1"

	ad := h.collector.waitStatus(t, slot, Status{Unclaimed, Idle})
	for name, want := range map[string]string{
		"MyType": "Machine", "TargetType": "Job", "Name": slot, "Machine": "exec1",
		"StartdAddr": h.addr, "OpSys": "LINUX", "Arch": platform.Arch(runtime.GOARCH),
	} {
		if got := adString(t, ad, name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if got := adInt(t, ad, "Cpus"); got != int64(runtime.NumCPU()) {
		t.Errorf("Cpus = %d, want %d", got, runtime.NumCPU())
	}
	if adInt(t, ad, "Memory") <= 0 || adInt(t, ad, "Disk") <= 0 || adInt(t, ad, "KeyboardIdle") != 3600 {
		t.Errorf("implausible machine ad %s", ad)
	}
	h.collector.mu.Lock()
	lease := h.collector.leases[slot]
	h.collector.mu.Unlock()
	if lease != 30 {
		t.Errorf("lease %d s, want 3 × 10 s", lease)
	}

	// The negotiator matches the slot; a second match is refused.
	if _, err := h.client.Matched(ctx, &wire.StartdMatchedRequest{Slot: slot, ClaimId: "c1", JobAd: jobAd}); err != nil {
		t.Fatal(err)
	}
	h.collector.waitStatus(t, slot, Status{Matched, Idle})
	_, err := h.client.Matched(ctx, &wire.StartdMatchedRequest{Slot: slot, ClaimId: "c9", JobAd: jobAd})
	wantCode(t, err, codes.FailedPrecondition)

	// A claim under another id is refused and leaves the match alone.
	reply, err := h.client.RequestClaim(ctx, &wire.RequestClaimRequest{Slot: slot, ClaimId: "c2", JobAd: jobAd, Agent: "agent@submit"})
	if err != nil {
		t.Fatal(err)
	}
	if reply.Accepted || reply.Reason == "" {
		t.Errorf("claim with a wrong id: %+v", reply)
	}

	reply, err = h.client.RequestClaim(ctx, &wire.RequestClaimRequest{Slot: slot, ClaimId: "c1", JobAd: jobAd, Agent: "agent@submit"})
	if err != nil {
		t.Fatal(err)
	}
	if !reply.Accepted {
		t.Fatalf("claim refused: %s", reply.Reason)
	}
	if _, err := classad.Parse(reply.MachineAd); err != nil {
		t.Errorf("claim reply machine ad: %v", err)
	}
	ad = h.collector.waitStatus(t, slot, Status{Claimed, Idle})
	for name, want := range map[string]string{"ClaimedBy": "agent@submit", "RemoteOwner": "alice", "JobId": "7.0"} {
		if got := adString(t, ad, name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}

	// Another agent that learnt the claim id cannot use the claim: a claim
	// is bound to the certificate of the agent that made it.
	_, intruderTLS := h.certs.configs("agent@elsewhere")
	conn, err := wire.Dial(h.addr, intruderTLS)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	intruder := wire.NewStartdClient(conn)
	_, err = intruder.ActivateClaim(ctx, &wire.ActivateClaimRequest{ClaimId: "c1", JobAd: jobAd, ShadowAddr: "10.0.0.1:9", ShadowFingerprint: "f1", Secret: "s3cret"})
	wantCode(t, err, codes.PermissionDenied)
	_, err = intruder.KeepAlive(ctx, &wire.KeepAliveRequest{ClaimId: "c1"})
	wantCode(t, err, codes.PermissionDenied)
	_, err = intruder.ReleaseClaim(ctx, &wire.ReleaseClaimRequest{ClaimId: "c1"})
	wantCode(t, err, codes.PermissionDenied)
	// And no agent may pose as the negotiator.
	_, err = intruder.Matched(ctx, &wire.StartdMatchedRequest{Slot: slot, ClaimId: "c7", JobAd: jobAd})
	wantCode(t, err, codes.PermissionDenied)
	h.collector.waitStatus(t, slot, Status{Claimed, Idle})

	// Bad activations change nothing.
	_, err = h.client.ActivateClaim(ctx, &wire.ActivateClaimRequest{ClaimId: "nope", JobAd: jobAd, ShadowAddr: "10.0.0.1:9", ShadowFingerprint: "f1", Secret: "s3cret"})
	wantCode(t, err, codes.NotFound)
	_, err = h.client.ActivateClaim(ctx, &wire.ActivateClaimRequest{ClaimId: "c1", JobAd: "[ A = ", ShadowAddr: "10.0.0.1:9", ShadowFingerprint: "f1", Secret: "s3cret"})
	wantCode(t, err, codes.InvalidArgument)

	// The job runs: the starter gets a valid spec and an empty private
	// scratch directory as its working directory.
	_, err = h.client.ActivateClaim(ctx, &wire.ActivateClaimRequest{ClaimId: "c1", JobAd: jobAd, ShadowAddr: "10.0.0.1:9", ShadowFingerprint: "f1", Secret: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	h.collector.waitStatus(t, slot, Status{Claimed, Busy})
	cwd := strings.TrimSpace(string(h.waitFile(t, "cwd")))
	var first starter.Command
	if err := json.Unmarshal(h.waitFile(t, "spec.json"), &first); err != nil || first.Job == nil {
		t.Fatalf("the starter's first command: %+v, %v", first, err)
	}
	spec := first.Job
	want := starter.Spec{Slot: slot, Host: "exec1", ClaimID: "c1", JobAd: jobAd, ShadowAddr: "10.0.0.1:9", ShadowFingerprint: "f1", Secret: "s3cret",
		ScratchDir: cwd, Reusable: true, CertFile: "/pool/exec1.crt", KeyFile: "/pool/exec1.key", CAFile: "/pool/ca.crt",
		Cpus: adInt(t, ad, "Cpus"), MachineCpus: int64(runtime.NumCPU())}
	// Without SCRATCH_LIMIT every job is held to its slot's share of
	// the free disk.
	if disk := adInt(t, ad, "Disk"); spec.ScratchLimitKB <= 0 || spec.ScratchLimitKB > 2*disk || 2*spec.ScratchLimitKB < disk {
		t.Errorf("scratch limit %d KiB, want about the slot's Disk %d KiB", spec.ScratchLimitKB, disk)
	}
	want.ScratchLimitKB = spec.ScratchLimitKB
	// The job finds its slot's ad as it starts.
	if m, err := classad.Parse(spec.MachineAd); err != nil || adString(t, m, "Name") != slot || adInt(t, m, "Cpus") != want.Cpus {
		t.Errorf("the job's machine ad: %v, %s", err, spec.MachineAd)
	}
	want.MachineAd = spec.MachineAd
	if !reflect.DeepEqual(*spec, want) {
		t.Errorf("starter spec\n got %+v\nwant %+v", *spec, want)
	}
	if filepath.Dir(cwd) != h.execDir {
		t.Errorf("scratch %s not in %s", cwd, h.execDir)
	}
	if fi, err := os.Stat(cwd); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("scratch directory: %v, %v", fi, err)
	}
	_, err = h.client.ActivateClaim(ctx, &wire.ActivateClaimRequest{ClaimId: "c1", JobAd: jobAd, ShadowAddr: "10.0.0.1:9", ShadowFingerprint: "f1", Secret: "s3cret"})
	wantCode(t, err, codes.FailedPrecondition)

	// The starter exits: the slot stays claimed, the scratch goes.
	if err := os.WriteFile(filepath.Join(h.outDir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h.collector.waitStatus(t, slot, Status{Claimed, Idle})
	if d := scratchDirs(t, h.execDir); len(d) != 0 {
		t.Errorf("scratch left after the starter exited: %v", d)
	}

	// The agent reuses the claim, then releases it while the job runs.
	for _, f := range []string{"go", "cwd", "spec.json"} {
		os.Remove(filepath.Join(h.outDir, f))
	}
	_, err = h.client.ActivateClaim(ctx, &wire.ActivateClaimRequest{ClaimId: "c1", JobAd: jobAd, ShadowAddr: "10.0.0.1:9", ShadowFingerprint: "f1", Secret: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	h.collector.waitStatus(t, slot, Status{Claimed, Busy})
	h.waitFile(t, "cwd")
	if _, err := h.client.ReleaseClaim(ctx, &wire.ReleaseClaimRequest{ClaimId: "c1"}); err != nil {
		t.Fatal(err)
	}
	ad = h.collector.waitStatus(t, slot, Status{Unclaimed, Idle})
	if _, ok := ad.EvalString("ClaimedBy"); ok {
		t.Errorf("unclaimed ad still names its claimer: %s", ad)
	}
	if d := scratchDirs(t, h.execDir); len(d) != 0 {
		t.Errorf("scratch left after release: %v", d)
	}
	if _, err := os.Stat(filepath.Join(h.execDir, "starter.slot1.log")); err != nil {
		t.Errorf("starter log: %v", err)
	}
	_, err = h.client.ReleaseClaim(ctx, &wire.ReleaseClaimRequest{ClaimId: "c1"})
	wantCode(t, err, codes.NotFound)

	// The owner comes back between match and claim: START is now false.
	if _, err := h.client.Matched(ctx, &wire.StartdMatchedRequest{Slot: "slot1", ClaimId: "c3", JobAd: jobAd}); err != nil {
		t.Fatal(err)
	}
	h.collector.waitStatus(t, slot, Status{Matched, Idle})
	h.idle.Store(5)
	reply, err = h.client.RequestClaim(ctx, &wire.RequestClaimRequest{Slot: slot, ClaimId: "c3", JobAd: jobAd, Agent: "agent@submit"})
	if err != nil {
		t.Fatal(err)
	}
	if reply.Accepted || !strings.Contains(reply.Reason, "START") {
		t.Errorf("claim accepted or refused for another reason although START is false: %+v", reply)
	}
	// START is false whatever the job: by the default IS_OWNER the owner
	// has the machine.
	h.collector.waitStatus(t, slot, Status{Owner, Idle})

	// Shut down: the ads are withdrawn.
	h.stop(t)
	h.collector.mu.Lock()
	defer h.collector.mu.Unlock()
	if !h.collector.invalidated[slot] {
		t.Error("slot ad not invalidated at shutdown")
	}
}

func TestBadRequests(t *testing.T) {
	h := newHarness(t, nil)
	ctx := t.Context()
	h.collector.waitStatus(t, "slot1@exec1", Status{Unclaimed, Idle})

	_, err := h.client.Matched(ctx, &wire.StartdMatchedRequest{Slot: "slot9", ClaimId: "c1", JobAd: jobAd})
	wantCode(t, err, codes.NotFound)
	_, err = h.client.Matched(ctx, &wire.StartdMatchedRequest{Slot: "slot1", ClaimId: "c1", JobAd: "not an ad ]["})
	wantCode(t, err, codes.InvalidArgument)
	_, err = h.client.Matched(ctx, &wire.StartdMatchedRequest{Slot: "slot1", JobAd: jobAd})
	wantCode(t, err, codes.InvalidArgument)
	_, err = h.client.RequestClaim(ctx, &wire.RequestClaimRequest{Slot: "slot1", ClaimId: "c1", JobAd: "[["})
	wantCode(t, err, codes.InvalidArgument)
	reply, err := h.client.RequestClaim(ctx, &wire.RequestClaimRequest{Slot: "slot1", ClaimId: "c1", JobAd: jobAd})
	if err != nil || reply.Accepted {
		t.Errorf("claim of an unmatched slot: %+v, %v", reply, err)
	}
	_, err = h.client.ActivateClaim(ctx, &wire.ActivateClaimRequest{ClaimId: "c1", JobAd: jobAd})
	wantCode(t, err, codes.InvalidArgument)
	_, err = h.client.ReleaseClaim(ctx, &wire.ReleaseClaimRequest{})
	wantCode(t, err, codes.NotFound)
}

func TestReleaseIdleClaim(t *testing.T) {
	h := newHarness(t, nil)
	ctx := t.Context()
	const slot = "slot1@exec1"
	h.collector.waitStatus(t, slot, Status{Unclaimed, Idle})
	if _, err := h.client.Matched(ctx, &wire.StartdMatchedRequest{Slot: slot, ClaimId: "c1", JobAd: jobAd}); err != nil {
		t.Fatal(err)
	}
	if r, err := h.client.RequestClaim(ctx, &wire.RequestClaimRequest{Slot: slot, ClaimId: "c1", JobAd: jobAd}); err != nil || !r.Accepted {
		t.Fatalf("claim: %+v, %v", r, err)
	}
	h.collector.waitStatus(t, slot, Status{Claimed, Idle})
	if _, err := h.client.ReleaseClaim(ctx, &wire.ReleaseClaimRequest{ClaimId: "c1"}); err != nil {
		t.Fatal(err)
	}
	h.collector.waitStatus(t, slot, Status{Unclaimed, Idle})
	_, err := h.client.ActivateClaim(ctx, &wire.ActivateClaimRequest{ClaimId: "c1", JobAd: jobAd, ShadowAddr: "10.0.0.1:9", ShadowFingerprint: "f1", Secret: "s3cret"})
	wantCode(t, err, codes.NotFound)
}

// A match that its agent turns down frees the slot at once; its claim id
// is no use afterwards.
func TestReleaseUnclaimedMatch(t *testing.T) {
	h := newHarness(t, nil)
	ctx := t.Context()
	const slot = "slot1@exec1"
	h.collector.waitStatus(t, slot, Status{Unclaimed, Idle})
	if _, err := h.client.Matched(ctx, &wire.StartdMatchedRequest{Slot: slot, ClaimId: "c1", JobAd: jobAd}); err != nil {
		t.Fatal(err)
	}
	if st := h.s.slotState("slot1"); st != (Status{Matched, Idle}) {
		t.Fatalf("after the match: %v, want Matched/Idle", st)
	}
	if _, err := h.client.ReleaseClaim(ctx, &wire.ReleaseClaimRequest{ClaimId: "c1"}); err != nil {
		t.Fatal(err)
	}
	if st := h.s.slotState("slot1"); st != (Status{Unclaimed, Idle}) {
		t.Errorf("after the release: %v, want Unclaimed/Idle", st)
	}
	r, err := h.client.RequestClaim(ctx, &wire.RequestClaimRequest{Slot: slot, ClaimId: "c1", JobAd: jobAd})
	if err == nil && r.Accepted {
		t.Errorf("a released match was claimed: %+v", r)
	}
}

func TestMatchTimesOut(t *testing.T) {
	h := newHarness(t, func(s *Startd) { s.matchTimeout = 50 * time.Millisecond })
	h.collector.waitStatus(t, "slot1@exec1", Status{Unclaimed, Idle})
	if _, err := h.client.Matched(t.Context(), &wire.StartdMatchedRequest{Slot: "slot1", ClaimId: "c1", JobAd: jobAd}); err != nil {
		t.Fatal(err)
	}
	// Matched is advertised, then the slot returns to Unclaimed by itself.
	h.collector.waitFor(t, "the match expire", func() bool {
		a, err := classad.Parse(h.collector.latest["slot1@exec1"])
		if err != nil {
			return false
		}
		st, _ := a.EvalString("State")
		return st == "Unclaimed" && h.s.slotState("slot1") == Status{Unclaimed, Idle}
	})
}

func TestShutdownKillsStarters(t *testing.T) {
	h := newHarness(t, func(s *Startd) { s.killGrace = 100 * time.Millisecond })
	const slot = "slot1@exec1"
	h.collector.waitStatus(t, slot, Status{Unclaimed, Idle})
	h.activate(t, slot, "c1")
	h.waitFile(t, "cwd")
	h.stop(t) // returns only once the starter is gone
	if d := scratchDirs(t, h.execDir); len(d) != 0 {
		t.Errorf("scratch left after shutdown: %v", d)
	}
}

// slotState returns the current status of the named slot.
func (s *Startd) slotState(name string) Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.slotByName(name).phase.status()
}

// A slot's change of state sends that slot's ad alone, as HTCondor's
// startd does, not every slot's of the machine; a change of what every
// ad shows (here a drain) sends them all.
func TestAdvertisesTheSlotThatChanged(t *testing.T) {
	h := newHarnessWith(t, func(c *Config) {
		c.NumSlots = 4
		c.AdvertiseInterval = time.Hour // no periodic round meanwhile
	}, nil)
	slots := []string{"slot1@exec1", "slot2@exec1", "slot3@exec1", "slot4@exec1"}
	for _, sl := range slots {
		h.collector.waitStatus(t, sl, Status{Unclaimed, Idle})
	}
	sent := func() map[string]int {
		h.collector.mu.Lock()
		defer h.collector.mu.Unlock()
		return maps.Clone(h.collector.sent)
	}
	before := sent()

	ctx := t.Context()
	if _, err := h.client.Matched(ctx, &wire.StartdMatchedRequest{Slot: slots[0], ClaimId: "c1", JobAd: jobAd}); err != nil {
		t.Fatal(err)
	}
	if r, err := h.client.RequestClaim(ctx, &wire.RequestClaimRequest{Slot: slots[0], ClaimId: "c1", JobAd: jobAd}); err != nil || !r.Accepted {
		t.Fatalf("claim: %+v, %v", r, err)
	}
	h.collector.waitStatus(t, slots[0], Status{Claimed, Idle})
	after := sent()
	if after[slots[0]] <= before[slots[0]] {
		t.Errorf("%s's change sent no ad of it", slots[0])
	}
	for _, sl := range slots[1:] {
		if after[sl] != before[sl] {
			t.Errorf("%s's change sent %s's unchanged ad %d times", slots[0], sl, after[sl]-before[sl])
		}
	}

	if _, err := h.s.Drain(DrainRequest{Reason: "every ad changes"}); err != nil {
		t.Fatal(err)
	}
	h.collector.waitFor(t, "every slot's ad draining", func() bool {
		for _, sl := range slots {
			a, err := classad.Parse(h.collector.latest[sl])
			if err != nil {
				return false
			}
			if d, _ := a.EvalBool("Draining"); !d {
				return false
			}
		}
		return true
	})
}

// A startd that starts detaches and removes the iofs mounts a killed
// starter left, where starters mount them now and where older ones did
// (the execute directory itself).
func TestNewDetachesLeftMounts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root; CI runs as root")
	}
	var left []string
	newHarnessWith(t, func(c *Config) {
		left = []string{
			filepath.Join(starter.JobDirsDir(c.ExecuteDir), scratchPrefix+"slot1.dir"),
			filepath.Join(c.ExecuteDir, "iofs."+scratchPrefix+"slot1.dir"),
		}
		for _, p := range left {
			if err := os.MkdirAll(p, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := unix.Mount("tmpfs", p, "tmpfs", 0, ""); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = unix.Unmount(p, unix.MNT_DETACH) })
		}
	}, nil)
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range left {
		if strings.Contains(string(mounts), " "+p+" ") {
			t.Errorf("%s is still mounted", p)
		}
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there: %v", p, err)
		}
	}
}
