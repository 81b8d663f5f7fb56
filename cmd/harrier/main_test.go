package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The test binary doubles as the harrier binary: with this variable set it
// runs the command line instead of the tests, so daemons, shadows and
// starters started by the tests are this very code.
const asHarrier = "HARRIER_TEST_AS_HARRIER"

func TestMain(m *testing.M) {
	// A starter runs a job with resource limits through exec-with-limits
	// in the job's own environment, which does not say asHarrier.
	if os.Getenv(asHarrier) == "1" || len(os.Args) > 1 && os.Args[1] == "exec-with-limits" {
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	if os.Getenv(scheddClientEnv) == "1" {
		os.Exit(scheddClient(os.Args[1:]))
	}
	flag.Parse()
	if !testing.Short() && os.Geteuid() == 0 {
		buildContainerInit()
	}
	os.Exit(m.Run())
}

// buildContainerInit builds harrier-init beside the test binary, where a
// startd run by the tests looks for it as it would beside harrier. A
// failure is printed and left to the tests that need it to show.
func buildContainerInit() {
	exe, err := os.Executable()
	if err == nil {
		var out []byte
		out, err = exec.Command("go", "build", "-o", filepath.Join(filepath.Dir(exe), "harrier-init"), "harrier.dev/harrier/cmd/harrier-init").CombinedOutput()
		if err != nil {
			err = fmt.Errorf("%w: %s", err, out)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "build harrier-init: %v\n", err)
	}
}

// harrierBin returns the path of the binary that acts as harrier.
func harrierBin(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// harrier runs one harrier command and returns its output and exit code.
func harrier(t testing.TB, env []string, args ...string) (string, int) {
	t.Helper()
	return harrierFrom(t, harrierBin(t), env, args...)
}

// harrierFrom is harrier with the binary bin acting as harrier.
func harrierFrom(t testing.TB, bin string, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), asHarrier+"=1"), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("harrier %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), code
}

// mustHarrier runs a harrier command that must succeed.
func mustHarrier(t testing.TB, env []string, args ...string) string {
	t.Helper()
	out, code := harrier(t, env, args...)
	if code != 0 {
		t.Fatalf("harrier %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// needPool skips tests that start a whole pool: its daemons, shadows and
// starters run as processes of this binary, as root. The short lane
// (go test -short) leaves them out.
func needPool(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a whole pool: starts daemons, shadows and starters as root (not in -short)")
	}
	needRoot(t)
}

// needRoot skips tests that start daemons needing root (setuid shadows,
// network namespaces) or act as other users, saying why. The short lane
// leaves them out even as root, so that it is the same lane for everyone.
func needRoot(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs root: changes users or creates network namespaces (not in -short)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: starts daemons that change users and create network namespaces (CI runs as root)")
	}
}

// writeFile writes a test file, failing the test on error.
func writeFile(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s", timeout, what)
}
