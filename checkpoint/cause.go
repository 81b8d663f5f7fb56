package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrRlimits says CRIU could not read the resource limits of the job's
// processes. prlimit(2) on a process of another user needs
// CAP_SYS_RESOURCE, which root lacks on some machines (VMs that drop it
// from the bounding set); CRIU as scripts/setup builds it reads
// /proc/PID/limits instead, other builds give up.
var ErrRlimits = errors.New("this machine's CRIU cannot read the resource limits of another user's processes " +
	"(root lacks CAP_SYS_RESOURCE, and only the CRIU scripts/setup builds works around it)")

// errUnseizable says CRIU timed out waiting to seize a process of the job
// asleep where ptrace cannot stop it (state D), at a moment the dump's
// own freeze did not recognise (see freezeForDump): under load, rarely,
// a busy shell's fork.
var errUnseizable = errors.New("a process of the job could not be seized")

// criuFailure adds the cause of a failed CRIU call to err from CRIU's log
// (name, in workDir): its first error, which libcontainer's "criu failed:
// type DUMP errno 0" does not say, and which the job's owner reads in
// LastCheckpointFailure or LastRestoreFailure; for some, an error a
// caller can act on.
func criuFailure(workDir, name string, err error) error {
	b, rerr := os.ReadFile(filepath.Join(workDir, name))
	if rerr != nil {
		return err
	}
	if bytes.Contains(b, []byte("Can't get rlimit")) {
		return fmt.Errorf("%w: %w", ErrRlimits, err)
	}
	if cause := firstError(b); cause != "" {
		err = fmt.Errorf("%w: %s", err, cause)
	}
	if bytes.Contains(b, []byte("Unseizable non-zombie")) {
		err = fmt.Errorf("%w: %w", errUnseizable, err)
	}
	return err
}

// maxCause bounds the cause quoted from CRIU's log.
const maxCause = 300

// firstError returns the message of the first error in a CRIU log, as in
// "(00.177329) Error (criu/sk-inet.c:880): inet: Can't bind ...", or ""
// if it logged none but that it failed.
func firstError(log []byte) string {
	for line := range bytes.Lines(log) {
		// The restored processes' lines name them: "(00.1) 7: Error (".
		_, msg, ok := bytes.Cut(line, []byte(" Error ("))
		// CRIU logs as an error, and goes on, that it cannot raise its
		// own limit of open files on machines where root lacks
		// CAP_SYS_RESOURCE; its last error says only that it failed.
		if !ok || bytes.Contains(msg, []byte("Can't setup RLIMIT_NOFILE for self")) ||
			bytes.HasSuffix(bytes.TrimSpace(msg), []byte("ing FAILED.")) {
			continue
		}
		if _, m, ok := bytes.Cut(msg, []byte("): ")); ok {
			msg = m
		}
		msg = bytes.TrimSpace(msg)
		if len(msg) > maxCause {
			msg = msg[:maxCause]
		}
		return "criu: " + string(bytes.ToValidUTF8(msg, []byte("?")))
	}
	return ""
}
