package starter_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"

	"harrier.dev/harrier/checkpoint"
	"harrier.dev/harrier/childproc"
	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/shadow"
	"harrier.dev/harrier/starter"
	"harrier.dev/harrier/wire"
)

// The tests in this file run a real shadow (shadow.ServeClaim, fed the agent's
// commands through a pipe, serving on loopback with its session
// certificate) and real starters (starter.New over a connection pinned to
// that certificate, with a startd's certificate from a test CA), with the
// job itself in memory (fakeRunner): the whole session between the two,
// over real sockets, without root, containers or FUSE.

// patience bounds every wait, so that a broken session fails its test
// instead of hanging the run; nothing is expected to come near it.
const patience = time.Minute

// credentials are what a pool's CA gives out, made afresh per test.
type credentials struct {
	caPEM []byte
	ca    *pki.CA
	dir   string
	// The startd's certificate, presented by its starters.
	cert, key string
	// checkpointKey is the pool's checkpoint key file.
	checkpointKey string
}

func newCredentials(t *testing.T) *credentials {
	t.Helper()
	dir := t.TempDir()
	ca, err := pki.CreateCA(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, pki.CACertFile))
	if err != nil {
		t.Fatal(err)
	}
	c := &credentials{caPEM: caPEM, ca: ca, dir: dir, checkpointKey: filepath.Join(dir, "checkpoint.key")}
	c.cert, c.key = c.issue(t, "startd@exec")
	if err := checkpoint.CreateKeyFile(c.checkpointKey); err != nil {
		t.Fatal(err)
	}
	return c
}

// issue makes a certificate of the test CA for identity.
func (c *credentials) issue(t *testing.T, identity string) (cert, key string) {
	t.Helper()
	name := strings.ReplaceAll(identity, "@", "_")
	cert, key = filepath.Join(c.dir, name+".pem"), filepath.Join(c.dir, name+".key")
	if err := c.ca.Issue(identity, []string{"127.0.0.1"}, cert, key); err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// session is one claim's shadow, as its agent sees it.
type session struct {
	t        *testing.T
	creds    *credentials
	secret   string
	iwd      string // the jobs' submit-side directory
	ckptDir  string // the agent's image store for the jobs' owner
	commands *childproc.Sender[shadow.Command]
	input    *io.PipeWriter
	events   chan shadow.Event
}

func newSession(t *testing.T) *session {
	t.Helper()
	s := &session{
		t:       t,
		creds:   newCredentials(t),
		secret:  "s3cret-of-the-job",
		iwd:     t.TempDir(),
		ckptDir: filepath.Join(t.TempDir(), "images"),
		events:  make(chan shadow.Event, 256),
	}
	in, out := io.Pipe()
	s.input = out
	s.commands = childproc.NewSender[shadow.Command](out)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	events, report := io.Pipe()
	go func() {
		defer close(done)
		shadow.ServeClaim(ctx, in, report, testLogger(t, "shadow"))
		report.Close()
	}()
	go func() {
		r := childproc.NewReceiver[shadow.Event](events)
		for {
			ev, err := r.Receive()
			if err != nil {
				return
			}
			s.events <- ev
		}
	}()
	t.Cleanup(func() {
		out.Close() // the agent goes: the shadow stops a job still running
		cancel()
		<-done
	})
	return s
}

func testLogger(t *testing.T, process string) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), nil)).With("process", process)
}

// job describes one job of the claim.
type job struct {
	proc    int
	program string   // the fake's program, written as the job's executable
	attrs   []string // more attributes of its ad
	// noExecutable leaves the executable out of the submit directory.
	noExecutable bool
}

// ad writes the job's executable and returns its ad, as the agent sends
// it to the shadow and the startd to the starter.
func (s *session) ad(j job) string {
	s.t.Helper()
	exe := filepath.Join(s.iwd, "job"+strconv.Itoa(j.proc))
	if !j.noExecutable {
		if err := os.WriteFile(exe, []byte(j.program), 0o755); err != nil {
			s.t.Fatal(err)
		}
	}
	attrs := append([]string{
		"ClusterId = 1",
		"ProcId = " + strconv.Itoa(j.proc),
		"Cmd = " + strconv.Quote(exe),
		"Iwd = " + strconv.Quote(s.iwd),
		"Out = " + strconv.Quote("out."+strconv.Itoa(j.proc)),
		"Err = " + strconv.Quote("err."+strconv.Itoa(j.proc)),
		`Owner = "alice"`,
		"GlobalJobId = " + strconv.Quote("submit#1."+strconv.Itoa(j.proc)+"#1700000000"),
	}, j.attrs...)
	return "[ " + strings.Join(attrs, "; ") + " ]"
}

// submit gives the shadow the job and returns its EventReady.
func (s *session) submit(j job) (ad string, ready shadow.Event) {
	s.t.Helper()
	ad = s.ad(j)
	s.send(shadow.Command{Job: &shadow.Spec{
		JobAd: ad, Secret: s.secret, ListenHost: "127.0.0.1", CAPEM: s.creds.caPEM,
		CheckpointDir: s.ckptDir, CheckpointKey: "1." + strconv.Itoa(j.proc),
	}})
	return ad, s.expect(shadow.EventReady)
}

func (s *session) send(c shadow.Command) {
	s.t.Helper()
	if err := s.commands.Send(c); err != nil {
		s.t.Fatal(err)
	}
}

// next returns the shadow's next event.
func (s *session) next() shadow.Event {
	s.t.Helper()
	select {
	case ev := <-s.events:
		return ev
	case <-time.After(patience):
		s.t.Fatalf("no event from the shadow in %v", patience)
		return shadow.Event{}
	}
}

// expect returns the shadow's next event, which must be of type want.
func (s *session) expect(want shadow.EventType) shadow.Event {
	s.t.Helper()
	ev := s.next()
	if ev.Type != want {
		s.t.Fatalf("shadow event %+v, want %s", ev, want)
	}
	return ev
}

// output returns the content of one of the job's output files.
func (s *session) output(name string) string {
	s.t.Helper()
	b, err := os.ReadFile(filepath.Join(s.iwd, name))
	if err != nil {
		s.t.Fatal(err)
	}
	return string(b)
}

// dial connects as a starter does: the startd's certificate, the
// shadow's pinned.
func (s *session) dial(ready shadow.Event, cert, key string) *grpc.ClientConn {
	s.t.Helper()
	cfg, err := pki.PinnedClientConfig(cert, key, ready.Fingerprint)
	if err != nil {
		s.t.Fatal(err)
	}
	conn, err := wire.Dial(ready.Addr, cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { conn.Close() })
	return conn
}

// spec is what the startd tells the job's starter.
func (s *session) spec(ready shadow.Event, ad string) *starter.Spec {
	s.t.Helper()
	scratch := filepath.Join(s.t.TempDir(), "scratch")
	if err := os.Mkdir(scratch, 0o700); err != nil {
		s.t.Fatal(err)
	}
	return &starter.Spec{
		Slot: "slot1@exec", Host: "exec.example", ClaimID: "claim-1", JobAd: ad,
		ShadowAddr: ready.Addr, ShadowFingerprint: ready.Fingerprint, Secret: s.secret,
		ScratchDir: scratch, Sandbox: "process",
		CertFile: s.creds.cert, KeyFile: s.creds.key, CAFile: filepath.Join(s.creds.dir, pki.CACertFile),
		CheckpointKeyFile: s.creds.checkpointKey,
	}
}

// running is a starter at work.
type running struct {
	*starter.Starter
	done chan struct{}
	err  error
}

// start runs a starter for spec over conn, as the startd's starter
// process does.
func (s *session) start(spec *starter.Spec, conn *grpc.ClientConn, runner starter.Runner) *running {
	r := &running{Starter: starter.New(spec, conn, runner, testLogger(s.t, "starter")), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = r.Run(s.t.Context())
	}()
	s.t.Cleanup(func() { <-r.done })
	return r
}

// wait returns what the starter's Run returned.
func (r *running) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-r.done:
		return r.err
	case <-time.After(patience):
		t.Fatalf("the starter did not end in %v", patience)
		return nil
	}
}

// launch submits j and starts its starter over a connection of its own.
func (s *session) launch(j job, runner starter.Runner) *running {
	s.t.Helper()
	ad, ready := s.submit(j)
	spec := s.spec(ready, ad)
	return s.start(spec, s.dial(ready, s.creds.cert, s.creds.key), runner)
}

// nextJob returns the next job the runner started.
func nextJob(t *testing.T, r *fakeRunner) *fakeJob {
	t.Helper()
	select {
	case j := <-r.jobs:
		return j
	case <-time.After(patience):
		t.Fatalf("the runner started no job in %v", patience)
		return nil
	}
}

func TestSessionJobRunsAndExits(t *testing.T) {
	s := newSession(t)
	if err := os.WriteFile(filepath.Join(s.iwd, "in.txt"), []byte("from the submit side\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runner := newFakeRunner()
	r := s.launch(job{program: "stdout hello\nstderr oops\ncat\nexit 3",
		attrs: []string{`In = "in.txt"`, `Arguments = "a 'b c'"`, `Environment = "COLOUR=blue"`}}, runner)

	ex := s.expect(shadow.EventExecuting)
	if ex.Host != "exec.example" || ex.Restored || ex.RestoreFailure != "" {
		t.Errorf("executing %+v, want a fresh start on exec.example", ex)
	}
	end := s.expect(shadow.EventExited)
	if end.ExitCode != 3 || end.BySignal || end.UserCPU != 1.5 || end.MaxRSS != 1<<20 {
		t.Errorf("exited %+v, want code 3 and the job's usage", end)
	}
	if err := r.wait(t); err != nil {
		t.Errorf("starter: %v", err)
	}
	if got := s.output("out.0"); got != "hello\nfrom the submit side\n" {
		t.Errorf("Out holds %q, want the job's output and its input copied", got)
	}
	if got := s.output("err.0"); got != "oops\n" {
		t.Errorf("Err holds %q", got)
	}
	task := nextJob(t, runner).task
	if strings.Join(task.Args, "|") != "a|b c" {
		t.Errorf("arguments %q", task.Args)
	}
	for _, v := range []string{"COLOUR=blue", "_CONDOR_SCRATCH_DIR=" + task.ScratchDir} {
		if !slices.Contains(task.Env, v) {
			t.Errorf("environment %q lacks %s", task.Env, v)
		}
	}
}

func TestSessionAgentKillsJob(t *testing.T) {
	s := newSession(t)
	runner := newFakeRunner()
	r := s.launch(job{program: "stdout started\nwait\nstdout never", attrs: []string{`KillSig = "SIGINT"`}}, runner)
	s.expect(shadow.EventExecuting)
	j := nextJob(t, runner)

	s.send(shadow.Command{Kill: true, Reason: "removed by alice"})
	end := s.expect(shadow.EventKilled)
	if end.Reason != "removed by alice" || !end.BySignal || end.Signal != 2 {
		t.Errorf("killed %+v, want the agent's reason and SIGINT", end)
	}
	if err := r.wait(t); err != nil {
		t.Errorf("starter: %v", err)
	}
	if got := j.Received(); len(got) == 0 || got[0] != 2 {
		t.Errorf("the job received %v, want its kill_sig (SIGINT) first", got)
	}
	if got := s.output("out.0"); got != "started\n" {
		t.Errorf("Out holds %q", got)
	}
}

// TestSessionHolds: a job that cannot start is held with a reason the
// user can act on, and never reaches the runner.
func TestSessionHolds(t *testing.T) {
	for _, c := range []struct {
		name   string
		job    job
		code   int
		reason string
	}{
		{"missing executable", job{noExecutable: true}, 6, "Cannot fetch executable"},
		{"missing input", job{program: "exit 0", attrs: []string{`In = "absent.txt"`}}, 13, "Cannot fetch input"},
		{"bad arguments", job{program: "exit 0", attrs: []string{`Arguments = "'open"`}}, 6, "Bad Arguments"},
		{"bad environment", job{program: "exit 0", attrs: []string{`Environment = "NOVALUE"`}}, 6, "Bad Environment"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSession(t)
			runner := newFakeRunner()
			r := s.launch(c.job, runner)
			hold := s.expect(shadow.EventHold)
			if hold.Code != c.code || !strings.Contains(hold.Reason, c.reason) {
				t.Errorf("hold %+v, want code %d and %q", hold, c.code, c.reason)
			}
			if err := r.wait(t); err != nil {
				t.Errorf("starter: %v", err)
			}
			if len(runner.jobs) != 0 {
				t.Error("the runner started the job")
			}
		})
	}
}

func TestSessionSuspendContinue(t *testing.T) {
	s := newSession(t)
	runner := newFakeRunner()
	r := s.launch(job{program: "wait\nstdout done"}, runner)
	s.expect(shadow.EventExecuting)
	j := nextJob(t, runner)

	r.Suspend()
	if ev := s.expect(shadow.EventSuspended); ev.Reason == "" {
		t.Error("suspended without a reason")
	}
	r.Continue()
	s.expect(shadow.EventResumed)
	if sus, cont := j.Counts(); sus != 1 || cont != 1 {
		t.Errorf("the job was suspended %d and continued %d times, want once each", sus, cont)
	}
	j.Release()
	if end := s.expect(shadow.EventExited); end.ExitCode != 0 {
		t.Errorf("exited %+v", end)
	}
	if err := r.wait(t); err != nil {
		t.Errorf("starter: %v", err)
	}
	if got := s.output("out.0"); got != "done\n" {
		t.Errorf("Out holds %q", got)
	}
}

// TestSessionOwnerSuspends: the job's owner suspends the job and lets it
// continue (harrier suspend, harrier continue), through the shadow.
func TestSessionOwnerSuspends(t *testing.T) {
	s := newSession(t)
	runner := newFakeRunner()
	r := s.launch(job{program: "wait\nstdout done"}, runner)
	s.expect(shadow.EventExecuting)
	j := nextJob(t, runner)
	s.send(shadow.Command{Suspend: true})
	if ev := s.expect(shadow.EventSuspended); !strings.Contains(ev.Reason, "harrier suspend") {
		t.Errorf("suspended for %q, want its owner named", ev.Reason)
	}
	s.send(shadow.Command{Suspend: true, Resume: true})
	s.expect(shadow.EventResumed)
	if sus, cont := j.Counts(); sus != 1 || cont != 1 {
		t.Errorf("the job was suspended %d and continued %d times, want once each", sus, cont)
	}
	j.Release()
	s.expect(shadow.EventExited)
	if err := r.wait(t); err != nil {
		t.Errorf("starter: %v", err)
	}
}

// TestSessionCheckpointSuspended: a job checkpointed while suspended
// runs for its dump, which freezes it at a moment of its own, and is
// suspended again after it, with nothing said of its running.
func TestSessionCheckpointSuspended(t *testing.T) {
	s := newSession(t)
	runner := newFakeRunner()
	r := s.launch(migrationJob(), runner)
	s.expect(shadow.EventExecuting)
	j := nextJob(t, runner)
	s.send(shadow.Command{Suspend: true})
	s.expect(shadow.EventSuspended)
	s.send(shadow.Command{Checkpoint: true})
	s.expect(shadow.EventCheckpointed)
	// The next event is the kill's, not a resumption.
	s.send(shadow.Command{Kill: true, Reason: "removed by alice"})
	s.expect(shadow.EventKilled)
	if err := r.wait(t); err != nil {
		t.Errorf("starter: %v", err)
	}
	j.mu.Lock()
	atDump := j.stoppedAtDump
	j.mu.Unlock()
	// Suspended by its owner and after the dump; continued for the dump
	// and for its kill.
	if sus, cont := j.Counts(); atDump || sus != 2 || cont != 2 {
		t.Errorf("dumped suspended: %v; suspended %d and continued %d times, want twice each", atDump, sus, cont)
	}
}

// TestSessionOwnerSuspendOutlastsPolicy: a job its owner suspended stays
// suspended when the machine's owner policy, which suspended it too,
// lets it continue: the policy's continue is not the job owner's.
func TestSessionOwnerSuspendOutlastsPolicy(t *testing.T) {
	s := newSession(t)
	runner := newFakeRunner()
	r := s.launch(job{program: "wait"}, runner)
	s.expect(shadow.EventExecuting)
	j := nextJob(t, runner)
	s.send(shadow.Command{Suspend: true})
	s.expect(shadow.EventSuspended)
	r.Suspend()
	r.Continue()
	// Sent after the policy's controls: the next event would be the
	// job's resumption if the policy's continue had let it run.
	s.send(shadow.Command{Kill: true, Reason: "removed by alice"})
	s.expect(shadow.EventKilled)
	if err := r.wait(t); err != nil {
		t.Errorf("starter: %v", err)
	}
	if sus, cont := j.Counts(); sus != 1 || cont != 1 {
		t.Errorf("the job was suspended %d and continued %d times, want once each (continued for its kill)", sus, cont)
	}
}

// TestSessionSuspendedJobKilled: a job stopped for the owner is continued
// before its kill signal, which a stopped process could not handle.
func TestSessionSuspendedJobKilled(t *testing.T) {
	s := newSession(t)
	runner := newFakeRunner()
	r := s.launch(job{program: "wait"}, runner)
	s.expect(shadow.EventExecuting)
	j := nextJob(t, runner)
	r.Suspend()
	s.expect(shadow.EventSuspended)
	s.send(shadow.Command{Kill: true, Reason: "held by alice"})
	s.expect(shadow.EventKilled)
	if err := r.wait(t); err != nil {
		t.Errorf("starter: %v", err)
	}
	if _, cont := j.Counts(); cont != 1 {
		t.Errorf("the job was continued %d times before its kill, want once", cont)
	}
}

// vacateWithCheckpoint runs the job of migrationJob until its wait, takes
// a checkpoint at the agent's request (the job runs on), then has the
// startd vacate it, which checkpoints it again; the job is then evicted
// and its image is in the agent's store.
func vacateWithCheckpoint(t *testing.T, s *session, j job) {
	t.Helper()
	runner := newFakeRunner()
	r := s.launch(j, runner)
	s.expect(shadow.EventExecuting)
	nextJob(t, runner)

	s.send(shadow.Command{Checkpoint: true})
	ck := s.expect(shadow.EventCheckpointed)
	if ck.Vacate || ck.ImageBytes == 0 || ck.DumpSeconds == 0 {
		t.Errorf("checkpointed %+v, want a periodic checkpoint with its figures", ck)
	}
	r.Vacate()
	if ck := s.expect(shadow.EventCheckpointed); !ck.Vacate {
		t.Errorf("checkpointed %+v, want the vacate's", ck)
	}
	ev := s.expect(shadow.EventEvicted)
	if !strings.Contains(ev.Reason, "checkpointed") {
		t.Errorf("evicted %+v, want a reason that says it was checkpointed", ev)
	}
	if err := r.wait(t); err != nil {
		t.Errorf("starter: %v", err)
	}
	f, err := os.Open(filepath.Join(s.ckptDir, "1.0.ckpt"))
	if err != nil {
		t.Fatalf("the image is not in the agent's store: %v", err)
	}
	defer f.Close()
	m, err := checkpoint.Verify(f)
	if err != nil {
		t.Fatalf("the stored image: %v", err)
	}
	var names []string
	for _, f := range m.Files {
		names = append(names, f.Name)
	}
	if len(names) != 3 || !slices.Contains(names, imageFile) || !slices.Contains(names, "harrier-scratch.xfer") || m.Seal == "" {
		t.Errorf("the stored image holds %+v, want the fake's dump information and memory and the scratch directory, sealed", m)
	}
}

// migrationJob is a job that writes, waits (to be vacated there) and
// then, wherever it is by then, writes again and exits 5.
func migrationJob(attrs ...string) job {
	return job{program: "stdout before\nwait\nstdout after\nexit 5", attrs: attrs}
}

func TestSessionVacateAndRestore(t *testing.T) {
	s := newSession(t)
	vacateWithCheckpoint(t, s, migrationJob())
	if got := s.output("out.0"); got != "before\n" {
		t.Errorf("Out after the vacate holds %q", got)
	}

	// The job's next run, on another machine, is restored from its image.
	runner := newFakeRunner()
	r := s.launch(migrationJob("NumCkpts = 1"), runner)
	ex := s.expect(shadow.EventExecuting)
	if !ex.Restored || ex.RestoreSeconds != 0.03 || ex.RestoreFailure != "" {
		t.Errorf("executing %+v, want a restore with CRIU's time", ex)
	}
	if end := s.expect(shadow.EventExited); end.ExitCode != 5 {
		t.Errorf("exited %+v, want the restored job's exit 5", end)
	}
	if err := r.wait(t); err != nil {
		t.Errorf("starter: %v", err)
	}
	if got := s.output("out.0"); got != "before\nafter\n" {
		t.Errorf("Out holds %q, want the restored run's output after the first run's", got)
	}
}

func TestSessionRestoreFailure(t *testing.T) {
	restoreErr := errors.New("criu says no")
	t.Run("start afresh", func(t *testing.T) {
		s := newSession(t)
		vacateWithCheckpoint(t, s, migrationJob())
		runner := newFakeRunner()
		runner.restoreErr = restoreErr
		r := s.launch(migrationJob("NumCkpts = 1"), runner)
		ex := s.expect(shadow.EventExecuting)
		if ex.Restored || !strings.Contains(ex.RestoreFailure, "criu says no") {
			t.Errorf("executing %+v, want a fresh start that says why", ex)
		}
		nextJob(t, runner).Release()
		s.expect(shadow.EventExited)
		if err := r.wait(t); err != nil {
			t.Errorf("starter: %v", err)
		}
		// The fresh run's output replaces the first run's.
		if got := s.output("out.0"); got != "before\nafter\n" {
			t.Errorf("Out holds %q, want only the fresh run's output", got)
		}
	})
	t.Run("start afresh reading its input from the beginning", func(t *testing.T) {
		s := newSession(t)
		if err := os.WriteFile(filepath.Join(s.iwd, "in.txt"), []byte("the input\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		reader := func(attrs ...string) job {
			return job{program: "stdout before\nwait\ncat\nexit 5", attrs: append(attrs, `In = "in.txt"`)}
		}
		vacateWithCheckpoint(t, s, reader())
		runner := newFakeRunner()
		runner.restoreErr = restoreErr
		r := s.launch(reader("NumCkpts = 1"), runner)
		s.expect(shadow.EventExecuting)
		nextJob(t, runner).Release()
		s.expect(shadow.EventExited)
		if err := r.wait(t); err != nil {
			t.Errorf("starter: %v", err)
		}
		if got := s.output("out.0"); got != "before\nthe input\n" {
			t.Errorf("Out holds %q, want the fresh run's output with the whole input", got)
		}
	})
	t.Run("hold", func(t *testing.T) {
		s := newSession(t)
		vacateWithCheckpoint(t, s, migrationJob())
		runner := newFakeRunner()
		runner.restoreErr = restoreErr
		r := s.launch(migrationJob("NumCkpts = 1", `OnRestoreFailure = "hold"`), runner)
		hold := s.expect(shadow.EventHold)
		if !strings.Contains(hold.Reason, "Cannot restore the job from its checkpoint") || !strings.Contains(hold.Reason, "criu says no") {
			t.Errorf("hold %+v", hold)
		}
		if err := r.wait(t); err != nil {
			t.Errorf("starter: %v", err)
		}
	})
	t.Run("image not sealed by this pool", func(t *testing.T) {
		s := newSession(t)
		vacateWithCheckpoint(t, s, migrationJob())
		ad, ready := s.submit(migrationJob("NumCkpts = 1", `OnRestoreFailure = "hold"`))
		spec := s.spec(ready, ad)
		spec.CheckpointKeyFile = filepath.Join(t.TempDir(), "other.key")
		if err := checkpoint.CreateKeyFile(spec.CheckpointKeyFile); err != nil {
			t.Fatal(err)
		}
		runner := newFakeRunner()
		r := s.start(spec, s.dial(ready, s.creds.cert, s.creds.key), runner)
		hold := s.expect(shadow.EventHold)
		if !strings.Contains(hold.Reason, checkpoint.ErrForged.Error()) {
			t.Errorf("hold %+v, want the seal refused", hold)
		}
		if err := r.wait(t); err != nil {
			t.Errorf("starter: %v", err)
		}
		if len(runner.jobs) != 0 {
			t.Error("the runner ran a job from a forged image")
		}
	})
}

// TestSessionChangedInputNotRestored: a job whose input changed since its
// checkpoint is not restored (CRIU would refuse it); it starts afresh, and
// says why.
func TestSessionChangedInputNotRestored(t *testing.T) {
	s := newSession(t)
	in := filepath.Join(s.iwd, "in.dat")
	if err := os.WriteFile(in, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	opens := migrationJob()
	opens.program = "open " + in + " 5\n" + opens.program
	vacateWithCheckpoint(t, s, opens)
	if err := os.WriteFile(in, []byte("1234567"), 0o644); err != nil {
		t.Fatal(err)
	}
	opens.attrs = append(opens.attrs, "NumCkpts = 1")
	runner := newFakeRunner()
	r := s.launch(opens, runner)
	ex := s.expect(shadow.EventExecuting)
	if ex.Restored || !strings.Contains(ex.RestoreFailure, checkpoint.ErrInputChanged.Error()) {
		t.Errorf("executing %+v, want a fresh start because in.dat changed", ex)
	}
	nextJob(t, runner).Release()
	s.expect(shadow.EventExited)
	if err := r.wait(t); err != nil {
		t.Errorf("starter: %v", err)
	}
}

func TestSessionVacateWithoutCheckpoint(t *testing.T) {
	t.Run("checkpoint fails", func(t *testing.T) {
		s := newSession(t)
		runner := newFakeRunner()
		runner.checkpointErr = errors.New("dump failed")
		r := s.launch(job{program: "wait"}, runner)
		s.expect(shadow.EventExecuting)
		j := nextJob(t, runner)
		r.Vacate()
		failed := s.expect(shadow.EventCheckpointFailed)
		if !failed.Vacate || !strings.Contains(failed.Reason, "dump failed") {
			t.Errorf("checkpoint failed %+v", failed)
		}
		ev := s.expect(shadow.EventEvicted)
		if !strings.Contains(ev.Reason, "could not be checkpointed") {
			t.Errorf("evicted %+v", ev)
		}
		if err := r.wait(t); err != nil {
			t.Errorf("starter: %v", err)
		}
		if got := j.Received(); len(got) == 0 || got[0] != 15 {
			t.Errorf("the job received %v, want SIGTERM", got)
		}
	})
	t.Run("job wants none", func(t *testing.T) {
		s := newSession(t)
		runner := newFakeRunner()
		r := s.launch(job{program: "wait", attrs: []string{"WantCheckpoint = false"}}, runner)
		s.expect(shadow.EventExecuting)
		nextJob(t, runner)
		r.Vacate()
		ev := s.expect(shadow.EventEvicted)
		if ev.Reason != "the execute machine vacated the job" {
			t.Errorf("evicted %+v", ev)
		}
		if err := r.wait(t); err != nil {
			t.Errorf("starter: %v", err)
		}
		if _, err := os.Stat(filepath.Join(s.ckptDir, "1.0.ckpt")); err == nil {
			t.Error("an image was stored for a job that wants none")
		}
	})
	t.Run("shadow keeps no images", func(t *testing.T) {
		s := newSession(t)
		s.ckptDir = ""
		runner := newFakeRunner()
		ad, ready := s.submit(job{program: "wait"})
		r := s.start(s.spec(ready, ad), s.dial(ready, s.creds.cert, s.creds.key), runner)
		s.expect(shadow.EventExecuting)
		j := nextJob(t, runner)
		s.send(shadow.Command{Checkpoint: true})
		if ev := s.expect(shadow.EventCheckpointFailed); ev.Vacate || !strings.Contains(ev.Reason, "keeps no checkpoints") {
			t.Errorf("checkpoint failed %+v", ev)
		}
		j.Release()
		s.expect(shadow.EventExited)
		if err := r.wait(t); err != nil {
			t.Errorf("starter: %v", err)
		}
	})
}

// proxy forwards loopback TCP to target until it is cut.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	go p.serve()
	t.Cleanup(p.cut)
	return p
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(u, c); u.Close() }()
		go func() { _, _ = io.Copy(c, u); c.Close() }()
	}
}

// cut closes the listener and every connection: the network between the
// two is gone.
func (p *proxy) cut() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

// TestSessionLostShadow: a starter that loses its shadow kills the job,
// since no job runs without its owner's representative; the shadow,
// having lost the starter, reports the run failed, to be run again.
func TestSessionLostShadow(t *testing.T) {
	s := newSession(t)
	runner := newFakeRunner()
	ad, ready := s.submit(job{program: "wait"})
	p := newProxy(t, ready.Addr)
	via := ready
	via.Addr = p.ln.Addr().String()
	r := s.start(s.spec(via, ad), s.dial(via, s.creds.cert, s.creds.key), runner)
	s.expect(shadow.EventExecuting)
	j := nextJob(t, runner)

	p.cut()
	if err := r.wait(t); err == nil {
		t.Error("the starter reported its job's end to a shadow it had lost")
	}
	if got := j.Received(); len(got) == 0 || got[0] != 15 {
		t.Errorf("the job received %v, want SIGTERM", got)
	}
	if ev := s.expect(shadow.EventFailed); !strings.Contains(ev.Reason, "lost the starter") {
		t.Errorf("failed %+v", ev)
	}
}

// TestSessionRefusesStrangers: only a starter of the pool holding the
// job's secret gets the job; the shadow goes on waiting for the right one.
func TestSessionRefusesStrangers(t *testing.T) {
	s := newSession(t)
	ad, ready := s.submit(job{program: "stdout hello"})
	agentCert, agentKey := s.creds.issue(t, "agent@submit")
	other := newCredentials(t)
	for _, c := range []struct {
		name      string
		cert, key string
		secret    string
	}{
		{"wrong secret", s.creds.cert, s.creds.key, "guess"},
		{"not a startd", agentCert, agentKey, s.secret},
		{"another pool", other.cert, other.key, s.secret},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := s.spec(ready, ad)
			spec.Secret = c.secret
			runner := newFakeRunner()
			r := s.start(spec, s.dial(ready, c.cert, c.key), runner)
			if err := r.wait(t); err == nil {
				t.Error("the shadow served the job to a stranger")
			}
			if len(runner.jobs) != 0 {
				t.Error("a stranger ran the job")
			}
		})
	}
	r := s.start(s.spec(ready, ad), s.dial(ready, s.creds.cert, s.creds.key), newFakeRunner())
	s.expect(shadow.EventExecuting)
	s.expect(shadow.EventExited)
	if err := r.wait(t); err != nil {
		t.Errorf("starter: %v", err)
	}
	if got := s.output("out.0"); got != "hello\n" {
		t.Errorf("Out holds %q", got)
	}
}

// TestSessionClaimsSecondJob: the claim's next job is served on the same
// link (address and session certificate), and its starter reuses the
// connection.
func TestSessionClaimsSecondJob(t *testing.T) {
	s := newSession(t)
	runner := newFakeRunner()
	ad, first := s.submit(job{proc: 0, program: "stdout one\nexit 1"})
	conn := s.dial(first, s.creds.cert, s.creds.key)
	r := s.start(s.spec(first, ad), conn, runner)
	s.expect(shadow.EventExecuting)
	if end := s.expect(shadow.EventExited); end.ExitCode != 1 {
		t.Errorf("first job exited %+v", end)
	}
	if err := r.wait(t); err != nil {
		t.Errorf("first starter: %v", err)
	}

	ad, second := s.submit(job{proc: 1, program: "stdout two\nexit 2"})
	if second.Addr != first.Addr || second.Fingerprint != first.Fingerprint {
		t.Errorf("second job served at %s (%s), want the claim's link %s (%s)", second.Addr, second.Fingerprint, first.Addr, first.Fingerprint)
	}
	r = s.start(s.spec(second, ad), conn, runner)
	s.expect(shadow.EventExecuting)
	if end := s.expect(shadow.EventExited); end.ExitCode != 2 {
		t.Errorf("second job exited %+v", end)
	}
	if err := r.wait(t); err != nil {
		t.Errorf("second starter: %v", err)
	}
	if a, b := s.output("out.0"), s.output("out.1"); a != "one\n" || b != "two\n" {
		t.Errorf("outputs %q and %q", a, b)
	}
}

// TestSessionAgentGoesAway: when the agent's commands end, the shadow
// stops the job it serves.
func TestSessionAgentGoesAway(t *testing.T) {
	s := newSession(t)
	runner := newFakeRunner()
	r := s.launch(job{program: "wait"}, runner)
	s.expect(shadow.EventExecuting)
	nextJob(t, runner)
	s.input.Close()
	if ev := s.expect(shadow.EventKilled); ev.Reason != "the agent went away" {
		t.Errorf("killed %+v", ev)
	}
	if err := r.wait(t); err != nil {
		t.Errorf("starter: %v", err)
	}
}

// TestSessionKillBeforeAttach: a job the agent no longer wants before its
// starter came ends the run at once, and a starter that comes late is
// turned away.
func TestSessionKillBeforeAttach(t *testing.T) {
	s := newSession(t)
	ad, ready := s.submit(job{program: "stdout hello"})
	s.send(shadow.Command{Kill: true, Reason: "the claim was refused"})
	if ev := s.expect(shadow.EventFailed); ev.Reason != "the claim was refused" {
		t.Errorf("failed %+v", ev)
	}
	runner := newFakeRunner()
	r := s.start(s.spec(ready, ad), s.dial(ready, s.creds.cert, s.creds.key), runner)
	if err := r.wait(t); err == nil {
		t.Error("a late starter was given the job")
	}
	if len(runner.jobs) != 0 {
		t.Error("a late starter ran the job")
	}
}

// startd plays a startd's side of a claim: it steers a starter.ServeClaim
// with Commands and hears its Events, as the startd steers its starter
// process through the process's standard input and output.
type startd struct {
	commands *childproc.Sender[starter.Command]
	input    *io.PipeWriter
	events   chan starter.Event
	done     chan struct{}
	err      error
}

// claim starts the starter's side of a claim whose jobs runner runs.
func (s *session) claim(runner starter.Runner) *startd {
	in, input := io.Pipe()
	out, report := io.Pipe()
	d := &startd{commands: childproc.NewSender[starter.Command](input), input: input,
		events: make(chan starter.Event, 16), done: make(chan struct{})}
	go func() {
		defer close(d.done)
		d.err = starter.ServeClaim(s.t.Context(), in, report, func(spec *starter.Spec) starter.Runner {
			spec.Sandbox = "process" // as a startd without containers settles it
			return runner
		}, testLogger(s.t, "starter"))
		in.Close()
		report.Close()
	}()
	go func() {
		r := childproc.NewReceiver[starter.Event](out)
		for {
			ev, err := r.Receive()
			if err != nil {
				return
			}
			d.events <- ev
		}
	}()
	s.t.Cleanup(func() {
		input.Close()
		<-d.done
	})
	return d
}

func (d *startd) send(t *testing.T, c starter.Command) {
	t.Helper()
	if err := d.commands.Send(c); err != nil {
		t.Fatal(err)
	}
}

// ended waits for the starter to report its job's end.
func (d *startd) ended(t *testing.T) {
	t.Helper()
	select {
	case ev := <-d.events:
		if ev.Type != starter.EventEnded {
			t.Fatalf("starter event %+v, want %s", ev, starter.EventEnded)
		}
	case <-time.After(patience):
		t.Fatalf("the starter reported no end in %v", patience)
	}
}

// wait returns what ServeClaim returned.
func (d *startd) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-d.done:
		return d.err
	case <-time.After(patience):
		t.Fatalf("the starter's claim did not end in %v", patience)
		return nil
	}
}

// TestClaimServesJobsInTurn: a claim's two jobs run one after the other,
// both sides keeping their end of one link; each job's end is reported to
// the startd, and the end of the startd's commands ends the claim.
func TestClaimServesJobsInTurn(t *testing.T) {
	s := newSession(t)
	d := s.claim(newFakeRunner())
	for proc, code := range []int{3, 4} {
		ad, ready := s.submit(job{proc: proc, program: "stdout job " + strconv.Itoa(proc) + "\nexit " + strconv.Itoa(code)})
		spec := s.spec(ready, ad)
		spec.Reusable = true
		spec.Sandbox = ""
		d.send(t, starter.Command{Job: spec})
		s.expect(shadow.EventExecuting)
		if end := s.expect(shadow.EventExited); end.ExitCode != code {
			t.Errorf("job %d exited %+v, want code %d", proc, end, code)
		}
		d.ended(t)
	}
	d.input.Close()
	if err := d.wait(t); err != nil {
		t.Errorf("claim: %v", err)
	}
	if a, b := s.output("out.0"), s.output("out.1"); a != "job 0\n" || b != "job 1\n" {
		t.Errorf("outputs %q and %q", a, b)
	}
}

// TestClaimCommands: the startd's suspend, continue and vacate reach the
// job; a vacate checkpoints it, and ends the claim without another job.
func TestClaimCommands(t *testing.T) {
	s := newSession(t)
	runner := newFakeRunner()
	d := s.claim(runner)
	ad, ready := s.submit(migrationJob())
	spec := s.spec(ready, ad)
	spec.Reusable = true
	d.send(t, starter.Command{Job: spec})
	s.expect(shadow.EventExecuting)
	j := nextJob(t, runner)
	d.send(t, starter.Command{Suspend: true})
	s.expect(shadow.EventSuspended)
	d.send(t, starter.Command{Continue: true})
	s.expect(shadow.EventResumed)
	d.send(t, starter.Command{Vacate: true})
	if ck := s.expect(shadow.EventCheckpointed); !ck.Vacate {
		t.Errorf("checkpointed %+v", ck)
	}
	s.expect(shadow.EventEvicted)
	if err := d.wait(t); err != nil {
		t.Errorf("claim: %v", err)
	}
	if len(d.events) != 0 {
		t.Errorf("a vacated claim reported %+v, as if it took another job", <-d.events)
	}
	if sus, cont := j.Counts(); sus != 1 || cont != 1 {
		t.Errorf("suspended %d and continued %d times", sus, cont)
	}
}

// TestClaimKill: the startd's kill stops the job and ends the claim. The
// kill cancels the starter's work, and with it the session: the job gets
// SIGKILL, or, should the lost session be noticed first, its kill signal.
func TestClaimKill(t *testing.T) {
	s := newSession(t)
	runner := newFakeRunner()
	d := s.claim(runner)
	ad, ready := s.submit(job{program: "wait"})
	d.send(t, starter.Command{Job: s.spec(ready, ad)})
	s.expect(shadow.EventExecuting)
	j := nextJob(t, runner)
	d.send(t, starter.Command{Kill: true})
	d.wait(t)
	if got := j.Received(); len(got) == 0 || (got[0] != unix.SIGKILL && got[0] != unix.SIGTERM) {
		t.Errorf("the job received %v, want SIGKILL or SIGTERM", got)
	}
	if ev := s.next(); ev.Type != shadow.EventFailed && ev.Type != shadow.EventExited {
		t.Errorf("shadow event %+v, want the run failed or the job's end", ev)
	}
}
