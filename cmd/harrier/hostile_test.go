package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/wire"
)

// The tests here act as local users attacking the agent through its
// socket: real Unix users made for the test, the real agent daemon, and
// either the harrier command or scheddClient, a client that says exactly
// what it is told to the socket (the test binary runs it as a user when
// scheddClientEnv is set).
const scheddClientEnv = "HARRIER_TEST_SCHEDD_CLIENT"

// scheddClient talks to the pool's agent ($HARRIER_POOL) as whoever runs
// it and prints one line:
//
//	newcluster                 the cluster NewCluster reserved
//	submit CLUSTER JOBS PAD    "ok" or the error; CLUSTER "new" reserves one
//	                           first; each job ad carries PAD bytes
//	flood N                    "OK REFUSED SECONDS LAST-ERROR" of N NewClusters
//	clusters CLUSTER...        "ok" and the clusters, or the error, of one
//	                           SubmitClusters of a job into each; "new"
//	                           reserves one first
//
// An error line starts with "error CODE:". The exit status is 0.
func scheddClient(args []string) int {
	fail := func(err error) int {
		s, _ := status.FromError(err)
		fmt.Printf("error %s: %s\n", s.Code(), err)
		return 0
	}
	pc, err := findPool("")
	if err != nil {
		return fail(err)
	}
	client, closeFn, err := agentClient(pc)
	if err != nil {
		return fail(err)
	}
	defer closeFn()
	ctx := context.Background()
	switch args[0] {
	case "newcluster":
		nc, err := client.NewCluster(ctx, &wire.NewClusterRequest{})
		if err != nil {
			return fail(err)
		}
		fmt.Println(nc.Cluster)
	case "submit":
		cluster, _ := strconv.Atoi(args[1])
		if args[1] == "new" {
			nc, err := client.NewCluster(ctx, &wire.NewClusterRequest{})
			if err != nil {
				return fail(err)
			}
			cluster = int(nc.Cluster)
		}
		jobs, _ := strconv.Atoi(args[2])
		pad, _ := strconv.Atoi(args[3])
		req := &wire.SubmitRequest{Cluster: int32(cluster)}
		for i := range jobs {
			req.Ads = append(req.Ads, fmt.Sprintf(`[ ClusterId = %d; ProcId = %d; JobStatus = 1; Cmd = "/bin/true"; Iwd = "/tmp"; Requirements = false; Pad = "%s" ]`,
				cluster, i, strings.Repeat("p", pad)))
		}
		if _, err := client.Submit(ctx, req); err != nil {
			s, _ := status.FromError(err)
			fmt.Printf("error %s: %s\n", s.Code(), submitError(err, req))
			return 0
		}
		fmt.Println("ok", cluster)
	case "clusters":
		req := &wire.SubmitClustersRequest{}
		line := "ok"
		for _, arg := range args[1:] {
			cluster, _ := strconv.Atoi(arg)
			if arg == "new" {
				nc, err := client.NewCluster(ctx, &wire.NewClusterRequest{})
				if err != nil {
					return fail(err)
				}
				cluster = int(nc.Cluster)
			}
			req.Clusters = append(req.Clusters, &wire.SubmitRequest{Cluster: int32(cluster), Ads: []string{
				fmt.Sprintf(`[ ClusterId = %d; ProcId = 0; JobStatus = 1; Cmd = "/bin/true"; Iwd = "/tmp"; Requirements = false ]`, cluster)}})
			line += " " + strconv.Itoa(cluster)
		}
		if _, err := client.SubmitClusters(ctx, req); err != nil {
			return fail(err)
		}
		fmt.Println(line)
	case "flood":
		n, _ := strconv.Atoi(args[1])
		start := time.Now()
		ok, refused := 0, 0
		var last error
		for range n {
			if _, err := client.NewCluster(ctx, &wire.NewClusterRequest{}); err != nil {
				refused++
				last = err
			} else {
				ok++
			}
		}
		fmt.Printf("%d %d %.3f %v\n", ok, refused, time.Since(start).Seconds(), last)
	}
	return 0
}

// asUser runs bin (a copy of the test binary every user may run) as user,
// with env added, and returns its output and exit code.
func asUser(t *testing.T, bin, user string, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	// Only env says what the binary is to be (restartAgent sets
	// asHarrier for the daemon it starts).
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, asHarrier+"=") && !strings.HasPrefix(kv, scheddClientEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	uid, gid := lookupIDs(t, user)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s as %s: %v", strings.Join(args, " "), user, err)
	}
	return out.String(), code
}

// hostile is a pool under attack: its binary for other users, and the
// directory where they write submit files.
type hostile struct {
	*testPool
	bin, dir string
}

func newHostile(t *testing.T, extra string) *hostile {
	t.Helper()
	h := &hostile{testPool: startPoolWith(t, 1, extra), bin: publicBinary(t), dir: t.TempDir()}
	if err := os.Chmod(h.dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return h
}

// raw runs scheddClient as user and returns its line.
func (h *hostile) raw(t *testing.T, user string, args ...string) string {
	t.Helper()
	out, code := asUser(t, h.bin, user, append([]string{scheddClientEnv + "=1"}, h.env...), args...)
	if code != 0 {
		t.Fatalf("schedd client %v as %s: exit %d: %s", args, user, code, out)
	}
	return strings.TrimSpace(out)
}

// tool runs a harrier command as user.
func (h *hostile) tool(t *testing.T, user string, args ...string) (string, int) {
	t.Helper()
	return asUser(t, h.bin, user, append([]string{asHarrier + "=1"}, h.env...), args...)
}

// submitFile writes a submit description for user and returns its path.
func (h *hostile) submitFile(t *testing.T, name, desc string) string {
	t.Helper()
	path := filepath.Join(h.dir, name)
	writeFile(t, path, desc, 0o644)
	return path
}

// restartAgent kills the agent with SIGKILL and waits until its master
// has started it again on its queue and it answers.
func (p *testPool) restartAgent(t *testing.T) {
	t.Helper()
	p.killDaemon(t, "agent")
	eventually(t, 30*time.Second, "the agent to answer", func() bool {
		_, code := p.harrier(t, "q", "-limit", "1")
		return code == 0
	})
}

// killDaemon kills daemon name with SIGKILL and waits until its master
// has started a new process for it.
func (p *testPool) killDaemon(t *testing.T, name string) {
	t.Helper()
	pidFile := filepath.Join(p.dir, "run", name+".pid")
	pid := readPid(pidFile)
	if pid <= 0 {
		t.Fatalf("no pid for %s", name)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the master to restart "+name, func() bool {
		now := readPid(pidFile)
		return now > 0 && now != pid && alive(now)
	})
}

// wantRefusal checks that line is an error of code that says want.
func wantRefusal(t *testing.T, what, line, code, want string) {
	t.Helper()
	if !strings.HasPrefix(line, "error "+code+":") || !strings.Contains(line, want) {
		t.Errorf("%s: %q, want an error %s saying %q", what, line, code, want)
	}
}

// historyIDs returns the ids of a cluster's jobs in the history, in order.
func (p *testPool) historyIDs(t *testing.T, cluster int) []string {
	t.Helper()
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(p.must(t, "history", "-af", "ClusterId", "ProcId", "-constraint", fmt.Sprintf("ClusterId == %d", cluster))), "\n") {
		if line != "" {
			ids = append(ids, strings.ReplaceAll(line, " ", "."))
		}
	}
	return ids
}

// TestSubmitClustersAllOrNothing: a submission of several clusters is
// authorized as a submission of each: one that is another user's, or
// used already, refuses it all, and none of its clusters is queued.
func TestSubmitClustersAllOrNothing(t *testing.T) {
	h := newHostile(t, "")
	alice, bob := newUser(t).Username, newUser(t).Username
	cA, err := strconv.Atoi(h.raw(t, alice, "newcluster"))
	if err != nil {
		t.Fatalf("alice's NewCluster: %v", err)
	}
	cB, err := strconv.Atoi(h.raw(t, bob, "newcluster"))
	if err != nil {
		t.Fatalf("bob's NewCluster: %v", err)
	}
	wantRefusal(t, "bob submits his cluster with alice's", h.raw(t, bob, "clusters", strconv.Itoa(cB), strconv.Itoa(cA)), "PermissionDenied", "not yours")
	if ids := h.jobs(t, "q", strconv.Itoa(cB)); len(ids) != 0 {
		t.Fatalf("the refused submission queued bob's cluster %d: %v", cB, ids)
	}
	line := h.raw(t, alice, "clusters", strconv.Itoa(cA), "new", "new")
	f := strings.Fields(line)
	if len(f) != 4 || f[0] != "ok" {
		t.Fatalf("alice submits her cluster and two new ones: %s", line)
	}
	for _, c := range f[1:] {
		if ids := h.jobs(t, "q", c); len(ids) != 1 {
			t.Errorf("alice's cluster %s: jobs %v, want one", c, ids)
		}
	}
	wantRefusal(t, "alice submits a used cluster with a new one", h.raw(t, alice, "clusters", "new", strconv.Itoa(cA)), "PermissionDenied", "not yours")
	wantRefusal(t, "alice names a cluster twice", h.raw(t, alice, "clusters", strconv.Itoa(cB), strconv.Itoa(cB)), "InvalidArgument", "twice")
	// Bob's reservation outlived his refused submission.
	if line := h.raw(t, bob, "clusters", strconv.Itoa(cB)); line != "ok "+strconv.Itoa(cB) {
		t.Fatalf("bob submits his cluster alone: %s", line)
	}
	if owner := strings.TrimSpace(h.must(t, "q", strconv.Itoa(cB), "-af", "Owner")); owner != bob {
		t.Errorf("bob's cluster %d is owned by %q", cB, owner)
	}
}

// TestClustersBelongToTheirSubmitter: a user cannot submit into another's
// cluster, nor into their own twice, nor into a cluster whose jobs have
// left the queue, before or after the agent restarts; an unused cluster
// stays its owner's across the restart, and no number is handed out twice.
func TestClustersBelongToTheirSubmitter(t *testing.T) {
	h := newHostile(t, "")
	alice, bob := newUser(t).Username, newUser(t).Username
	cA, err := strconv.Atoi(h.raw(t, alice, "newcluster"))
	if err != nil {
		t.Fatalf("alice's NewCluster: %v", err)
	}
	wantRefusal(t, "bob submits into alice's cluster", h.raw(t, bob, "submit", strconv.Itoa(cA), "1", "0"), "PermissionDenied", "not yours")
	wantRefusal(t, "bob submits into a cluster not handed out yet", h.raw(t, bob, "submit", strconv.Itoa(cA+1), "1", "0"), "PermissionDenied", "not yours")
	if line := h.raw(t, alice, "submit", strconv.Itoa(cA), "2", "0"); line != "ok "+strconv.Itoa(cA) {
		t.Fatalf("alice submits into her cluster: %s", line)
	}
	wantRefusal(t, "alice submits into her cluster again", h.raw(t, alice, "submit", strconv.Itoa(cA), "1", "0"), "PermissionDenied", "not yours")

	// The jobs leave the queue: their ids are never used again.
	if out, code := h.tool(t, alice, "rm", strconv.Itoa(cA)); code != 0 {
		t.Fatalf("alice's rm: exit %d: %s", code, out)
	}
	eventually(t, 30*time.Second, "alice's jobs to leave the queue", func() bool {
		return len(h.jobs(t, "q", strconv.Itoa(cA))) == 0
	})
	wantRefusal(t, "alice submits into her emptied cluster", h.raw(t, alice, "submit", strconv.Itoa(cA), "1", "0"), "PermissionDenied", "not yours")
	cA2, err := strconv.Atoi(h.raw(t, alice, "newcluster"))
	if err != nil || cA2 <= cA {
		t.Fatalf("alice's second NewCluster: %d, %v", cA2, err)
	}

	h.restartAgent(t)
	wantRefusal(t, "after a restart, alice submits into her emptied cluster", h.raw(t, alice, "submit", strconv.Itoa(cA), "1", "0"), "PermissionDenied", "not yours")
	wantRefusal(t, "after a restart, bob submits into alice's open cluster", h.raw(t, bob, "submit", strconv.Itoa(cA2), "1", "0"), "PermissionDenied", "not yours")
	if line := h.raw(t, alice, "submit", strconv.Itoa(cA2), "1", "0"); line != "ok "+strconv.Itoa(cA2) {
		t.Errorf("after a restart, alice submits into the cluster she was given before: %s", line)
	}
	cB, err := strconv.Atoi(h.raw(t, bob, "newcluster"))
	if err != nil || cB <= cA2 {
		t.Errorf("bob's NewCluster after the restart: %d, %v: a number handed out before", cB, err)
	}
	if ids := h.historyIDs(t, cA); strings.Join(ids, " ") != fmt.Sprintf("%d.0 %d.1", cA, cA) {
		t.Errorf("history of cluster %d: %v, want its two jobs once each", cA, ids)
	}
}

// TestFloodRefusedWhileOthersServed: one user submitting past every limit
// is refused, each time naming the limit, while another user's q, history
// and submit go on working.
func TestFloodRefusedWhileOthersServed(t *testing.T) {
	h := newHostile(t, "MAX_JOBS_PER_OWNER = 30\nMAX_JOBS_PER_SUBMISSION = 20\nMAX_JOB_AD_BYTES = 4096\n"+
		"MAX_SUBMISSION_BYTES = 262144\nMAX_SUBMISSIONS_PER_SECOND = 20\n")
	mallory, bob := newUser(t).Username, newUser(t).Username
	bobWorks := func(when string) {
		t.Helper()
		if out, code := h.tool(t, bob, "q"); code != 0 || !strings.Contains(out, " jobs; ") {
			t.Errorf("%s: bob's q: exit %d: %s", when, code, out)
		}
		if out, code := h.tool(t, bob, "history"); code != 0 {
			t.Errorf("%s: bob's history: exit %d: %s", when, code, out)
		}
	}

	out, code := h.tool(t, mallory, "submit", h.submitFile(t, "many.sub", "executable = /bin/true\nrequirements = false\nqueue 25\n"))
	if code == 0 || !strings.Contains(out, "MAX_JOBS_PER_SUBMISSION") {
		t.Errorf("harrier submit of 25 jobs: exit %d: %s", code, out)
	}
	wantRefusal(t, "an ad of 8000 bytes", h.raw(t, mallory, "submit", "new", "1", "8000"), "ResourceExhausted", "MAX_JOB_AD_BYTES")
	wantRefusal(t, "a submission of 300 KB", h.raw(t, mallory, "submit", "new", "20", "15000"), "ResourceExhausted", "MAX_SUBMISSION_BYTES")
	wantRefusal(t, "a submission of 20 MB", h.raw(t, mallory, "submit", "new", "20", "1000000"), "ResourceExhausted", "MAX_SUBMISSION_BYTES")
	if line := h.raw(t, mallory, "submit", "new", "20", "100"); !strings.HasPrefix(line, "ok ") {
		t.Fatalf("mallory's 20 jobs: %s", line)
	}
	wantRefusal(t, "jobs 21 to 40 of one owner", h.raw(t, mallory, "submit", "new", "20", "100"), "ResourceExhausted", "MAX_JOBS_PER_OWNER")
	bobWorks("after mallory's refused submissions")

	fields := strings.Fields(h.raw(t, mallory, "flood", "300"))
	ok, _ := strconv.Atoi(fields[0])
	refused, _ := strconv.Atoi(fields[1])
	secs, _ := strconv.ParseFloat(fields[2], 64)
	t.Logf("flood of 300 NewCluster calls in %.2f s: %d went through, %d refused", secs, ok, refused)
	if earned := 20 + int(20*secs) + 1; ok > earned {
		t.Errorf("%d of 300 NewCluster calls went through at 20 a second, in time for %d", ok, earned)
	}
	if refused > 0 && !strings.Contains(strings.Join(fields[3:], " "), "MAX_SUBMISSIONS_PER_SECOND") {
		t.Errorf("flood refused without naming the limit: %v", fields[3:])
	}
	bobWorks("during mallory's flood")
	if out, code := h.tool(t, bob, "submit", h.submitFile(t, "bob.sub", "executable = /bin/true\nrequirements = false\nqueue 2\n")); code != 0 {
		t.Errorf("bob's submission after mallory's flood: exit %d: %s", code, out)
	}
	if n := len(h.jobs(t, "q")); n != 22 {
		t.Errorf("%d jobs in the queue, want mallory's 20 and bob's 2", n)
	}
}

// TestQueueLargerThanAMessage lists a queue, and then a history, holding
// more ad text than the agent's socket takes in a message: q and history
// stream them whole, in every output form.
func TestQueueLargerThanAMessage(t *testing.T) {
	h := newHostile(t, "MAX_SUBMISSION_BYTES = 262144\n")
	alice := newUser(t).Username
	const clusters, each = 4, 400
	var cs []string
	for i := range clusters {
		out, code := h.tool(t, alice, "submit", h.submitFile(t, fmt.Sprintf("c%d.sub", i),
			"executable = /bin/true\nrequirements = false\narguments = $(Process)\n+Pad = \""+strings.Repeat("z", 1000)+"\"\nqueue "+strconv.Itoa(each)+"\n"))
		var n, c int
		if _, err := fmt.Sscanf(out, "%d job(s) submitted to cluster %d.", &n, &c); code != 0 || err != nil {
			t.Fatalf("submit: exit %d: %s", code, out)
		}
		cs = append(cs, strconv.Itoa(c))
	}
	const total = clusters * each
	check := func(cmd string) {
		t.Helper()
		js := h.must(t, cmd, "-json")
		if len(js) <= 262144+1<<20 {
			t.Fatalf("%s -json is %d bytes, no more than one message may hold: the test proves nothing", cmd, len(js))
		}
		if n := len(h.jobs(t, cmd)); n != total {
			t.Errorf("%s -json: %d jobs, want %d", cmd, n, total)
		}
		if n := strings.Count(h.must(t, cmd, "-af", "ProcId"), "\n"); n != total {
			t.Errorf("%s -af: %d lines, want %d", cmd, n, total)
		}
		if n := strings.Count(h.must(t, cmd, "-long"), "\n\n"); n != total {
			t.Errorf("%s -long: %d ads, want %d", cmd, n, total)
		}
		if n := strings.Count(h.must(t, cmd, "-limit", "7", "-af", "ProcId"), "\n"); n != 7 {
			t.Errorf("%s -limit 7: %d lines", cmd, n)
		}
	}
	check("q")
	if out := h.must(t, "q"); !strings.Contains(out, fmt.Sprintf("\nTotal for query: %d jobs; 0 completed, 0 removed, %d idle,", total, total)) {
		t.Errorf("q table summary:\n%s", out[max(0, len(out)-300):])
	}
	if out, code := h.tool(t, alice, append([]string{"rm"}, cs...)...); code != 0 {
		t.Fatalf("rm: exit %d: %s", code, out[:min(len(out), 500)])
	}
	check("history")
	if n := strings.Count(h.must(t, "history"), "\n"); n != total+1 {
		t.Errorf("history table: %d lines, want a header and %d jobs", n, total)
	}
}

// TestFullSpool puts the agent's spool on a small tmpfs and fills it: a
// removal fails, leaving the job in the queue and out of the history,
// before and after a restart; once space is freed the same agent removes
// it, into the history once.
func TestFullSpool(t *testing.T) {
	needRoot(t)
	spool := t.TempDir()
	if err := unix.Mount("tmpfs", spool, "tmpfs", 0, "size=16m,mode=0700"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(spool, unix.MNT_DETACH) })
	p := startPoolWith(t, 1, "SPOOL = "+spool)
	dir := t.TempDir()
	// Job ads larger than a page, so that no removal fits in the slack of
	// a file's last page on the full disk.
	c := p.submit(t, dir, "big.sub", "executable = /bin/true\nrequirements = false\n+Pad = \""+strings.Repeat("z", 16000)+"\"\nqueue 3\n")
	id := func(proc int) string { return fmt.Sprintf("%d.%d", c, proc) }
	filler := filepath.Join(spool, "filler")
	fill := func() {
		f, err := os.Create(filler)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		buf := make([]byte, 64<<10)
		for {
			if _, err := f.Write(buf); err != nil {
				return
			}
		}
	}
	free := func() {
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
	}
	where := func(when string, proc, wantQ, wantH int) {
		t.Helper()
		q := len(p.jobs(t, "q", id(proc)))
		hist := len(p.jobs(t, "history", id(proc)))
		if q != wantQ || hist != wantH {
			t.Errorf("%s: job %s is %d times in the queue and %d in the history, want %d and %d", when, id(proc), q, hist, wantQ, wantH)
		}
	}

	fill()
	out, code := p.harrier(t, "rm", id(0))
	if code == 0 || !strings.Contains(out, "no space left on device") {
		t.Errorf("rm on a full spool: exit %d: %s", code, out)
	}
	where("full spool, rm failed", 0, 1, 0)
	free()
	p.must(t, "rm", id(0))
	where("space freed, rm again", 0, 0, 1)

	fill()
	if out, code := p.harrier(t, "rm", id(1)); code == 0 {
		t.Errorf("rm on a full spool: exit 0: %s", out)
	}
	p.restartAgent(t)
	where("restarted on the full spool", 1, 1, 0)
	where("restarted on the full spool", 0, 0, 1)
	free()
	p.must(t, "rm", id(1))
	where("space freed after the restart", 1, 0, 1)
	where("space freed after the restart", 2, 1, 0)
}
