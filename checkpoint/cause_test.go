package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCriuFailureCause: the cause quoted from CRIU's log is its first
// error, passing over its harmless complaint about its own limit of open
// files; a seize that timed out on a process CRIU could not stop is told
// apart, which Dump tries once more.
func TestCriuFailureCause(t *testing.T) {
	dir := t.TempDir()
	log := `(00.034181) Found mmap_min_addr 0x10000
(00.034240) Error (criu/util.c:1534): rlimit: Can't setup RLIMIT_NOFILE for self: Operation not permitted
(00.034900) SEIZE 25717 (comm sh): success
(10.034901) Error (criu/cr-dump.c:1718): Timeout reached. Try to interrupt: 0
(10.035029) Error (compel/src/lib/infect.c:262): Unseizable non-zombie 25717 found, state D, err -1/4
(10.035217) Error (criu/cr-dump.c:2038): Dumping FAILED.
`
	if err := os.WriteFile(filepath.Join(dir, "dump.log"), []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	err := criuFailure(dir, "dump.log", errors.New("criu failed: type DUMP errno 0"))
	if !errors.Is(err, errUnseizable) || !strings.Contains(err.Error(), "criu: Timeout reached. Try to interrupt: 0") {
		t.Errorf("cause %v, want the timeout quoted and errUnseizable", err)
	}
	log = strings.Replace(log, "Unseizable non-zombie", "Unseizable zombie", 1)
	if err := os.WriteFile(filepath.Join(dir, "dump.log"), []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := criuFailure(dir, "dump.log", errors.New("criu failed")); errors.Is(err, errUnseizable) {
		t.Errorf("cause %v: not a process CRIU could not seize", err)
	}
}
