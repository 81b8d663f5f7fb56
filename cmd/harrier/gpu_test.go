package main

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"harrier.dev/harrier/sandbox"
)

// TestGPUsAndCron: a machine with two fake GPUs (device nodes made here,
// described in GPU_DEVICES) and two static slots gives one to each of
// two users' jobs: each job sees its own device node and no other, and
// CUDA_VISIBLE_DEVICES and _CONDOR_AssignedGPUs name it; a job that asks
// for none sees none. A job asking
// for more GPUs than the machine has stays idle, and q -better-analyze
// says why; a GPU job's vacate is
// not a checkpoint, and its event log says why. The machine's STARTD_CRON
// jobs publish their attribute in status -long, and one that fails is
// named there without stopping the startd.
func TestGPUsAndCron(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skipf("containers not available: %v", err)
	}
	needRoot(t)
	idOf, gpuConf := fakeGPUs(t)
	cronDir := t.TempDir()
	for d := cronDir; d != "/" && d != "/tmp"; d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755)
	}
	writeFile(t, filepath.Join(cronDir, "health.sh"), "#!/bin/sh\necho \"HasFakeCVMFS = true\"\necho \"RanAs = \\\"$(id -un)\\\"\"\n", 0o755)
	writeFile(t, filepath.Join(cronDir, "broken.sh"), "#!/bin/sh\necho 'no such mount' >&2\nexit 2\n", 0o755)
	bin := publicBinary(t)
	p := &hostile{testPool: startPoolFrom(t, bin, 1, fmt.Sprintf(`SANDBOX = container
NUM_SLOTS = 2
NEGOTIATOR_INTERVAL = 2
%sSTARTD_CRON_JOBLIST = HEALTH BROKEN
STARTD_CRON_HEALTH_EXECUTABLE = %s
STARTD_CRON_HEALTH_PERIOD = 2
STARTD_CRON_HEALTH_PREFIX = Test_
STARTD_CRON_BROKEN_EXECUTABLE = %s
STARTD_CRON_BROKEN_PERIOD = 2
`, gpuConf, filepath.Join(cronDir, "health.sh"), filepath.Join(cronDir, "broken.sh"))), bin: bin}

	// The machine's ads: its GPUs, one a slot, and its cron attributes.
	var status string
	eventually(t, 30*time.Second, "the cron attributes in status -long", func() bool {
		status = p.must(t, "status", "-long")
		return strings.Count(status, "Test_HasFakeCVMFS = true") == 2 && strings.Count(status, `StartdCronFailures = "BROKEN"`) == 2
	})
	for _, want := range []string{`AssignedGPUs = "GPU-fake0"`, `AssignedGPUs = "GPU-fake1"`, `DetectedGPUs = "GPU-fake0, GPU-fake1"`,
		"TotalGPUs = 2", "GPUs = 1", `GPUs_DeviceName = "Harrier Fake"`, "GPUs_Capability = 8.0", `Test_RanAs = "nobody"`} {
		if !strings.Contains(status, want) {
			t.Errorf("status -long lacks %s:\n%s", want, status)
		}
	}

	gpus := p.must(t, "status", "-gpus")
	for _, re := range []string{`(?m)^Name +ST +User +GPUs +GPU-Memory +GPU-Name +AssignedGPUs$`,
		`(?m)^slot1@\S+ +Ui +1 +16\.0 GB +Harrier Fake +GPU-fake0$`, `(?m)^slot2@\S+ +Ui +1 +16\.0 GB +Harrier Fake +GPU-fake1$`} {
		if !regexp.MustCompile(re).MatchString(gpus) {
			t.Errorf("status -gpus does not match %s:\n%s", re, gpus)
		}
	}

	alice, bob := newUser(t), newUser(t)
	dirOf := func(u string) string {
		t.Helper()
		home := map[string]string{alice.Username: alice.HomeDir, bob.Username: bob.HomeDir}[u]
		dir := filepath.Join(home, "gpujob")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		uid, gid := lookupIDs(t, u)
		if err := os.Chown(dir, int(uid), int(gid)); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, "probe.sh"), gpuProbe, 0o755)
		return dir
	}
	submit := func(u, dir, desc string) string {
		t.Helper()
		path := filepath.Join(dir, "job.sub")
		writeFile(t, path, desc, 0o644)
		out, code := p.tool(t, u, "submit", path)
		return fmt.Sprintf("%d.0", submitted(t, out, code))
	}
	aDir, bDir := dirOf(alice.Username), dirOf(bob.Username)
	// A job that asks for no GPU gets none, though its slot has one.
	writeFile(t, filepath.Join(bDir, "go"), "", 0o644)
	plain := submit(bob.Username, bDir, "executable = probe.sh\noutput = plain.out\nerror = plain.err\nqueue\n")
	if out, code := p.tool(t, bob.Username, "wait", "--timeout", "90", plain); code != 0 {
		t.Fatalf("wait for bob's job without GPUs: exit %d: %s", code, out)
	}
	if out := mustRead(t, filepath.Join(bDir, "plain.out")); !strings.Contains(out, "devs \n") || !strings.Contains(out, "cuda \n") || !strings.Contains(out, "done") {
		t.Errorf("a job without request_gpus saw GPUs:\n%s", out)
	}
	if err := os.Remove(filepath.Join(bDir, "go")); err != nil {
		t.Fatal(err)
	}
	// First, a job no machine can run: three GPUs.
	big := submit(alice.Username, aDir, "executable = probe.sh\nrequest_gpus = 3\noutput = big.out\nqueue\n")
	gpuJob := "executable = probe.sh\nrequest_gpus = 1\nrequire_gpus = Capability >= 8.0 && DeviceName == \"Harrier Fake\"\ngpus_minimum_memory = 8G\noutput = out\nerror = err\nlog = job.log\nqueue\n"
	a := submit(alice.Username, aDir, gpuJob)
	b := submit(bob.Username, bDir, gpuJob)
	eventually(t, 90*time.Second, "both GPU jobs to run", func() bool {
		return p.jobStatus(t, a) == 2 && p.jobStatus(t, b) == 2
	})

	// A GPU job is not checkpointed: its vacate says why, and it runs
	// again from its start.
	p.must(t, "vacate", a)
	var log string
	eventually(t, 60*time.Second, "the eviction in alice's event log", func() bool {
		log = readLog(t, filepath.Join(aDir, "job.log"))
		return strings.Contains(log, "Job was evicted.")
	})
	if !strings.Contains(log, "holding GPUs cannot be checkpointed") {
		t.Errorf("the event log does not say why the GPU job was not checkpointed:\n%s", log)
	}
	eventually(t, 90*time.Second, "alice's job to run again", func() bool { return p.jobStatus(t, a) == 2 })
	if ad := p.jobs(t, "q", a); len(ad) == 0 || !strings.Contains(fmt.Sprint(ad[0]["LastCheckpointFailure"]), "holding GPUs") {
		t.Errorf("the job's LastCheckpointFailure: %v", ad)
	}

	// Both run at once, each on its own GPU: they see only their own.
	eventually(t, 30*time.Second, "both jobs to report their devices", func() bool {
		oa, _ := os.ReadFile(filepath.Join(aDir, "out"))
		ob, _ := os.ReadFile(filepath.Join(bDir, "out"))
		return strings.Contains(string(oa), "assigned ") && strings.Contains(string(ob), "assigned ")
	})
	writeFile(t, filepath.Join(aDir, "go"), "", 0o644)
	writeFile(t, filepath.Join(bDir, "go"), "", 0o644)
	var assigned []string
	for _, j := range []struct{ id, user, dir string }{{a, alice.Username, aDir}, {b, bob.Username, bDir}} {
		if out, code := p.tool(t, j.user, "wait", "--timeout", "90", j.id); code != 0 {
			t.Fatalf("wait for %s: exit %d: %s", j.id, code, out)
		}
		assigned = append(assigned, ownGPU(t, idOf, j.user+"'s job "+j.id, filepath.Join(j.dir, "out")))
	}
	if slices.Sort(assigned); !slices.Equal(assigned, []string{"GPU-fake0", "GPU-fake1"}) {
		t.Errorf("the jobs ran on %v, want one GPU each", assigned)
	}

	// Bob cannot touch alice's job, GPU or not.
	if out, code := p.tool(t, bob.Username, "rm", big); code == 0 {
		t.Errorf("bob removed alice's job: %s", out)
	}
	// The negotiator has matched the later jobs; the three-GPU one is
	// still idle, and the startd, with a failing cron job, still serves.
	if st := p.jobStatus(t, big); st != 1 {
		t.Errorf("the job asking for 3 GPUs has JobStatus %d, want 1 (idle)", st)
	}
	if out := p.must(t, "q", "-better-analyze", big); !strings.Contains(out, "[5] TARGET.GPUs >= RequestGPUs") ||
		!strings.Contains(out, "2 are rejected by your job's requirements") {
		t.Errorf("q -better-analyze does not blame the GPU request:\n%s", out)
	}
	var startdLog string
	logs, _ := filepath.Glob(filepath.Join(p.testPool.dir, "log", "*.log"))
	for _, l := range logs {
		startdLog += mustRead(t, l)
	}
	if !strings.Contains(startdLog, "startd cron job failed") || !strings.Contains(startdLog, "no such mount") {
		t.Errorf("the startd log does not report the failing cron job (%d logs, %d bytes)", len(logs), len(startdLog))
	}
}

// gpuProbe is a job that reports the GPUs it sees (device nodes, their
// variables, a read of each), waits for a file named go, and says done.
const gpuProbe = `#!/bin/sh
echo "devs $(ls /dev | grep harrier-pool-gpu | tr '\n' ' ')"
echo "cuda $CUDA_VISIBLE_DEVICES"
echo "assigned $_CONDOR_AssignedGPUs"
for d in /dev/harrier-pool-gpu-*; do echo "read $(basename $d) $(head -c 4 $d | wc -c)"; done
while [ ! -e go ]; do sleep 0.1; done
echo done
`

// fakeGPUs makes two fake GPU device nodes (reading as /dev/zero) and
// returns the GPU id of each node's name and the configuration that
// gives the machine both.
func fakeGPUs(t *testing.T) (map[string]string, string) {
	var devs []string
	for i := range 2 {
		p := fmt.Sprintf("/dev/harrier-pool-gpu-%d-%d", os.Getpid(), i)
		if err := unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 5))); err != nil {
			t.Fatalf("mknod %s: %v", p, err)
		}
		if err := os.Chmod(p, 0o666); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(p) })
		devs = append(devs, p)
	}
	conf := fmt.Sprintf(`GPU_DISCOVERY = static
GPU_DEVICES = [Id = "GPU-fake0"; DevicePath = "%s"; Capability = 8.0; GlobalMemoryMb = 16384; DeviceName = "Harrier Fake"], [Id = "GPU-fake1"; DevicePath = "%s"; Capability = 8.0; GlobalMemoryMb = 16384; DeviceName = "Harrier Fake"]
`, devs[0], devs[1])
	return map[string]string{filepath.Base(devs[0]): "GPU-fake0", filepath.Base(devs[1]): "GPU-fake1"}, conf
}

// ownGPU reads what a gpuProbe job reported in out and checks it saw one
// device, and the variables named it; it returns the device's GPU id.
func ownGPU(t *testing.T, idOf map[string]string, what, out string) string {
	t.Helper()
	text := mustRead(t, out)
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		k, v, _ := strings.Cut(l, " ")
		got[k] = strings.TrimSpace(v)
	}
	id := idOf[got["devs"]]
	if id == "" || got["cuda"] != id || got["assigned"] != id || got["read"] != got["devs"]+" 4" || got["done"] != "" {
		t.Errorf("%s saw devices %q, CUDA_VISIBLE_DEVICES %q, _CONDOR_AssignedGPUs %q, read %q; want one device, its own:\n%s",
			what, got["devs"], got["cuda"], got["assigned"], got["read"], text)
	}
	return id
}

// TestGPUsInPartitionableSlot: a partitionable slot holding two fake GPUs
// carves one for each of two users' 1-GPU jobs, which run at once, each
// seeing only its own device; a third 1-GPU job waits, though CPUs are
// left, until a GPU is free again.
func TestGPUsInPartitionableSlot(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skipf("containers not available: %v", err)
	}
	needRoot(t)
	idOf, gpuConf := fakeGPUs(t)
	bin := publicBinary(t)
	p := &hostile{testPool: startPoolFrom(t, bin, 1, partitionableConf+"SANDBOX = container\n"+gpuConf), bin: bin}
	alice, bob := newUser(t), newUser(t)
	dirs := map[string]string{}
	for _, u := range []*user.User{alice, bob} {
		dir := filepath.Join(u.HomeDir, "gpujob")
		writeFile(t, filepath.Join(dir, "probe.sh"), gpuProbe, 0o755)
		chownTo(t, u, dir)
		dirs[u.Username] = dir
	}
	job := func(u, name string) string {
		t.Helper()
		path := filepath.Join(dirs[u], name+".sub")
		writeFile(t, path, "executable = probe.sh\nrequest_gpus = 1\nrequest_memory = 256\noutput = "+name+".out\nqueue\n", 0o644)
		out, code := p.tool(t, u, "submit", path)
		return fmt.Sprintf("%d.0", submitted(t, out, code))
	}
	a, b := job(alice.Username, "first"), job(bob.Username, "first")
	eventually(t, 90*time.Second, "both GPU jobs to run", func() bool {
		return p.jobStatus(t, a) == 2 && p.jobStatus(t, b) == 2
	})
	third := job(alice.Username, "third")
	// Several negotiation cycles (NEGOTIATOR_INTERVAL = 2) find no GPU.
	time.Sleep(8 * time.Second)
	if st := p.jobStatus(t, third); st != 1 {
		t.Errorf("a third GPU job, with both GPUs taken, has JobStatus %d; want 1 (idle)", st)
	}
	var assigned []string
	for _, j := range []struct{ id, user string }{{a, alice.Username}, {b, bob.Username}} {
		writeFile(t, filepath.Join(dirs[j.user], "go"), "", 0o644)
		if out, code := p.tool(t, j.user, "wait", "--timeout", "90", j.id); code != 0 {
			t.Fatalf("wait for %s: exit %d: %s", j.id, code, out)
		}
		assigned = append(assigned, ownGPU(t, idOf, j.user+"'s job "+j.id, filepath.Join(dirs[j.user], "first.out")))
	}
	if slices.Sort(assigned); !slices.Equal(assigned, []string{"GPU-fake0", "GPU-fake1"}) {
		t.Errorf("the jobs ran on %v, want one GPU each", assigned)
	}
	if out, code := p.tool(t, alice.Username, "wait", "--timeout", "90", third); code != 0 {
		t.Fatalf("the third job did not run once a GPU was free: exit %d: %s", code, out)
	}
	ownGPU(t, idOf, "the third job", filepath.Join(dirs[alice.Username], "third.out"))
}
