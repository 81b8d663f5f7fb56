package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestCriuFailure names the cause of a dump that CRIU gave up because it
// could not read another user's rlimits, from CRIU's log, and adds the
// first error CRIU logged to other failures.
func TestCriuFailure(t *testing.T) {
	dir := t.TempDir()
	criu := errors.New("criu failed: type DUMP errno 0")
	log := "(00.177329) Error (criu/cr-dump.c:389): Can't get rlimit 0: Operation not permitted\n" +
		"(00.262248) Error (criu/cr-dump.c:1975): Dumping FAILED.\n"
	if err := os.WriteFile(filepath.Join(dir, "dump.log"), []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := criuFailure(dir, "dump.log", criu); !errors.Is(err, ErrRlimits) || !errors.Is(err, criu) {
		t.Errorf("criuFailure = %v, want ErrRlimits and CRIU's error", err)
	}
	other := "(00.1) Warn  (criu/sk-inet.c:10): something\n" +
		"(00.1) Error (criu/rlimit.c:36): rlimit: Can't setup RLIMIT_NOFILE for self: Operation not permitted\n" +
		"(00.2) 7: Error (criu/sk-inet.c:880): inet: Can't bind inet socket (id 7): Cannot assign requested address\n" +
		"(00.3) Error (criu/cr-restore.c:2600): Restoring FAILED.\n"
	if err := os.WriteFile(filepath.Join(dir, "other.log"), []byte(other), 0o600); err != nil {
		t.Fatal(err)
	}
	want := "criu failed: type DUMP errno 0: criu: inet: Can't bind inet socket (id 7): Cannot assign requested address"
	if err := criuFailure(dir, "other.log", criu); !errors.Is(err, criu) || err.Error() != want {
		t.Errorf("criuFailure of another failure = %q, want CRIU's error and its first cause, %q", err, want)
	}
	if err := os.WriteFile(filepath.Join(dir, "quiet.log"), []byte("(00.1) Warn  (x.c:1): y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := criuFailure(dir, "quiet.log", criu); err != criu {
		t.Errorf("criuFailure of a log without an error = %v, want CRIU's error alone", err)
	}
	if err := criuFailure(dir, "missing.log", criu); err != criu {
		t.Errorf("criuFailure without a log = %v, want CRIU's error alone", err)
	}
}
