package submit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// maxCommandOutput bounds what a command may contribute to a description.
const maxCommandOutput = 16 << 20

// Exec returns an Env.Command that runs commands as the calling process's
// user, until ctx is done. It is for harrier submit, which runs as the
// user whose description it reads, as condor_submit does.
func Exec(ctx context.Context) func(dir string, argv []string) ([]byte, error) {
	return func(dir string, argv []string) ([]byte, error) {
		if len(argv) == 0 {
			return nil, errors.New("empty command")
		}
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = dir
		stdout := &cappedBuffer{max: maxCommandOutput}
		var stderr cappedBuffer
		stderr.max = 4 << 10
		cmd.Stdout, cmd.Stderr = stdout, &stderr
		if err := cmd.Run(); err != nil {
			if msg := strings.TrimSpace(stderr.String()); msg != "" {
				return nil, fmt.Errorf("%w: %s", err, msg)
			}
			return nil, err
		}
		if stdout.over {
			return nil, fmt.Errorf("output longer than %d MiB", maxCommandOutput>>20)
		}
		return stdout.Bytes(), nil
	}
}

// A cappedBuffer keeps the first max bytes written to it.
type cappedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); len(p) > room {
		b.over = true
		b.Buffer.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return b.Buffer.Write(p)
}
