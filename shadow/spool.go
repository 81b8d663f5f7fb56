package shadow

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"harrier.dev/harrier/classad"
)

// A spooled job (harrier submit -spool) runs from the agent's spool, not
// from its directory on the submit machine, which its owner may have
// left: its inputs, executable and standard input were sent with the
// submission into its place in its owner's store (SpoolDir), and its
// outputs, standard output and error go to another (SpoolOutputDir),
// from which harrier transfer-data fetches them into its directory.
// Outputs are kept as the job wrote them: transfer_output_remaps is
// applied when they are fetched.

// Names of the job's standard output and error in SpoolOutputDir; the
// fetch writes them to the job's Out and Err.
const (
	SpoolStdout = "_condor_stdout"
	SpoolStderr = "_condor_stderr"
)

// SpoolDir is where the store in storeDir keeps a spooled job's inputs,
// as named relative to its directory.
func SpoolDir(storeDir, key string) string {
	return filepath.Join(storeDir, key+".spool")
}

// SpoolOutputDir is where the store in storeDir keeps a spooled job's
// outputs until they are fetched.
func SpoolOutputDir(storeDir, key string) string {
	return filepath.Join(storeDir, key+".out")
}

// SpooledJob returns the job key of a name SpoolDir or SpoolOutputDir
// made.
func SpooledJob(name string) (key string, ok bool) {
	for _, suffix := range []string{".spool", ".out"} {
		if key, ok := strings.CutSuffix(name, suffix); ok {
			return key, true
		}
	}
	return "", false
}

// isSpooled reports whether the job runs from the spool: the agent says
// so with StageInFinish.
func isSpooled(job *classad.ClassAd) bool {
	t, ok := job.EvalInt("StageInFinish")
	return ok && t > 0
}

// spooledJobFiles places a spooled job's executable and standard input
// in its spool, as the submission sent them (by their last element), and
// its standard output and error in its output spool, which it makes.
func spooledJobFiles(job *classad.ClassAd, spec *Spec) (*jobFiles, error) {
	if spec.CheckpointDir == "" {
		return nil, errors.New("the job's inputs are spooled but its shadow has no store to reach them")
	}
	in, out := SpoolDir(spec.CheckpointDir, spec.CheckpointKey), SpoolOutputDir(spec.CheckpointDir, spec.CheckpointKey)
	if err := os.MkdirAll(out, 0o700); err != nil {
		return nil, fmt.Errorf("the job's output spool: %w", err)
	}
	f := &jobFiles{}
	cmd, _ := job.EvalString("Cmd")
	if cmd == "" {
		return nil, errors.New("job ad has no Cmd")
	}
	f.executable = filepath.Join(in, filepath.Base(cmd))
	if b, ok := job.EvalBool("TransferExecutable"); ok && !b {
		f.executable = cmd // a program of the execute machine
	}
	if p, _ := job.EvalString("In"); p != "" && p != os.DevNull {
		f.input = filepath.Join(in, filepath.Base(p))
	}
	outPath, _ := job.EvalString("Out")
	errPath, _ := job.EvalString("Err")
	if outPath != "" && outPath != os.DevNull {
		f.output = filepath.Join(out, SpoolStdout)
	}
	switch {
	case errPath == "" || errPath == os.DevNull:
	case errPath == outPath:
		f.errPath = f.output
	default:
		f.errPath = filepath.Join(out, SpoolStderr)
	}
	return f, nil
}
