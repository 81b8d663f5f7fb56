package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"harrier.dev/harrier/sandbox"
	"harrier.dev/harrier/starter"
)

// chooseRunner returns the runner the startd chose for the job: a
// container per job, or a plain process where containers are not
// available. A container runner that cannot be set up fails each job's
// start with the reason, so that the job goes on hold and says why.
// With no mode in the spec, it makes the startd's automatic choice:
// containers where they work.
func chooseRunner(spec *starter.Spec, logger *slog.Logger) starter.Runner {
	switch spec.Sandbox {
	case "container":
	case "":
		if sandbox.Available() != nil {
			return starter.ProcessRunner{}
		}
	default:
		return starter.ProcessRunner{}
	}
	// The scratch directory is in the startd's execute directory.
	slot, _, _ := strings.Cut(spec.Slot, "@")
	r, err := sandbox.NewRunner(sandbox.Config{
		StateRoot: sandbox.StateRoot(filepath.Dir(spec.ScratchDir)),
		Slot:      slot,
		Logger:    logger,
	})
	if err != nil {
		return failingRunner{fmt.Errorf("Cannot run jobs in containers on this machine: %w", err)}
	}
	return containerRunner{r}
}

// failingRunner refuses every job with the same error.
type failingRunner struct{ err error }

func (f failingRunner) Start(context.Context, *starter.Task) (starter.Job, error) { return nil, f.err }

// containerRunner adapts sandbox.Runner to starter.Runner.
type containerRunner struct{ r *sandbox.Runner }

func (c containerRunner) Start(ctx context.Context, t *starter.Task) (starter.Job, error) {
	j, err := c.r.Start(ctx, &sandbox.Task{
		ID: t.ID, Path: t.Path, Args: t.Args, Env: t.Env, Dir: t.Dir, ScratchDir: t.ScratchDir,
		Stdin: t.Stdin, Stdout: t.Stdout, Stderr: t.Stderr,
		Cpus: t.Cpus, MemoryMB: t.MemoryMB, DiskKB: t.DiskKB,
	})
	if err != nil {
		return nil, err
	}
	return containerJob{j}, nil
}

// containerJob adapts *sandbox.Job to starter.Job.
type containerJob struct{ j *sandbox.Job }

func (c containerJob) Pid() int                     { return c.j.Pid() }
func (c containerJob) Signal(sig unix.Signal) error { return c.j.Signal(sig) }
func (c containerJob) Suspend() error               { return c.j.Suspend() }
func (c containerJob) Continue() error              { return c.j.Continue() }

func (c containerJob) Wait() (starter.Exit, error) {
	x, err := c.j.Wait()
	return starter.Exit{Code: x.Code, Signal: x.Signal, Usage: starterUsage(x.Usage),
		HoldReason: x.HoldReason, HoldCode: x.HoldCode}, err
}

func (c containerJob) Usage() (starter.Usage, error) {
	u, err := c.j.Usage()
	return starterUsage(u), err
}

func starterUsage(u sandbox.Usage) starter.Usage {
	return starter.Usage{UserCPU: u.UserCPU, SysCPU: u.SysCPU, MaxRSSBytes: u.MaxRSSBytes, MemoryBytes: u.MemoryBytes}
}
