package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"

	"github.com/opencontainers/runc/libcontainer"
)

// ErrNoPreCopy reports that CRIU cannot track dirty memory here (the
// kernel has no soft-dirty bits), so there are no pre-dumps: every dump
// is a full one.
var ErrNoPreCopy = errors.New("pre-copy is not supported on this machine")

// Features are the optional CRIU capabilities of this machine.
type Features struct {
	// PreCopy is dirty-memory tracking, which iterative pre-dumps need.
	PreCopy bool
}

// Probe asks CRIU which optional features this machine has.
func Probe(ctx context.Context) (Features, error) {
	path, err := exec.LookPath("criu")
	if err != nil {
		return Features{}, fmt.Errorf("probe criu: %w", err)
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, path, "check", "--feature", "mem_dirty_track")
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return Features{PreCopy: true}, nil
	case errors.As(err, &exit) && ctx.Err() == nil:
		return Features{}, nil // CRIU ran and said no
	default:
		return Features{}, fmt.Errorf("probe criu: %w: %s", err, bytes.TrimSpace(out.Bytes()))
	}
}

// PreDump copies the job's memory into opts.ImageDir while the job keeps
// running, freezing it only long enough to start tracking dirty pages.
// A later PreDump or Dump with Parent set to this image directory then
// writes only the pages dirtied since, so the final freeze is short.
// Where f.PreCopy is false it returns ErrNoPreCopy and does nothing.
//
// Pack sends one image directory; an image with parents is not yet
// packed together with them.
func PreDump(ctx context.Context, c *libcontainer.Container, f Features, opts DumpOptions) (*Result, error) {
	if !f.PreCopy {
		return nil, fmt.Errorf("pre-dump: %w", ErrNoPreCopy)
	}
	return dump(ctx, c, opts, true)
}
