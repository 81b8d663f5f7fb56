package startd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"harrier.dev/harrier/childproc"
	"harrier.dev/harrier/fusectl"
	"harrier.dev/harrier/starter"
	"harrier.dev/harrier/wire"
)

// waitReady waits until a test's starter has written "ready" to its log.
func waitReady(t *testing.T, logPath string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		b, _ := os.ReadFile(logPath)
		if bytes.Contains(b, []byte("ready")) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the starter never got ready; log %q", b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestKillEscalatesToSIGKILL(t *testing.T) {
	dir := t.TempDir()
	// The starter and everything it runs ignore SIGTERM.
	argv := []string{"/bin/sh", "-c", "trap '' TERM; echo ready >&2; while :; do sleep 0.05; done"}
	r, err := startStarter(argv, nil, dir, "slot1", starter.Spec{JobAd: "[]"})
	if err != nil {
		t.Fatal(err)
	}
	go r.wait()
	waitReady(t, filepath.Join(dir, "starter.slot1.log"))
	r.kill(50 * time.Millisecond)
	var ee *exec.ExitError
	if !errors.As(r.err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("starter ended with %v, want SIGKILL", r.err)
	}
	if _, err := os.Stat(r.scratch); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("scratch directory after kill: %v", err)
	}
	r.kill(time.Hour) // a second kill of a finished starter returns at once
}

// A starter that reports each job's end is given the claim's next job,
// each in a fresh scratch directory, until it is stopped.
func TestStarterServesTheClaimsJobsInTurn(t *testing.T) {
	dir := t.TempDir()
	specs := filepath.Join(t.TempDir(), "specs")
	argv := []string{"/bin/sh", "-c", `while read -r spec; do echo "$spec" >> "$1"; echo '{"type":"ended"}'; done`, "starter", specs}
	var proc *starterProc
	var scratches []string
	for i := range 3 {
		r, err := startStarter(argv, proc, dir, "slot1", starter.Spec{JobAd: "[]", ShadowAddr: "127.0.0.1:9", ShadowFingerprint: "f1"})
		if err != nil {
			t.Fatal(err)
		}
		if proc != nil && r.proc != proc {
			t.Errorf("job %d: a new starter, not the kept one", i)
		}
		r.wait()
		if r.err != nil {
			t.Errorf("job %d: %v", i, r.err)
		}
		if _, err := os.Stat(r.scratch); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("job %d: scratch directory after the job: %v", i, err)
		}
		scratches = append(scratches, r.scratch)
		if proc = r.kept(); proc == nil {
			t.Fatalf("job %d: the starter was not kept", i)
		}
	}
	proc.stop()
	b, err := os.ReadFile(specs)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) != len(scratches) {
		t.Fatalf("the starter got %d specs, want %d", len(lines), len(scratches))
	}
	for i, line := range lines {
		var c starter.Command
		err := json.Unmarshal(line, &c)
		spec := c.Job
		if err == nil && spec == nil {
			err = errors.New("no job")
		} else if err == nil && (spec.ScratchDir != scratches[i] || !spec.Reusable) {
			err = fmt.Errorf("scratch %s, reusable %v; want %s, true", spec.ScratchDir, spec.Reusable, scratches[i])
		}
		if err != nil {
			t.Errorf("spec %d: %v", i, err)
		}
	}
	if scratches[0] == scratches[1] {
		t.Errorf("two jobs shared the scratch directory %s", scratches[0])
	}
}

func TestStartStarterFailureLeavesNoScratch(t *testing.T) {
	dir := t.TempDir()
	if _, err := startStarter([]string{filepath.Join(dir, "missing")}, nil, dir, "slot1", starter.Spec{}); err == nil {
		t.Fatal("started a missing starter")
	}
	if d := scratchDirs(t, dir); len(d) != 0 {
		t.Errorf("scratch left behind: %v", d)
	}
}

func TestRemoveScratchKeepsLogs(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"scratch.slot1.123/a/b", "scratch.slot2.456", "other"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "starter.slot1.log"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := removeScratch(dir); err != nil {
		t.Fatal(err)
	}
	if d := scratchDirs(t, dir); len(d) != 0 {
		t.Errorf("scratch left: %v", d)
	}
	for _, keep := range []string{"other", "starter.slot1.log"} {
		if _, err := os.Stat(filepath.Join(dir, keep)); err != nil {
			t.Errorf("%s removed: %v", keep, err)
		}
	}
	if err := removeScratch(filepath.Join(dir, "missing")); err == nil {
		t.Error("cleaning a missing directory succeeded")
	}
}

// The startd gives a claim's next job to the starter of its previous one,
// and lets that starter go when the claim ends.
func TestClaimKeepsItsStarter(t *testing.T) {
	const slot = "slot1@exec1"
	const script = `while read -r spec; do echo $$ >> "$1/pids"; echo '{"type":"ended"}'; done; touch "$1/gone"`
	h := newHarness(t, func(s *Startd) {
		out := s.cfg.StarterCommand[len(s.cfg.StarterCommand)-1] // the harness's output directory
		s.cfg.StarterCommand = []string{"/bin/sh", "-c", script, "starter", out}
	})
	ctx := t.Context()
	if _, err := h.client.Matched(ctx, &wire.StartdMatchedRequest{Slot: "slot1", ClaimId: "c1", JobAd: jobAd}); err != nil {
		t.Fatal(err)
	}
	if r, err := h.client.RequestClaim(ctx, &wire.RequestClaimRequest{Slot: "slot1", ClaimId: "c1", JobAd: jobAd, Agent: "agent@submit"}); err != nil || !r.Accepted {
		t.Fatalf("claim: %+v, %v", r, err)
	}
	// waitIdle waits until the slot is Claimed/Idle, with a kept starter
	// after the first job.
	waitIdle := func(kept bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; {
			h.s.mu.Lock()
			p, ok := h.s.slots[0].phase.(claimedIdle)
			h.s.mu.Unlock()
			if ok && (p.starter != nil) == kept {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("slot not Claimed/Idle (kept starter: %v)", kept)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for i := range 3 {
		waitIdle(i > 0)
		if _, err := h.client.ActivateClaim(ctx, &wire.ActivateClaimRequest{ClaimId: "c1", JobAd: jobAd, ShadowAddr: "10.0.0.1:9", ShadowFingerprint: "f1", Secret: "s3cret"}); err != nil {
			t.Fatal(err)
		}
	}
	waitIdle(true)
	h.collector.waitStatus(t, slot, Status{Claimed, Idle})
	pids := strings.Fields(string(h.waitFile(t, "pids")))
	if len(pids) != 3 || pids[0] != pids[1] || pids[1] != pids[2] {
		t.Errorf("jobs ran in starters %v, want one starter for all three", pids)
	}
	if _, err := os.Stat(filepath.Join(h.outDir, "gone")); err == nil {
		t.Error("the kept starter went while the claim lasts")
	}
	if _, err := h.client.ReleaseClaim(ctx, &wire.ReleaseClaimRequest{ClaimId: "c1"}); err != nil {
		t.Fatal(err)
	}
	h.waitFile(t, "gone")
	if d := scratchDirs(t, h.execDir); len(d) != 0 {
		t.Errorf("scratch left: %v", d)
	}
}

// Starting a starter happens outside the startd's lock: while one is slow
// to take its job, the claim can still be released, and the job that was
// starting is then stopped rather than run on a slot no longer claimed.
func TestReleaseDuringActivation(t *testing.T) {
	// The starter reads its spec only once the test creates "read"; a
	// spec bigger than a pipe's buffer keeps the startd writing it until
	// then. The pid file is renamed into place so that it is never read
	// half-written.
	const script = `echo $$ > "$1/pid.new" && mv "$1/pid.new" "$1/pid"
while [ ! -e "$1/read" ]; do sleep 0.05; done
head -n 1 > "$1/spec.json"
while [ ! -e "$1/go" ]; do sleep 0.05; done`
	h := newHarness(t, func(s *Startd) {
		out := s.cfg.StarterCommand[len(s.cfg.StarterCommand)-1]
		s.cfg.StarterCommand = []string{"/bin/sh", "-c", script, "starter", out}
		s.killGrace = 100 * time.Millisecond
	})
	ctx := t.Context()
	const slot = "slot1@exec1"
	h.collector.waitStatus(t, slot, Status{Unclaimed, Idle})
	if _, err := h.client.Matched(ctx, &wire.StartdMatchedRequest{Slot: slot, ClaimId: "c1", JobAd: jobAd}); err != nil {
		t.Fatal(err)
	}
	if r, err := h.client.RequestClaim(ctx, &wire.RequestClaimRequest{Slot: slot, ClaimId: "c1", JobAd: jobAd}); err != nil || !r.Accepted {
		t.Fatalf("claim: %+v, %v", r, err)
	}
	big := strings.TrimSuffix(jobAd, "]") + `; Padding = "` + strings.Repeat("x", 256<<10) + `" ]`
	activated := make(chan error, 1)
	go func() {
		_, err := h.client.ActivateClaim(ctx, &wire.ActivateClaimRequest{ClaimId: "c1", JobAd: big, ShadowAddr: "10.0.0.1:9", ShadowFingerprint: "f1", Secret: "s3cret"})
		activated <- err
	}()
	pid, err := strconv.Atoi(strings.TrimSpace(string(h.waitFile(t, "pid"))))
	if err != nil {
		t.Fatal(err)
	}

	// The starter is stuck taking its spec; the startd must still answer.
	if st := h.s.slotState("slot1"); st != (Status{Claimed, Idle}) {
		t.Errorf("while the job starts: %v, want Claimed/Idle", st)
	}
	_, err = h.client.ActivateClaim(ctx, &wire.ActivateClaimRequest{ClaimId: "c1", JobAd: jobAd, ShadowAddr: "10.0.0.1:9", ShadowFingerprint: "f1", Secret: "s3cret"})
	wantCode(t, err, codes.FailedPrecondition)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := h.client.ReleaseClaim(rctx, &wire.ReleaseClaimRequest{ClaimId: "c1"}); err != nil {
		t.Fatalf("release while the job starts: %v", err)
	}
	if err := os.WriteFile(filepath.Join(h.outDir, "read"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wantCode(t, <-activated, codes.Aborted)
	for deadline := time.Now().Add(30 * time.Second); syscall.Kill(pid, 0) == nil || len(scratchDirs(t, h.execDir)) != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the abandoned starter %d or its scratch directory is still there", pid)
		}
	}
	if st := h.s.slotState("slot1"); st != (Status{Unclaimed, Idle}) {
		t.Errorf("after the release: %v, want Unclaimed/Idle", st)
	}
}

// TestRemoveImageAreas unmounts and removes the checkpoint image areas
// of a slot that a killed starter left, in memory or on disk, and
// nothing else.
func TestRemoveImageAreas(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root (CI runs as root)")
	}
	dir := t.TempDir()
	for _, d := range []string{"ckpt.scratch.slot1.123.1", "restore.scratch.slot1.123/image", "ckpt.scratch.slot2.456.1", "scratch.slot1.123"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	mounted := filepath.Join(dir, "ckpt.scratch.slot1.123.1")
	if err := syscall.Mount("tmpfs", mounted, "tmpfs", 0, "mode=0700"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(mounted, syscall.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(mounted, "pages-1.img"), []byte("pages"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := removeImageAreas(dir, "ckpt.scratch.slot1.", "restore.scratch.slot1."); err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"ckpt.scratch.slot1.123.1", "restore.scratch.slot1.123"} {
		if _, err := os.Stat(filepath.Join(dir, gone)); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", gone, err)
		}
	}
	for _, keep := range []string{"ckpt.scratch.slot2.456.1", "scratch.slot1.123"} {
		if _, err := os.Stat(filepath.Join(dir, keep)); err != nil {
			t.Errorf("%s removed: %v", keep, err)
		}
	}
}

// TestKillFreesAStarterStuckOnItsMount: a starter killed while its own
// stat of its iofs mount waited for an answer its server had taken (a
// thread the kill ended) exits all the same, its mount's connection
// aborted, and its mount is gone.
func TestKillFreesAStarterStuckOnItsMount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting FUSE and writing fusectl need root")
	}
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(stuckStarterEnv, "1")
	r, err := startStarter([]string{exe}, nil, dir, "slot1", starter.Spec{JobAd: "[]"})
	if err != nil {
		t.Fatal(err)
	}
	go r.wait()
	waitReady(t, filepath.Join(dir, "starter.slot1.log"))
	killed := make(chan struct{})
	go func() {
		r.kill(50 * time.Millisecond)
		close(killed)
	}()
	mnt := filepath.Join(starter.JobDirsDir(dir), scratchPrefix+"slot1.dir")
	select {
	case <-killed:
	case <-time.After(30 * time.Second):
		// Free it, so that the test's clean-up does not hang on it.
		_ = fusectl.Abort(mnt)
		_ = unix.Unmount(mnt, unix.MNT_DETACH)
		t.Fatal("the killed starter does not exit")
	}
	var ee *exec.ExitError
	if !errors.As(r.err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("starter ended with %v, want SIGKILL", r.err)
	}
	if err := fusectl.Abort(mnt); !errors.Is(err, fusectl.ErrNotMounted) {
		t.Errorf("the starter's mount after its end: %v", err)
	}
}

// TestStarterRuntimeSizedToSlot: a starter's Go runtime gets its slot's
// CPUs (at least one), not the whole machine's, and the collector of a
// process with a small heap (childproc.Env).
func TestStarterRuntimeSizedToSlot(t *testing.T) {
	for _, name := range []string{"GOMAXPROCS", "GOGC"} {
		t.Setenv(name, "")
		os.Unsetenv(name)
	}
	for _, c := range []struct {
		cpus int64
		want int
	}{{0, 1}, {1, 1}, {int64(runtime.NumCPU()), runtime.NumCPU()}} {
		dir := t.TempDir()
		argv := []string{"/bin/sh", "-c", `echo "procs=$GOMAXPROCS gogc=$GOGC ready" >&2; cat >/dev/null`}
		r, err := startStarter(argv, nil, dir, "slot1", starter.Spec{JobAd: "[]", Cpus: c.cpus})
		if err != nil {
			t.Fatal(err)
		}
		go r.wait()
		logPath := filepath.Join(dir, "starter.slot1.log")
		waitReady(t, logPath)
		r.kill(50 * time.Millisecond)
		b, _ := os.ReadFile(logPath)
		if want := fmt.Sprintf("procs=%d gogc=%d ready", c.want, childproc.ChildGOGC); !bytes.Contains(b, []byte(want)) {
			t.Errorf("slot of %d CPUs: the starter logged %q, want %q", c.cpus, b, want)
		}
	}
}
