package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/wire"
)

// memScanVar makes the test binary scan a process's memory instead of
// running tests (see scanMemory).
const memScanVar = "HARRIER_TEST_MEMSCAN"

func init() {
	if spec := os.Getenv(memScanVar); spec != "" {
		pid, patterns, _ := strings.Cut(spec, ":")
		os.Exit(scanMemory(pid, patterns))
	}
}

// scanMemory reads every readable mapping of process pid through
// /proc/pid/mem, as any user may for their own processes, and prints
// "found N" for the first of the hex patterns (one per line in the file
// patterns) it finds, or "clean".
func scanMemory(pid, patterns string) int {
	text, err := os.ReadFile(patterns)
	if err != nil {
		fmt.Println("error:", err)
		return 2
	}
	var pats [][]byte
	for _, line := range strings.Fields(string(text)) {
		b, err := hex.DecodeString(line)
		if err != nil {
			fmt.Println("error:", err)
			return 2
		}
		pats = append(pats, b)
	}
	maps, err := os.Open("/proc/" + pid + "/maps")
	if err != nil {
		fmt.Println("error:", err)
		return 2
	}
	defer maps.Close()
	mem, err := os.Open("/proc/" + pid + "/mem")
	if err != nil {
		fmt.Println("error:", err)
		return 2
	}
	defer mem.Close()
	sc := bufio.NewScanner(maps)
	scanned := 0
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[1][0] != 'r' {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end-start > 1<<30 {
			continue
		}
		buf := make([]byte, end-start)
		n, _ := mem.ReadAt(buf, int64(start))
		scanned += n
		for i, p := range pats {
			if bytes.Contains(buf[:n], p) {
				fmt.Printf("found %d\n", i)
				return 0
			}
		}
	}
	if scanned == 0 {
		fmt.Println("error: could not read any memory")
		return 2
	}
	fmt.Printf("clean (%d bytes)\n", scanned)
	return 0
}

// keyPatterns returns byte strings that betray a pool private key in a
// process's memory: the PEM text, its base64 form (as []byte travels in
// JSON) and the private scalar both ways round (big.Int keeps it little
// endian on amd64); for a raw secret such as the checkpoint key, its
// bytes.
func keyPatterns(t *testing.T, keyFile string) [][]byte {
	t.Helper()
	text, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(text)
	if b == nil {
		// A raw secret (the checkpoint key): its bytes themselves.
		return [][]byte{text}
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if ed, ok := k.(ed25519.PrivateKey); ok {
		// The token signing key: its text, and its seed, from which the
		// whole key follows.
		return [][]byte{text, ed.Seed()}
	}
	d, err := k.(*ecdsa.PrivateKey).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	rev := make([]byte, len(d))
	for i := range d {
		rev[i] = d[len(d)-1-i]
	}
	body := bytes.Join(bytes.Fields(text), nil)
	return [][]byte{
		text[len("-----BEGIN PRIVATE KEY-----\n") : len("-----BEGIN PRIVATE KEY-----\n")+40],
		[]byte(base64.StdEncoding.EncodeToString(text)[20:60]),
		body[30:70],
		d, rev,
	}
}

// processesOf returns the pids of the processes of uid whose command line
// contains word.
func processesOf(t *testing.T, uid, word string) []string {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []string
	for _, d := range dirs {
		status, err := os.ReadFile(d + "/status")
		if err != nil || !regexp.MustCompile(`(?m)^Uid:\s+`+uid+`\s`).Match(status) {
			continue
		}
		cmdline, _ := os.ReadFile(d + "/cmdline")
		if bytes.Contains(cmdline, []byte(word)) {
			pids = append(pids, filepath.Base(d))
		}
	}
	return pids
}

// agentAddr reads the agent's TLS address from its log.
func agentAddr(t *testing.T, p *testPool) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(p.dir, "log", "agent.log"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`msg="agent listening".* addr=(\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no address in the agent's log:\n%s", b)
	}
	return string(m[1])
}

// A user reads everything their own shadow holds. On a pool of two users,
// A's shadow must hold no pool key, and no key A could find elsewhere
// (every other daemon's, as if one leaked) lets A pose as the matchmaker
// and send B's job to a startd of A's choosing.
func TestShadowHoldsNoPoolKey(t *testing.T) {
	alice, bob := newUser(t), newUser(t)
	bin := publicBinary(t)
	p := startPoolFrom(t, bin, 1, "")
	env := append([]string{asHarrier + "=1"}, p.env...)

	// Bob's job waits: no machine matches it.
	writeFile(t, filepath.Join(bob.HomeDir, "secret.txt"), "bob's secret\n", 0o600)
	bobSub := filepath.Join(bob.HomeDir, "idle.sub")
	writeFile(t, bobSub, "executable = /bin/cat\narguments = secret.txt\noutput = out.txt\nrequirements = Memory < 0\nqueue\n", 0o644)
	chownTo(t, bob, bob.HomeDir)
	if out, code := asUser(t, bin, bob.Username, env, "submit", bobSub); code != 0 {
		t.Fatalf("bob's submit: exit %d\n%s", code, out)
	}
	// Alice's job runs, so that her shadow is there to be read.
	aliceSub := filepath.Join(alice.HomeDir, "sleep.sub")
	writeFile(t, aliceSub, "executable = /bin/sleep\narguments = 120\nqueue\n", 0o644)
	chownTo(t, alice, alice.HomeDir)
	if out, code := asUser(t, bin, alice.Username, env, "submit", aliceSub); code != 0 {
		t.Fatalf("alice's submit: exit %d\n%s", code, out)
	}
	var shadows []string
	eventually(t, 60*time.Second, "alice's shadow", func() bool {
		shadows = processesOf(t, alice.Uid, "shadow")
		return len(shadows) > 0
	})

	// Alice scans her shadow for every key of the pool.
	keys, _ := filepath.Glob(filepath.Join(p.dir, "pki", "*.key"))
	var patterns bytes.Buffer
	names := map[int]string{}
	for _, k := range keys {
		for _, pat := range keyPatterns(t, k) {
			names[len(names)] = filepath.Base(k)
			fmt.Fprintln(&patterns, hex.EncodeToString(pat))
		}
	}
	patFile := filepath.Join(t.TempDir(), "patterns")
	writeFile(t, patFile, patterns.String(), 0o644)
	for d := filepath.Dir(patFile); d != "/" && d != "/tmp"; d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755)
	}
	for _, pid := range shadows {
		out, code := asUser(t, bin, alice.Username, []string{memScanVar + "=" + pid + ":" + patFile})
		if code != 0 || !strings.HasPrefix(out, "clean") && !strings.HasPrefix(out, "found") {
			t.Fatalf("alice scanning her shadow %s: exit %d: %s", pid, code, out)
		}
		var n int
		if _, err := fmt.Sscanf(out, "found %d", &n); err == nil {
			t.Errorf("alice found %s in the memory of her shadow (pid %s)", names[n], pid)
		} else {
			t.Logf("shadow %s: %s", pid, strings.TrimSpace(out))
		}
	}

	// Every daemon key but the matchmaker's fails to call Agent.Matched.
	addr := agentAddr(t, p)
	for _, role := range []string{"agent", "startd"} {
		paths := pki.HostPaths(filepath.Join(p.dir, "pki"), role)
		cfg, err := paths.ClientConfig()
		if err != nil {
			t.Fatal(err)
		}
		conn, err := wire.Dial(addr, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err = wire.NewAgentClient(conn).Matched(ctx, &wire.MatchedRequest{
			JobId: "1.0", ClaimId: "forged", StartdAddr: "127.0.0.1:9", Slot: "slot1@evil", MachineAd: "[ Name = \"slot1@evil\" ]"})
		cancel()
		conn.Close()
		if status.Code(err) != codes.PermissionDenied {
			t.Errorf("Agent.Matched with the %s key: %v, want PermissionDenied", role, err)
		}
	}
	if st := p.jobStatus(t, "1.0"); st != 1 {
		t.Errorf("bob's job is in status %d, want still idle (1)", st)
	}
}

// chownTo gives dir and everything in it to u.
func chownTo(t *testing.T, u *user.User, dir string) {
	t.Helper()
	if out, err := exec.Command("chown", "-R", u.Uid+":"+u.Gid, dir).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v: %s", err, out)
	}
}

// The job's event log is the submitter's path: the agent writes it with
// the owner's permissions, so a user cannot make root append to a file
// the user may not write, by naming it or through a symbolic link.
func TestUserLogIsWrittenAsItsOwner(t *testing.T) {
	mallory := newUser(t)
	bin := publicBinary(t)
	p := startPoolFrom(t, bin, 1, "")
	env := append([]string{asHarrier + "=1"}, p.env...)

	rootDir := t.TempDir() // 0700, root's
	victim := filepath.Join(rootDir, "victim")
	writeFile(t, victim, "root's file\n", 0o644)
	planted := filepath.Join(mallory.HomeDir, "planted.log")
	if err := os.Symlink(victim, planted); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, log string }{
		{"symlink.sub", planted},
		{"rootdir.sub", filepath.Join(rootDir, "new.log")},
		{"own.sub", "own.log"},
	} {
		writeFile(t, filepath.Join(mallory.HomeDir, tc.name), "executable = /bin/true\nlog = "+tc.log+"\nqueue\n", 0o644)
	}
	chownTo(t, mallory, mallory.HomeDir)
	for _, sub := range []string{"symlink.sub", "rootdir.sub", "own.sub"} {
		if out, code := asUser(t, bin, mallory.Username, env, "submit", filepath.Join(mallory.HomeDir, sub)); code != 0 {
			t.Fatalf("submit %s: exit %d\n%s", sub, code, out)
		}
	}
	for _, id := range []string{"1.0", "2.0", "3.0"} {
		eventually(t, 60*time.Second, "job "+id+" to finish", func() bool { return p.jobStatus(t, id) == 0 })
	}
	if b := mustRead(t, victim); b != "root's file\n" {
		t.Errorf("root's file was written through mallory's link:\n%s", b)
	}
	if _, err := os.Stat(filepath.Join(rootDir, "new.log")); err == nil {
		t.Error("the agent created mallory's log in root's directory")
	}
	own := filepath.Join(mallory.HomeDir, "own.log")
	if b := mustRead(t, own); !strings.Contains(b, "Job terminated") {
		t.Errorf("mallory's own log:\n%s", b)
	}
	fi, err := os.Stat(own)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); strconv.Itoa(int(st.Uid)) != mallory.Uid {
		t.Errorf("mallory's log belongs to uid %d", st.Uid)
	}

	// The daemons' logs, which name every job's paths, are root's alone;
	// the pool's configuration is every user's, for their tools.
	if out, code := asUser(t, "/bin/cat", mallory.Username, nil, filepath.Join(p.dir, "log", "agent.log")); code == 0 {
		t.Errorf("mallory read the agent's log:\n%s", out)
	}
	if out, code := asUser(t, "/bin/cat", mallory.Username, nil, filepath.Join(p.dir, poolConfigName)); code != 0 {
		t.Errorf("mallory cannot read the pool's configuration: exit %d: %s", code, out)
	}
}

// TestJobFilesClosedToOtherUsers: while alice's container job runs, bob
// looks for her files, both as a user logged in on the execute machine
// and through a job of his own in the slot beside hers, which runs as the
// same slot user as hers and sees the machine's file system. He reaches
// neither her private file through her job's iofs mount (open to other
// users so that her job may use it, but answering only her job's user and
// root) nor the file her job wrote in its scratch directory: he cannot
// list the execute directory, and cannot guess the scratch directory's
// name. Her job reads and writes as before.
func TestJobFilesClosedToOtherUsers(t *testing.T) {
	needPool(t)
	// The pool away from /tmp, which a container does not see of the host.
	base, err := os.MkdirTemp("/var/lib", "h") // short: sockets live below it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	t.Setenv("TMPDIR", base)
	p := startPoolFrom(t, publicBinary(t), 1, "NUM_SLOTS = 2")
	alice, bob := newUser(t), newUser(t)

	adir := filepath.Join(alice.HomeDir, "job")
	writeFile(t, filepath.Join(adir, "private.txt"), "alice's private file\n", 0o600)
	au, ag := lookupIDs(t, alice.Username)
	chownAll(t, adir, au, ag)
	if err := os.Chmod(alice.HomeDir, 0o755); err != nil {
		t.Fatal(err) // open to bob too: only iofs stands between him and the file
	}
	ac := p.submitAs(t, alice.Username, adir, "a.sub", `executable = /bin/sh
arguments = "-c 'echo alice-scratch-secret > $_CONDOR_SCRATCH_DIR/scratch-secret.txt && cat private.txt > seen.txt && id -u > started && sleep 600'"
queue
`)
	aid := fmt.Sprintf("%d.0", ac)
	eventually(t, 60*time.Second, "alice's job to start", func() bool {
		_, err := os.Stat(filepath.Join(adir, "started"))
		return err == nil
	})
	defer p.harrier(t, "rm", aid)
	if got := mustRead(t, filepath.Join(adir, "seen.txt")); got != "alice's private file\n" {
		t.Fatalf("alice's job read her file as %q", got)
	}
	mounts, _ := filepath.Glob(filepath.Join(p.dir, "execute", "*", "iofs", "scratch.*.dir"))
	scratches, _ := filepath.Glob(filepath.Join(p.dir, "execute", "*", "scratch.*", "scratch-secret.txt"))
	if len(mounts) != 1 || len(scratches) != 1 {
		t.Fatalf("alice's job's mount %v and scratch file %v: want one of each", mounts, scratches)
	}
	execDir := filepath.Dir(filepath.Dir(mounts[0]))

	// bob on the execute machine.
	bu, bg := lookupIDs(t, bob.Username)
	asBob := func(name string, args ...string) (string, error) {
		cmd := exec.Command(name, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: bu, Gid: bg}}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, f := range []string{filepath.Join(mounts[0], "private.txt"), filepath.Join(mounts[0], "seen.txt")} {
		if out, err := asBob("cat", f); err == nil || strings.Contains(out, "alice's private") {
			t.Errorf("bob read %s through alice's job's mount: %q", f, out)
		}
	}
	if out, err := asBob("ls", mounts[0]); err == nil {
		t.Errorf("bob listed alice's job's directory through its mount: %q", out)
	}
	if out, err := asBob("touch", filepath.Join(mounts[0], "planted")); err == nil {
		t.Errorf("bob made a file in alice's job's directory: %q", out)
	}
	if _, err := os.Stat(filepath.Join(adir, "planted")); err == nil {
		t.Error("bob's file is in alice's directory")
	}
	if out, err := asBob("ls", execDir); err == nil {
		t.Errorf("bob listed the execute directory: %q", out)
	}
	// Nor what the kernel keeps of the names alice's job looked up: the
	// mount is in a directory of root's alone.
	if out, err := asBob("stat", filepath.Join(mounts[0], "private.txt")); err == nil || !strings.Contains(out, "Permission denied") {
		t.Errorf("bob stat alice's file through her job's mount: %q %v", out, err)
	}

	// bob's job in the other slot, as the same slot user.
	bdir := filepath.Join(bob.HomeDir, "job")
	writeFile(t, filepath.Join(bdir, "probe.sh"), `#!/bin/sh
echo "uid $(id -u)"
ls `+execDir+` >/dev/null 2>&1 && echo "listed the execute directory"
cat `+execDir+`/scratch.*/scratch-secret.txt 2>/dev/null
cat `+mounts[0]+`/private.txt 2>/dev/null
echo done
`, 0o755)
	chownAll(t, bdir, bu, bg)
	bc := p.submitAs(t, bob.Username, bdir, "b.sub", "executable = probe.sh\noutput = probe.out\nerror = probe.err\nqueue\n")
	bid := fmt.Sprintf("%d.0", bc)
	if out, code := p.harrier(t, "wait", "--timeout", "90", bid); code != 0 {
		t.Fatalf("wait %s: exit %d: %s (%v)", bid, code, out, p.jobs(t, "q", bid))
	}
	got := mustRead(t, filepath.Join(bdir, "probe.out"))
	if want := "uid " + strings.TrimSpace(mustRead(t, filepath.Join(adir, "started"))) + "\ndone\n"; got != want {
		t.Errorf("bob's job, as alice's job's user, found %q; want %q", got, want)
	}
}
