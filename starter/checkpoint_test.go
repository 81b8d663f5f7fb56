package starter

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"harrier.dev/harrier/checkpoint"
)

// dumpJob is a Job that can be checkpointed and records what happens to
// it, in order.
type dumpJob struct{ steps *[]string }

func (j dumpJob) Pid() int                 { return 1 }
func (j dumpJob) Signal(unix.Signal) error { return nil }
func (j dumpJob) Suspend() error           { return nil }
func (j dumpJob) Continue() error          { return nil }
func (j dumpJob) Wait() (Exit, error)      { return Exit{}, nil }
func (j dumpJob) Usage() (Usage, error)    { return Usage{}, nil }
func (j dumpJob) Checkpoint(context.Context, string, bool) (CheckpointStats, error) {
	*j.steps = append(*j.steps, "dump")
	return CheckpointStats{}, nil
}

// TestCheckpointWaitsForTheJobsWrites checks that a checkpoint brings the
// job's writes to the submit side after the dump, and that one whose
// writes cannot get there is not sent: a job restored from it would miss
// them.
func TestCheckpointWaitsForTheJobsWrites(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "checkpoint.key")
	if err := checkpoint.CreateKeyFile(key); err != nil {
		t.Fatal(err)
	}
	seal, err := sealFor(&Spec{JobAd: `[ GlobalJobId = "submit#1.0#1700000000"; Owner = "alice" ]`, CheckpointKeyFile: key})
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	lost := errors.New("the shadow is gone")
	// No client: sending the checkpoint would fail the test.
	c := &checkpoints{scratch: filepath.Join(dir, "scratch"), logger: slog.New(slog.DiscardHandler), seal: seal,
		syncFiles: func(context.Context) error {
			steps = append(steps, "sync")
			return lost
		}}
	err = c.take(context.Background(), dumpJob{&steps}, true)
	if !errors.Is(err, lost) {
		t.Errorf("take = %v, want the sync's error", err)
	}
	if len(steps) != 2 || steps[0] != "dump" || steps[1] != "sync" {
		t.Errorf("steps %v, want the dump, then the sync", steps)
	}
}
