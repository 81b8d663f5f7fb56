package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestCriuFailure names the cause of a dump that CRIU gave up because it
// could not read another user's rlimits, from CRIU's log, and leaves
// other failures as they are.
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
	if err := os.WriteFile(filepath.Join(dir, "other.log"), []byte("(00.2) Error: Dumping FAILED.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := criuFailure(dir, "other.log", criu); err != criu {
		t.Errorf("criuFailure of another failure = %v, want CRIU's error alone", err)
	}
	if err := criuFailure(dir, "missing.log", criu); err != criu {
		t.Errorf("criuFailure without a log = %v, want CRIU's error alone", err)
	}
}
