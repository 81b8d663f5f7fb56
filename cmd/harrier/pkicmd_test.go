package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"harrier.dev/harrier/pki"
)

// pki init and issue make credentials the daemons load, and refuse what
// would be useless.
func TestPKICommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	out := filepath.Join(t.TempDir(), "exec1")
	if err := runPKI([]string{"init", "--dir", dir, "--pool", "test"}, nil, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := runPKI([]string{"init", "--dir", dir}, nil, io.Discard); err == nil {
		t.Error("a second init replaced the CA")
	}
	if err := os.MkdirAll(out, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := runPKI([]string{"issue", "--dir", dir, "--out", out, "--hosts", "10.0.0.11, exec1", "startd@exec1"}, nil, io.Discard); err != nil {
		t.Fatal(err)
	}
	cfg, err := pki.ServerConfig(filepath.Join(out, "startd.pem"), filepath.Join(out, "startd.key"), filepath.Join(dir, "ca.pem"))
	if err != nil || cfg == nil {
		t.Fatalf("load the issued certificate: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "checkpoint.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("checkpoint key: %v", err)
	}
	for _, id := range []string{"startd", "wizard@exec1", "startd@"} {
		err := runPKI([]string{"issue", "--dir", dir, "--out", out, id}, nil, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "ROLE@HOST") {
			t.Errorf("issue %q: %v, want a refusal", id, err)
		}
	}
}
