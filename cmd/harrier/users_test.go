package main

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"os/user"
	"testing"
)

// newUser creates a real, unprivileged Unix user for the test, with a
// home directory only they may enter, and removes both when the test
// ends. Tests act as this user the way an attacker with a login would.
func newUser(t testing.TB) *user.User {
	t.Helper()
	needRoot(t)
	b := make([]byte, 4)
	rand.Read(b)
	name := "hu" + hex.EncodeToString(b)
	if out, err := exec.Command("useradd", "--create-home", "--shell", "/bin/sh", "--user-group", name).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() {
		// Processes of the user may linger a moment after the pool is down.
		_ = exec.Command("pkill", "-KILL", "-u", name).Run()
		if out, err := exec.Command("userdel", "--remove", name).CombinedOutput(); err != nil {
			t.Logf("userdel %s: %v: %s", name, err, out)
		}
	})
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(u.HomeDir, 0o700); err != nil {
		t.Fatal(err)
	}
	return u
}
