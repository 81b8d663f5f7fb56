package main

import (
	"encoding/base64"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"harrier.dev/harrier/token"
)

// asOn runs a harrier tool as u on host, with u's home and no pool of its
// own: what a user of another machine has.
func (n *netnsPool) asOn(host string, u *user.User, env []string, args ...string) (string, int) {
	n.t.Helper()
	cmd := exec.Command("nsenter", append([]string{"--net=/var/run/netns/" + n.hosts[host].ns,
		"--setuid", u.Uid, "--setgid", u.Gid, n.bin}, args...)...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + u.HomeDir, asHarrier + "=1"}, env...)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		n.t.Fatalf("harrier %s as %s on %s: %v", strings.Join(args, " "), u.Username, host, err)
	}
	return string(out), 0
}

// TestRemoteAPIWithTokens: users of a host outside the pool ("client",
// with no pool certificate and no pool directory) drive the agent on
// "submit" with tokens made there: alice's token submits, queries, waits
// for and edits her jobs; bob's cannot act on them; a token expired,
// revoked, signed with another key, or with its payload edited is refused
// with its reason; a read-only token cannot submit; a remote submission
// that would need this host's files is refused before anything is queued;
// and tokens are made only by their own user (or root) on the submit host.
func TestRemoteAPIWithTokens(t *testing.T) {
	n := newNetnsPool(t, "submit", "exec1", "client")
	remote := n.hosts["submit"].ip + ":9619"
	n.extra = "AGENT_REMOTE_ADDRESS = $(BIND_HOST):9619\nAGENT_API_ADDRESS = $(BIND_HOST):9620\n"
	roles := map[string]string{"submit": "matchmaker,agent", "exec1": "startd", "client": ""}
	n.configure("submit", roles)
	delete(roles, "client")
	n.run(roles)
	// The client host is no part of the pool: no configuration, CA, key
	// or certificate of the pool's.
	if err := os.RemoveAll(n.hosts["client"].dir); err != nil {
		t.Fatal(err)
	}
	alice, bob := newUser(t), newUser(t)

	// Tokens are made on the submit host, each user for themself.
	if out, code := n.as(bob, "token", "create", "-identity", alice.Username); code == 0 || !strings.Contains(out, "for themself only") {
		t.Fatalf("bob made a token for alice: exit %d: %s", code, out)
	}
	if out, code := n.as(alice, "token", "create", "-identity", "root"); code == 0 {
		t.Fatalf("alice made a token for root: %s", out)
	}
	for _, c := range []struct {
		u    *user.User
		name string
		args []string
	}{
		{alice, "all", nil},
		{alice, "read", []string{"-scope", "read"}},
		{alice, "short", []string{"-lifetime", "1s"}},
		{alice, "revoked", nil},
		{bob, "all", nil},
	} {
		args := append([]string{"token", "create", "-token", c.name}, c.args...)
		if out, code := n.as(c.u, args...); code != 0 || !strings.Contains(out, "kept in") {
			t.Fatalf("%s's token %s: exit %d: %s", c.u.Username, c.name, code, out)
		}
	}
	tokenFile := func(u *user.User, name string) string { return filepath.Join(u.HomeDir, ".harrier", "tokens", name) }
	with := func(file string) []string { return []string{"HARRIER_TOKEN=" + file} }
	aliceAll := with(tokenFile(alice, "all"))

	// alice submits from the client host into a directory of hers on the
	// submit host, and sees her job run there.
	work := filepath.Join(alice.HomeDir, "remote")
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(alice.Uid)
	gid, _ := strconv.Atoi(alice.Gid)
	if err := os.Chown(work, uid, gid); err != nil {
		t.Fatal(err)
	}
	sub := func(name, body string) string {
		path := filepath.Join(alice.HomeDir, name)
		writeFile(t, path, body, 0o644)
		if err := os.Chown(path, uid, gid); err != nil {
			t.Fatal(err)
		}
		return path
	}
	echo := sub("echo.sub", "executable = /bin/echo\ntransfer_executable = false\narguments = hello from afar\ninitialdir = "+work+"\noutput = out.txt\nqueue\n")
	out, code := n.asOn("client", alice, aliceAll, "--remote", remote, "submit", echo)
	ran := submitted(t, out, code)
	if out, code := n.asOn("client", alice, aliceAll, "--remote", remote, "wait", "-wait", "120", strconv.Itoa(ran)+".0"); code != 0 {
		t.Fatalf("remote wait: exit %d: %s", code, out)
	}
	if b, err := os.ReadFile(filepath.Join(work, "out.txt")); err != nil || string(b) != "hello from afar\n" {
		t.Fatalf("the job's output on the submit host: %q, %v", b, err)
	}
	if out, code := n.asOn("client", alice, aliceAll, "--remote", remote, "history", "-af", "Owner", "ExitCode", strconv.Itoa(ran)); code != 0 || strings.TrimSpace(out) != alice.Username+" 0" {
		t.Fatalf("remote history: exit %d: %q", code, out)
	}

	held := sub("held.sub", "executable = /bin/true\ntransfer_executable = false\ninitialdir = "+work+"\nhold = true\nqueue\n")
	out, code = n.asOn("client", alice, aliceAll, "--remote", remote, "submit", held)
	job := strconv.Itoa(submitted(t, out, code)) + ".0"
	if out, code := n.asOn("client", alice, aliceAll, "--remote", remote, "q", "-af", "Owner", "JobStatus", job); code != 0 || strings.TrimSpace(out) != alice.Username+" 5" {
		t.Fatalf("remote q: exit %d: %q", code, out)
	}
	// By default q shows the token's user's jobs, not the local user's.
	if out, code := n.asOn("client", alice, aliceAll, "--remote", remote, "q", "-nobatch"); code != 0 || !strings.Contains(out, job) {
		t.Fatalf("remote q -nobatch: exit %d: %s", code, out)
	}
	if out, code := n.asOn("client", alice, aliceAll, "--remote", remote, "qedit", job, "Color", `"blue"`); code != 0 {
		t.Fatalf("remote qedit: exit %d: %s", code, out)
	}

	// bob's token acts as bob, on the client host as anywhere: alice's
	// job is not his to remove, release or edit.
	bobAll := with(tokenFile(bob, "all"))
	for _, args := range [][]string{{"rm", job}, {"release", job}, {"qedit", job, "Color", `"red"`}} {
		if out, code := n.asOn("client", bob, bobAll, append([]string{"--remote", remote}, args...)...); code == 0 {
			t.Errorf("bob's token: %s %s succeeded: %s", args[0], job, out)
		}
	}
	// Nor is it alice's token when bob holds a copy: it acts as alice
	// (a bearer token), which is why tokens are kept 0600.
	if fi, err := os.Stat(tokenFile(alice, "all")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("alice's token file: %v, %v", fi.Mode(), err)
	}
	if out, _ := n.tool("submit", "q", "-af", "Color", "JobStatus", job); strings.TrimSpace(out) != `blue 5` {
		t.Fatalf("alice's job after bob's attempts: %q", out)
	}

	refused := func(what string, env []string, want string, args ...string) {
		t.Helper()
		out, code := n.asOn("client", alice, env, append([]string{"--remote", remote}, args...)...)
		if code == 0 || !strings.Contains(out, want) {
			t.Errorf("%s: exit %d, want a refusal saying %q: %s", what, code, want, out)
		}
		t.Logf("%s: %s", what, strings.TrimSpace(out))
	}
	// A read-only token looks but does not submit or act.
	readOnly := with(tokenFile(alice, "read"))
	if out, code := n.asOn("client", alice, readOnly, "--remote", remote, "q", "-af", "Owner", job); code != 0 || strings.TrimSpace(out) != alice.Username {
		t.Errorf("read-only q: exit %d: %s", code, out)
	}
	if out, code := n.asOn("client", alice, readOnly, "--remote", remote, "status"); code != 0 || !strings.Contains(out, "slot1@exec1") {
		t.Errorf("read-only status: exit %d: %s", code, out)
	}
	refused("read-only submit", readOnly, "scopes do not allow this", "submit", held)
	refused("read-only rm", readOnly, "scopes do not allow this", "rm", job)

	// An expired token.
	short := with(tokenFile(alice, "short"))
	eventually(t, 30*time.Second, "the one-second token to expire", func() bool {
		out, code := n.asOn("client", alice, short, "--remote", remote, "q", job)
		return code != 0 && strings.Contains(out, "expired")
	})

	// A revoked token: refused from the moment revoke returns.
	revoked := with(tokenFile(alice, "revoked"))
	if out, code := n.asOn("client", alice, revoked, "--remote", remote, "q", job); code != 0 {
		t.Fatalf("the token before it is revoked: %s", out)
	}
	b, err := os.ReadFile(tokenFile(alice, "revoked"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := token.Unverified(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if out, code := n.as(bob, "token", "revoke", c.ID); code == 0 {
		t.Errorf("bob revoked alice's token: %s", out)
	}
	if out, code := n.as(alice, "token", "list"); code != 0 || !strings.Contains(out, c.ID) || strings.Contains(out, bob.Username) {
		t.Errorf("alice's token list: exit %d: %s", code, out)
	}
	if out, code := n.as(alice, "token", "revoke", c.ID); code != 0 {
		t.Fatalf("revoke: %s", out)
	}
	refused("revoked token", revoked, "revoked", "q", job)

	// A token signed with another key, and one whose payload was edited.
	other, err := token.NewKey("POOL")
	if err != nil {
		t.Fatal(err)
	}
	forged, err := other.Sign(token.Claims{ID: "forged", Subject: alice.Username, Issuer: "agent@submit", IssuedAt: time.Now(), Expiry: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	b, err = os.ReadFile(tokenFile(bob, "all"))
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(strings.TrimSpace(string(b)), ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	parts[1] = base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(payload), bob.Username, alice.Username, 1)))
	edited := strings.Join(parts, ".")
	for name, text := range map[string]string{"forged": forged, "edited": edited} {
		refused(name+" token", with(sub(name+".token", text)), "signature is not the pool's", "rm", job)
	}
	if out, _ := n.tool("submit", "q", "-af", "JobStatus", job); strings.TrimSpace(out) != "5" {
		t.Fatalf("alice's job after the refused calls: %q", out)
	}

	// The same API in JSON over HTTPS, as any language's HTTP client
	// calls it: the agent authenticated by the pool's CA, the caller by
	// their token.
	if _, err := exec.LookPath("curl"); err == nil {
		api := "https://" + n.hosts["submit"].ip + ":9620/harrier.v1.Schedd/"
		curl := func(u *user.User, tokenPath, method, body string) (string, string) {
			t.Helper()
			args := []string{"--net=/var/run/netns/" + n.hosts["client"].ns, "--setuid", u.Uid, "--setgid", u.Gid,
				"curl", "-sS", "--cacert", filepath.Join(u.HomeDir, ".harrier", "ca.pem"), "-w", "\n%{http_code}", "-H", "Content-Type: application/json", "-d", body}
			if tokenPath != "" {
				b, err := os.ReadFile(tokenPath)
				if err != nil {
					t.Fatal(err)
				}
				args = append(args, "-H", "Authorization: Bearer "+strings.TrimSpace(string(b)))
			}
			out, err := exec.Command("nsenter", append(args, api+method)...).CombinedOutput()
			if err != nil {
				t.Fatalf("curl %s: %v: %s", method, err, out)
			}
			text := strings.TrimSpace(string(out))
			i := strings.LastIndexByte(text, '\n')
			return text[:i+1], text[i+1:]
		}
		body, code := curl(alice, tokenFile(alice, "all"), "Query", `{"ids":["`+job+`"]}`)
		if code != "200" || !strings.Contains(body, `"result"`) || !strings.Contains(body, `Owner = \"`+alice.Username+`\"`) {
			t.Errorf("JSON Query: HTTP %s: %s", code, body)
		}
		body, code = curl(bob, tokenFile(bob, "all"), "Act", `{"action":"REMOVE","ids":["`+job+`"]}`)
		if code != "200" || strings.Contains(body, `"ok":true`) || !strings.Contains(body, `"error"`) {
			t.Errorf("JSON Act by bob on alice's job: HTTP %s: %s", code, body)
		}
		t.Logf("JSON Act by bob on alice's job: %s", body)
		if body, code = curl(alice, "", "Query", `{}`); code != "401" || !strings.Contains(body, "no token") {
			t.Errorf("JSON Query without a token: HTTP %s: %s", code, body)
		}
		if body, code = curl(alice, tokenFile(alice, "read"), "NewCluster", `{}`); code != "403" || !strings.Contains(body, "scopes do not allow") {
			t.Errorf("JSON NewCluster with a read-only token: HTTP %s: %s", code, body)
		}
		if out, _ := n.tool("submit", "q", "-af", "JobStatus", job); strings.TrimSpace(out) != "5" {
			t.Fatalf("alice's job after bob's JSON call: %q", out)
		}
	}

	// A remote submission names no file of the client host.
	local := sub("local.sub", "executable = /bin/true\ntransfer_executable = false\nqueue\n")
	refused("remote submit without initialdir", aliceAll, "set initialdir", "submit", local)
	exe := sub("job.sh", "#!/bin/sh\necho here\n")
	if err := os.Chmod(exe, 0o755); err != nil {
		t.Fatal(err)
	}
	script := sub("script.sub", "executable = "+exe+"\ninitialdir = "+work+"\nqueue\n")
	refused("remote submit of a local executable", aliceAll, "transfer_executable = false", "submit", script)
	// And the remote API offers no shell in a job.
	refused("remote ssh-to-job", aliceAll, "not offered by the remote API", "ssh-to-job", job, "--", "true")
}
