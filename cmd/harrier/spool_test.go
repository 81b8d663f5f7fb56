package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

// TestSubmitSpool: alice submits with -spool and then deletes the job's
// inputs, executable and standard input from her directory; the job runs
// from the agent's spool, which only she may read, completes and stays
// in the queue, its outputs not in her directory. Bob's transfer-data of
// it is refused; alice's brings the outputs, checksum-identical and
// renamed by transfer_output_remaps, with its standard output and error,
// and the job leaves the queue for the history. A job with
// should_transfer_files = NO cannot be spooled.
func TestSubmitSpool(t *testing.T) {
	bin := publicBinary(t)
	p := startPoolFrom(t, bin, 1, "")
	alice, bob := newUser(t), newUser(t)
	uid, gid := lookupIDs(t, alice.Username)
	dir := filepath.Join(alice.HomeDir, "spooled")
	data := make([]byte, 3<<20+17)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "data.bin"), string(data), 0o600)
	writeFile(t, filepath.Join(dir, "sub", "nested.txt"), "nested\n", 0o644)
	writeFile(t, filepath.Join(dir, "in.txt"), "standard input\n", 0o644)
	writeFile(t, filepath.Join(dir, "job.sh"), `#!/bin/sh
cp data.bin result.bin
cat nested.txt > nested.out
cat > stdin.copy
echo "to stdout"
echo "to stderr" >&2
`, 0o755)
	writeFile(t, filepath.Join(dir, "job.sub"), `executable = job.sh
should_transfer_files = YES
transfer_input_files = data.bin, sub/nested.txt
transfer_output_remaps = "result.bin = renamed.bin"
input = in.txt
output = out.txt
error = err.txt
queue
`, 0o644)
	chownAll(t, dir, uid, gid)

	out, code := harrierAs(t, p.env, alice.Username, "submit", "-spool", filepath.Join(dir, "job.sub"))
	if code != 0 {
		t.Fatalf("submit -spool: exit %d: %s", code, out)
	}
	var n, cluster int
	if _, err := fmt.Sscanf(out, "%d job(s) submitted to cluster %d.", &n, &cluster); err != nil {
		t.Fatalf("submit said %q: %v", out, err)
	}
	id := fmt.Sprintf("%d.0", cluster)
	for _, name := range []string{"data.bin", "sub", "in.txt", "job.sh"} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}

	// The spool is alice's alone.
	store := filepath.Join(p.dir, "spool", "checkpoints", alice.Username)
	for _, d := range []string{store, filepath.Join(store, id+".spool")} {
		info, err := os.Stat(d)
		if err != nil {
			t.Fatalf("the job's spool: %v", err)
		}
		st := info.Sys().(*syscall.Stat_t)
		if st.Uid != uid || info.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: owner %d mode %v, want alice's (%d) and no access for others", d, st.Uid, info.Mode().Perm(), uid)
		}
	}
	bu, bg := lookupIDs(t, bob.Username)
	cat := exec.Command("cat", filepath.Join(store, id+".spool", "data.bin"))
	cat.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: bu, Gid: bg}}
	if err := cat.Run(); err == nil {
		t.Errorf("bob read alice's spooled input")
	}

	eventually(t, 120*time.Second, "job "+id+" completed and kept in the queue", func() bool { return p.jobStatus(t, id) == 4 })
	if _, err := os.Stat(filepath.Join(dir, "renamed.bin")); !os.IsNotExist(err) {
		t.Errorf("the outputs reached the submit directory before transfer-data: %v", err)
	}

	out, code = harrierAs(t, p.env, bob.Username, "transfer-data", id)
	if code == 0 || !strings.Contains(out, "only its owner") {
		t.Errorf("bob's transfer-data of alice's job: exit %d: %s; want it refused", code, out)
	}
	if st := p.jobStatus(t, id); st != 4 {
		t.Fatalf("after bob's transfer-data the job's status is %d, want it still completed in the queue", st)
	}

	// Only the agent says whether the outputs were fetched.
	if out, code := harrierAs(t, p.env, alice.Username, "qedit", id, "StageOutFinish", "1"); code == 0 {
		t.Errorf("alice's qedit of StageOutFinish was taken: %s", out)
	}
	out, code = harrierAs(t, p.env, alice.Username, "transfer-data", id)
	if code != 0 {
		t.Fatalf("alice's transfer-data: exit %d: %s", code, out)
	}
	got, err := os.ReadFile(filepath.Join(dir, "renamed.bin"))
	if err != nil || sha256.Sum256(got) != sha256.Sum256(data) {
		t.Errorf("renamed.bin: %d bytes (%v), want the %d bytes of data.bin, same SHA-256", len(got), err, len(data))
	}
	for name, want := range map[string]string{"nested.out": "nested\n", "stdin.copy": "standard input\n",
		"out.txt": "to stdout\n", "err.txt": "to stderr\n"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !bytes.Equal(b, []byte(want)) {
			t.Errorf("%s: %q (%v), want %q", name, b, err, want)
		}
	}
	for _, name := range []string{"result.bin", "data.bin", "_condor_stdout"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s in the submit directory after transfer-data: %v", name, err)
		}
	}
	if info, err := os.Stat(filepath.Join(dir, "renamed.bin")); err == nil {
		if st := info.Sys().(*syscall.Stat_t); st.Uid != uid {
			t.Errorf("renamed.bin is uid %d's, want alice's", st.Uid)
		}
	}
	eventually(t, 30*time.Second, "job "+id+" gone from the queue", func() bool { return p.jobStatus(t, id) == 0 })
	if h := p.historyAd(t, id); h["JobStatus"] != float64(4) {
		t.Errorf("history of %s: JobStatus %v, want completed", id, h["JobStatus"])
	}
	if _, err := os.Stat(filepath.Join(store, id+".spool")); !os.IsNotExist(err) {
		t.Errorf("the job's spool outlived it: %v", err)
	}

	// A completed spooled job may be removed instead; its spool goes.
	writeFile(t, filepath.Join(dir, "rm.sub"), "executable = /bin/echo\nshould_transfer_files = YES\noutput = rm.out\nqueue\n", 0o644)
	out, code = harrierAs(t, p.env, alice.Username, "submit", "-spool", filepath.Join(dir, "rm.sub"))
	if _, err := fmt.Sscanf(out, "%d job(s) submitted to cluster %d.", &n, &cluster); code != 0 || err != nil {
		t.Fatalf("submit -spool: exit %d: %s", code, out)
	}
	rmID := fmt.Sprintf("%d.0", cluster)
	eventually(t, 120*time.Second, "job "+rmID+" completed", func() bool { return p.jobStatus(t, rmID) == 4 })

	// A hard link in her spooled outputs to a file only root may read
	// (what alice could make where fs.protected_hardlinks is off; root
	// makes it here) is not read for her: the agent reads as the owner.
	secret := filepath.Join(p.dir, "secret")
	writeFile(t, secret, "root's alone\n", 0o600)
	if err := os.Link(secret, filepath.Join(store, rmID+".out", "stolen")); err != nil {
		t.Fatal(err)
	}
	if out, code := harrierAs(t, p.env, alice.Username, "transfer-data", rmID); code == 0 {
		t.Errorf("transfer-data through a hard link to a root-only file succeeded: %s", out)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "stolen")); err == nil {
		t.Errorf("alice got a root-only file through a hard link in her spool: %q", b)
	}
	if out, code := harrierAs(t, p.env, alice.Username, "rm", rmID); code != 0 {
		t.Fatalf("rm of a completed spooled job: exit %d: %s", code, out)
	}
	eventually(t, 30*time.Second, "job "+rmID+" gone from the queue", func() bool { return p.jobStatus(t, rmID) == 0 })
	for _, suffix := range []string{".spool", ".out"} {
		if _, err := os.Stat(filepath.Join(store, rmID+suffix)); !os.IsNotExist(err) {
			t.Errorf("the removed job's %s outlived it: %v", suffix, err)
		}
	}

	writeFile(t, filepath.Join(dir, "noxfer.sub"), "executable = /bin/true\nqueue\n", 0o644)
	out, code = harrierAs(t, p.env, alice.Username, "submit", "-spool", filepath.Join(dir, "noxfer.sub"))
	if code == 0 || !strings.Contains(out, "should_transfer_files = NO") {
		t.Errorf("submit -spool of a should_transfer_files = NO job: exit %d: %s; want it refused", code, out)
	}
}

// TestSubmitSpoolCrash: an agent killed while a submission's inputs are
// arriving queues none of its jobs, and once restarted keeps nothing of
// what it had received, nor the spool of a job it does not hold (a crash
// between spooling and queueing), but keeps a queued job's.
func TestSubmitSpoolCrash(t *testing.T) {
	p := startPool(t, 1)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "input.txt"), "kept\n", 0o644)
	writeFile(t, filepath.Join(dir, "held.sub"), "executable = /bin/cat\nshould_transfer_files = YES\ntransfer_input_files = input.txt\nhold = true\nqueue\n", 0o644)
	var n, held int
	if _, err := fmt.Sscanf(p.must(t, "submit", "-spool", filepath.Join(dir, "held.sub")), "%d job(s) submitted to cluster %d.", &n, &held); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(p.dir, "spool", "checkpoints", "root")
	orphan := filepath.Join(store, "9999.0.spool")
	writeFile(t, filepath.Join(orphan, "input.txt"), "orphan\n", 0o644)
	pc, err := findPool(p.dir)
	if err != nil {
		t.Fatal(err)
	}
	client, closeFn, err := agentClient(pc)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nc, err := client.NewCluster(ctx, &wire.NewClusterRequest{})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := client.SubmitSpooled(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ad := fmt.Sprintf(`[ ClusterId = %d; ProcId = 0; Cmd = "/bin/true"; Iwd = "/tmp"; JobUniverse = 5; ShouldTransferFiles = "YES"; JobStatus = 1; RequestCpus = 1; RequestMemory = 64; RequestDisk = 40; Requirements = true ]`, nc.Cluster)
	if err := stream.Send(&wire.SpoolRequest{Submit: &wire.SubmitRequest{Cluster: nc.Cluster, Ads: []string{ad}}}); err != nil {
		t.Fatal(err)
	}
	// Half a file: its entry says 1 MB, its data stops at 64 KB.
	if err := stream.Send(&wire.SpoolRequest{Chunk: &wire.TransferChunk{
		Entry: &wire.TransferEntry{Name: "big.dat", Kind: wire.TransferEntry_FILE, Size: 1 << 20, Mode: 0o644},
		Data:  make([]byte, 64<<10)}}); err != nil {
		t.Fatal(err)
	}
	checkpoints := filepath.Join(p.dir, "spool", "checkpoints")
	incoming := func() []string {
		m, _ := filepath.Glob(filepath.Join(checkpoints, "#incoming-*", "0", "*"))
		return m
	}
	eventually(t, 30*time.Second, "the agent receiving the inputs", func() bool { return len(incoming()) > 0 })
	p.restartAgent(t)
	if st := p.jobStatus(t, fmt.Sprintf("%d.0", nc.Cluster)); st != 0 {
		t.Errorf("a job whose inputs were cut short by a crash is in the queue (status %d)", st)
	}
	left, _ := filepath.Glob(filepath.Join(checkpoints, "#incoming-*"))
	spools, _ := filepath.Glob(filepath.Join(checkpoints, "*", fmt.Sprintf("%d.*", nc.Cluster)))
	if len(left)+len(spools) != 0 {
		t.Errorf("the restarted agent kept %v %v", left, spools)
	}
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Errorf("the spool of a job not in the queue survived the restart: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(store, fmt.Sprintf("%d.0.spool", held), "input.txt")); string(b) != "kept\n" {
		t.Errorf("the held spooled job's input after the restart: %q %v", b, err)
	}
}

// TestPlanSpool: what -spool sends of a job, and under which names: an
// input named by a relative path keeps it; one named by an absolute path
// is sent by its last element and its entry renamed to match; URLs are
// left to the starter; the executable and standard input go by their
// last element. A job that reads its files in place cannot be spooled,
// and IF_NEEDED becomes YES.
func TestPlanSpool(t *testing.T) {
	ad := func(src string) *classad.ClassAd {
		a, err := classad.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	job := ad(`[ ClusterId = 3; ProcId = 0; Iwd = "/home/a/w"; Cmd = "/home/a/w/run.sh"; In = "/home/a/w/in.txt";
		ShouldTransferFiles = "IF_NEEDED"; TransferInput = "data.bin, sub/n.txt, /etc/hosts, /opt/tree/, http://x/y" ]`)
	items, err := planSpool([]*classad.ClassAd{job})
	if err != nil {
		t.Fatal(err)
	}
	want := []spoolItem{
		{"/home/a/w", "data.bin", "data.bin"},
		{"/home/a/w", "sub/n.txt", "sub/n.txt"},
		{"/etc", "hosts", "hosts"},
		{"/opt", "tree", "tree"},
		{"/home/a/w", "run.sh", "run.sh"},
		{"/home/a/w", "in.txt", "in.txt"},
	}
	if fmt.Sprint(items[0]) != fmt.Sprint(want) {
		t.Errorf("items %v, want %v", items[0], want)
	}
	if v, _ := job.EvalString("TransferInput"); v != "data.bin,sub/n.txt,hosts,tree/,http://x/y" {
		t.Errorf("TransferInput %q", v)
	}
	if v, _ := job.EvalString("ShouldTransferFiles"); v != "YES" {
		t.Errorf("ShouldTransferFiles %q, want YES", v)
	}
	if _, ok := job.Lookup("LeaveJobInQueue"); !ok {
		t.Error("no LeaveJobInQueue")
	}

	local := ad(`[ ClusterId = 3; ProcId = 1; Iwd = "/w"; Cmd = "/bin/true"; TransferExecutable = false; ShouldTransferFiles = "YES"; TransferInput = "" ]`)
	if items, err := planSpool([]*classad.ClassAd{local}); err != nil || len(items[0]) != 0 {
		t.Errorf("transfer_executable = false: %v %v, want nothing sent", items, err)
	}
	for _, src := range []string{
		`[ ClusterId = 3; ProcId = 2; Iwd = "/w"; Cmd = "/bin/true"; ShouldTransferFiles = "NO" ]`,
		`[ ClusterId = 3; ProcId = 2; Iwd = "/w"; Cmd = "/bin/true" ]`,
		`[ ClusterId = 3; ProcId = 2; Iwd = "/w"; Cmd = "/bin/true"; ShouldTransferFiles = "YES"; TransferInput = "../x" ]`,
	} {
		if _, err := planSpool([]*classad.ClassAd{ad(src)}); err == nil {
			t.Errorf("%s: spooled", src)
		}
	}
}
