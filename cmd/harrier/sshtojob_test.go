package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sshJob is a running job of its owner's on a real pool, for
// harrier ssh-to-job.
type sshJob struct {
	h     *hostile
	owner string
	id    string
	// ran is what the job printed of itself at its start: its uid and
	// cgroups.
	ran string
}

// startSSHJob submits, as owner, a job that prints its uid and cgroups
// and runs until the file stop appears in its directory.
func startSSHJob(t *testing.T, h *hostile, owner string) *sshJob {
	t.Helper()
	writeFile(t, filepath.Join(h.dir, "job.sh"), "#!/bin/sh\nid -u\ncat /proc/self/cgroup\necho ready\nwhile [ ! -e stop ]; do sleep 0.2; done\n", 0o755)
	out, code := h.tool(t, owner, "submit", h.submitFile(t, "job.sub",
		"executable = job.sh\noutput = job.out\nenvironment = \"SOMEJOBENV=from-the-submit-file\"\nqueue\n"))
	j := &sshJob{h: h, owner: owner, id: fmt.Sprintf("%d.0", submitted(t, out, code))}
	eventually(t, 60*time.Second, "the job to start", func() bool {
		b, _ := os.ReadFile(filepath.Join(h.dir, "job.out"))
		j.ran = string(b)
		return strings.HasSuffix(j.ran, "ready\n")
	})
	return j
}

// ssh runs harrier ssh-to-job as user with stdin as its standard input
// (a pipe) and returns its standard output, its standard error and its
// exit code.
func (j *sshJob) ssh(t *testing.T, user, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := j.command(t, user, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("ssh-to-job as %s: %v", user, err)
	}
	return out.String(), errOut.String(), code
}

// command is harrier ssh-to-job ID ARGS as user, not started.
func (j *sshJob) command(t *testing.T, user string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(j.h.bin, append([]string{"ssh-to-job", j.id}, args...)...)
	cmd.Env = append(append(os.Environ(), asHarrier+"=1"), j.h.env...)
	if user != "root" {
		uid, gid := lookupIDs(t, user)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	}
	return cmd
}

// TestSshToJob: on a real pool the owner of a running job runs a command
// in it: as the job's user, in its working directory and cgroups, with
// its environment; input piped to the tool reaches the command and its
// exit status is the tool's. Another user is refused, root is not. A
// session still open when the job ends is ended, saying why, and a
// finished job is refused.
func TestSshToJob(t *testing.T) {
	h := newUsersPool(t)
	alice, bob := newUser(t).Username, newUser(t).Username
	j := startSSHJob(t, h, alice)

	out, errOut, code := j.ssh(t, alice, "", "--", "sh", "-c", "id -u; cat /proc/self/cgroup; echo ready; pwd; echo $SOMEJOBENV")
	if code != 0 {
		t.Fatalf("ssh-to-job: exit %d: %s", code, errOut)
	}
	if want := j.ran + h.dir + "\nfrom-the-submit-file\n"; out != want {
		t.Errorf("in the job the command printed\n%s\nwant the job's uid and cgroups, its directory and environment:\n%s", out, want)
	}
	if !strings.Contains(j.ran, "/harrier/") || !strings.Contains(j.ran, "slot1") {
		t.Errorf("the job's cgroups are not its slot's:\n%s", j.ran)
	}
	if out, errOut, code := j.ssh(t, alice, "line one\nline two\n", "--", "cat"); code != 0 || out != "line one\nline two\n" {
		t.Errorf("cat in the job: exit %d, printed %q: %s", code, out, errOut)
	}
	if _, errOut, code := j.ssh(t, alice, "", "--", "sh", "-c", "echo to stderr >&2; exit 7"); code != 7 || errOut != "to stderr\n" {
		t.Errorf("exit 7 in the job: the tool exited %d with %q on standard error", code, errOut)
	}
	if _, errOut, code := j.ssh(t, bob, "", "--", "id"); code != 1 || !strings.Contains(errOut, "only its owner") {
		t.Errorf("another user: exit %d: %s", code, errOut)
	}
	if out, errOut, code := j.ssh(t, "root", "", "--", "echo", "root may"); code != 0 || out != "root may\n" {
		t.Errorf("root: exit %d, %q: %s", code, out, errOut)
	}

	// A session open when the job ends ends with it.
	long := j.command(t, alice, "--", "sh", "-c", "echo up; exec sleep 1000")
	var longErr bytes.Buffer
	long.Stderr = &longErr
	pipe, err := long.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := long.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(pipe).ReadString('\n'); err != nil || line != "up\n" {
		t.Fatalf("the long session began with %q: %v (%s)", line, err, longErr.String())
	}
	writeFile(t, filepath.Join(h.dir, "stop"), "", 0o644)
	err = long.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(longErr.String(), "the job exited") {
		t.Errorf("a session at the job's end: %v: %s", err, longErr.String())
	}
	eventually(t, 60*time.Second, "the job to leave the queue", func() bool { return h.jobStatus(t, j.id) == 0 })
	if _, errOut, code := j.ssh(t, alice, "", "--", "true"); code != 1 || !strings.Contains(errOut, "not in the queue") {
		t.Errorf("a finished job: exit %d: %s", code, errOut)
	}
}

// TestSshToJobTerminal: with a terminal as its standard input the tool
// gives the process one inside the job, of the same size.
func TestSshToJobTerminal(t *testing.T) {
	h := newUsersPool(t)
	alice := newUser(t).Username
	j := startSSHJob(t, h, alice)
	defer writeFile(t, filepath.Join(h.dir, "stop"), "", 0o644)

	master, slave := openPTY(t)
	if err := unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 33, Col: 101}); err != nil {
		t.Fatal(err)
	}
	cmd := j.command(t, alice, "--", "sh", "-c", "tty; stty size")
	cmd.Stdin = slave
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if err != nil {
		t.Fatalf("ssh-to-job with a terminal: %v: %s", err, errOut.String())
	}
	// The terminal in the job ends its lines as terminals do.
	if !regexp.MustCompile(`^/dev/pts/[0-9]+\r\n33 101\r\n$`).MatchString(out.String()) {
		t.Errorf("tty and stty size in the job printed %q, want a terminal of the job's own, 33 rows of 101", out.String())
	}

	// The terminal's size follows the tool's (SIGWINCH). Each line typed
	// has the size printed; the new one shows once its change has gone
	// through.
	cmd = j.command(t, alice, "--", "sh", "-c", "while read x; do stty size; done")
	cmd.Stdin = slave
	cmd.Stderr = &errOut
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 120}); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewReader(pipe)
	eventually(t, 30*time.Second, "the new size in the job", func() bool {
		_ = cmd.Process.Signal(unix.SIGWINCH)
		if _, err := master.WriteString("\r"); err != nil {
			t.Fatal(err)
		}
		line, err := lines.ReadString('\n')
		if err != nil {
			t.Fatalf("the session ended: %v: %s", err, errOut.String())
		}
		return line == "40 120\r\n"
	})
	// End of input, typed.
	if _, err := master.WriteString("\x04"); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("the session ended with %v: %s", err, errOut.String())
	}
}

// openPTY opens a new pseudo-terminal, both ends.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// TestSshToJobVacate: a job vacated while its owner has a session in it
// ends the session, saying why, and is still checkpointed: the session's
// processes are not the job's, and do not go into its image.
func TestSshToJobVacate(t *testing.T) {
	h := newUsersPool(t)
	alice := newUser(t).Username
	j := startSSHJob(t, h, alice)
	defer writeFile(t, filepath.Join(h.dir, "stop"), "", 0o644)

	long := j.command(t, alice, "--", "sh", "-c", "echo up; exec sleep 1000")
	var longErr bytes.Buffer
	long.Stderr = &longErr
	pipe, err := long.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := long.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(pipe).ReadString('\n'); err != nil || line != "up\n" {
		t.Fatalf("the session began with %q: %v (%s)", line, err, longErr.String())
	}
	if out, code := h.tool(t, alice, "vacate", j.id); code != 0 {
		t.Fatalf("vacate: exit %d: %s", code, out)
	}
	err = long.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(longErr.String(), "vacated") {
		t.Errorf("a session in a vacated job: %v: %s", err, longErr.String())
	}
	eventually(t, 60*time.Second, "the job to run again from its checkpoint", func() bool {
		ads := h.jobs(t, "q", j.id)
		if len(ads) == 0 {
			t.Fatal("the job left the queue")
		}
		// Restored, not the run being vacated: that one is still
		// running for a moment after its checkpoint is stored.
		n, _ := ads[0]["NumRestores"].(float64)
		return n >= 1 && ads[0]["JobStatus"] == 2.0
	})
	if out, errOut, code := j.ssh(t, alice, "", "--", "echo", "back"); code != 0 || out != "back\n" {
		t.Errorf("a session in the restored job: exit %d: %q %s", code, out, errOut)
	}
}
