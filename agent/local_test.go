package agent_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

// localJob is the attributes of a scheduler universe job running the shell
// script in dir, its output in dir/out.
func localJob(dir, script string) []string {
	return []string{"JobUniverse = 7", `Cmd = "/bin/sh"`, "Arguments = " + classad.String("-c '"+script+"'").String(),
		"Iwd = " + classad.String(dir).String(), `Out = "out"`, `Err = "err"`}
}

// TestLocalJobRunsOnTheSubmitMachine: a scheduler universe job runs with
// no match, in its Iwd, told its id in CONDOR_ID; its exit is the job's.
// A match offered for it is refused.
func TestLocalJobRunsOnTheSubmitMachine(t *testing.T) {
	p := newPool(t, obeyingShadow, &fakeStartd{})
	dir := t.TempDir()
	id := p.submit(localJob(dir, `echo "$CONDOR_ID in $(pwd)"; exit 3`)...)
	ad, left := p.await(id, "JobStatus == 4")
	if !left || intAttr(ad, "ExitCode") != 3 || intAttr(ad, "NumJobStarts") != 1 {
		t.Fatalf("left %v, ExitCode %d, NumJobStarts %d: %s", left, intAttr(ad, "ExitCode"), intAttr(ad, "NumJobStarts"), ad)
	}
	if out, _ := os.ReadFile(filepath.Join(dir, "out")); string(out) != id+" in "+dir+"\n" {
		t.Errorf("the job wrote %q", out)
	}

	id = p.submit(localJob(dir, "sleep 600")...)
	p.await(id, "JobStatus == 2")
	if err := p.match(id); err == nil {
		t.Error("a match for a local job was taken")
	}
	if activations, _ := p.startd.seen(); len(activations) != 0 {
		t.Errorf("a local job's claim was activated: %v", activations)
	}
}

// TestLocalJobRemovedWithItsSignal: harrier rm sends a local job its
// remove_kill_sig, which it may act on before it exits; the job leaves
// the queue removed.
func TestLocalJobRemovedWithItsSignal(t *testing.T) {
	p := newPool(t, obeyingShadow, &fakeStartd{})
	dir := t.TempDir()
	id := p.submit(append(localJob(dir, `trap "echo removed; exit 2" USR1; echo started; while :; do sleep 0.1; done`),
		`RemoveKillSig = "SIGUSR1"`)...)
	p.await(id, "JobStatus == 2")
	// The trap is set once the script has written its first line.
	for deadline := time.Now().Add(patience); ; time.Sleep(10 * time.Millisecond) {
		if out, _ := os.ReadFile(filepath.Join(dir, "out")); strings.HasPrefix(string(out), "started") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the job never started")
		}
	}
	p.act(wire.ActRequest_REMOVE, id)
	ad, left := p.await(id, "JobStatus == 3")
	if !left {
		t.Errorf("the removed job stayed in the queue: %s", ad)
	}
	if out, _ := os.ReadFile(filepath.Join(dir, "out")); string(out) != "started\nremoved\n" {
		t.Errorf("the job wrote %q, want its trap of SIGUSR1 to have run", out)
	}
}

// TestLocalJobStartedAgain: a local job whose exit its on_exit_remove
// does not accept (killed by a signal, as condor_dagman's policy says) is
// started again, as HTCondor's schedd restarts condor_dagman.
func TestLocalJobStartedAgain(t *testing.T) {
	p := newPool(t, obeyingShadow, &fakeStartd{})
	dir := t.TempDir()
	id := p.submit(append(localJob(dir, `if [ -e once ]; then exit 0; fi; touch once; kill -9 $$`),
		"OnExitRemove = (ExitSignal =?= 11 || (ExitCode =!= undefined && ExitCode >= 0 && ExitCode <= 2))")...)
	ad, _ := p.await(id, "JobStatus == 4")
	if intAttr(ad, "NumJobStarts") != 2 || intAttr(ad, "ExitCode") != 0 {
		t.Errorf("NumJobStarts %d ExitCode %d, want 2 and 0: %s", intAttr(ad, "NumJobStarts"), intAttr(ad, "ExitCode"), ad)
	}
	if intAttr(ad, "LocalJobPid") <= 0 {
		t.Errorf("no LocalJobPid: %s", ad)
	}
}
