package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"
)

// writeInput makes the file the counting job reads a line of per count.
func writeInput(t testing.TB, dir string) {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= 10000; i++ {
		fmt.Fprintf(&b, "line%d\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "input.txt"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkReads fails unless every count read the input line of its number.
func checkReads(t testing.TB, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if want := fmt.Sprintf("%d line%d", i+1, i+1); l != want {
			t.Fatalf("reads.txt line %d: %q, want %q", i+1, l, want)
		}
	}
}

// transfer packs the image in dir and unpacks it into a new directory,
// as on its way to the shadow and on to the next machine.
func transfer(t testing.TB, dir string) (string, *Manifest) {
	t.Helper()
	var buf bytes.Buffer
	if _, err := Pack(&buf, dir, testSeal); err != nil {
		t.Fatal(err)
	}
	out := dir + ".received"
	m, err := Unpack(&buf, out, testSeal)
	if err != nil {
		t.Fatal(err)
	}
	return out, m
}

func findInput(inputs []Input, path string) (Input, bool) {
	for _, in := range inputs {
		if in.Path == path {
			return in, true
		}
	}
	return Input{}, false
}

// TestDumpRestore checkpoints a counting job, sends its image through
// Pack and Unpack and restores it: the count goes on with no gap and the
// job reads on from where it was in its input.
//
// With LoopbackOnly the network namespace stays out of the image, and
// the restored job finds its loopback up all the same.
func TestDumpRestore(t *testing.T) {
	needCRIU(t)
	t.Run("netns", func(t *testing.T) { testDumpRestore(t, false) })
	t.Run("loopback-only", func(t *testing.T) { testDumpRestore(t, true) })
}

func testDumpRestore(t *testing.T, loopbackOnly bool) {
	ctx := context.Background()
	tmp, root, jobDir := jobDirs(t)
	writeInput(t, jobDir)
	id := fmt.Sprintf("ckpt-plain-%v", loopbackOnly)
	cfg := containerConfig(t, id, jobDir, 256<<20)
	// The job notes the state of its loopback interface as it counts.
	args := []string{"sh", "-c", strings.Replace(countScript, "sleep 0.1;", "ip -o link show lo >/job/lo.tmp && mv /job/lo.tmp /job/lo.txt; sleep 0.1;", 1)}
	j := startJob(t, root, id, cfg, args, nil)
	countsFile := filepath.Join(jobDir, "counts.txt")
	waitCount(t, countsFile, 5)

	img := filepath.Join(tmp, "img")
	res, err := Dump(ctx, j.c, DumpOptions{ImageDir: img, LoopbackOnly: loopbackOnly})
	if err != nil {
		j.stop(t)
		t.Fatal(err)
	}
	j.gone(t)
	before := counts(t, countsFile)
	if res.Stats.Frozen <= 0 || res.Stats.PagesWritten == 0 {
		t.Errorf("dump statistics %+v", res.Stats)
	}
	in, ok := findInput(res.Inputs, "/job/input.txt")
	if !ok || in.Size != 88894 {
		t.Errorf("inputs %+v: want /job/input.txt of 88894 bytes", res.Inputs)
	}
	if _, ok := findInput(res.Inputs, "/job/counts.txt"); ok {
		t.Errorf("inputs %+v hold a file open for appending", res.Inputs)
	}
	fi, err := os.Stat(img)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("image directory %v %v, want mode 0700", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(img)
	for _, e := range entries {
		if fi, err := e.Info(); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("image file %s: mode %v %v, want 0600", e.Name(), fi.Mode(), err)
		}
	}

	if info, err := ReadInfo(img); err != nil || info.Stats != res.Stats || len(info.Inputs) != len(res.Inputs) {
		t.Errorf("ReadInfo: %+v %v, want the dump's result", info, err)
	}
	received, m := transfer(t, img)
	if m.Info == nil || m.Info.Stats != res.Stats {
		t.Errorf("manifest info %+v, want the dump's result", m.Info)
	}
	os.Remove(filepath.Join(jobDir, "lo.txt"))
	p, out := newProcess(args, nil)
	c, rres, err := Restore(ctx, RestoreOptions{Root: root, ID: id, Config: cfg, Process: p, ImageDir: received})
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	r := &job{c: c, p: p, out: out}
	defer r.stop(t)
	if rres.Stats.Restore <= 0 {
		t.Errorf("restore statistics %+v", rres.Stats)
	}
	after := waitCount(t, countsFile, len(before)+5)
	checkUnbroken(t, after)
	checkReads(t, filepath.Join(jobDir, "reads.txt"))
	if lo, err := os.ReadFile(filepath.Join(jobDir, "lo.txt")); err != nil || !strings.Contains(string(lo), ",UP") {
		t.Errorf("loopback after the restore: %q %v", lo, err)
	}
	if err := r.c.Signal(syscall.SIGKILL); err != nil {
		t.Errorf("signal the restored container: %v", err)
	}
}

// TestFUSERestore checkpoints a job whose working directory is a FUSE
// mount served outside the container, replaces the server by a new
// process at another path, and restores onto it.
func TestFUSERestore(t *testing.T) {
	needCRIU(t)
	ctx := context.Background()
	tmp := t.TempDir()
	root, backing := filepath.Join(tmp, "state"), filepath.Join(tmp, "backing")
	if err := os.Mkdir(backing, 0o755); err != nil {
		t.Fatal(err)
	}
	writeInput(t, backing)
	srv := startFUSE(t, backing, filepath.Join(tmp, "mnt1"))
	cfg := containerConfig(t, "ckpt-fuse", srv.mnt, 256<<20)
	args := []string{"sh", "-c", countScript}
	j := startJob(t, root, "ckpt-fuse", cfg, args, nil)
	countsFile := filepath.Join(backing, "counts.txt")
	waitCount(t, countsFile, 5)

	img := filepath.Join(tmp, "img")
	res, err := Dump(ctx, j.c, DumpOptions{ImageDir: img, Timeout: 30 * time.Second, AbortFUSE: []string{srv.mnt}})
	if err != nil {
		j.stop(t)
		t.Fatal(err)
	}
	j.gone(t) // before the server goes: the job's last close reaches it
	srv.stop()
	before := counts(t, countsFile)
	if _, ok := findInput(res.Inputs, "/job/input.txt"); !ok {
		t.Errorf("inputs %+v lack /job/input.txt", res.Inputs)
	}
	received, _ := transfer(t, img)

	// A bare directory where the FUSE mount should be is refused.
	bare := filepath.Join(tmp, "bare")
	os.Mkdir(bare, 0o755)
	bareCfg := containerConfig(t, "ckpt-fuse", bare, 256<<20)
	p, _ := newProcess(args, nil)
	_, _, err = Restore(ctx, RestoreOptions{Root: root, ID: "ckpt-fuse", Config: bareCfg, Process: p,
		ImageDir: received, FUSE: []string{bare}})
	if !errors.Is(err, ErrNotFUSE) {
		t.Fatalf("restore onto a bare directory: %v, want ErrNotFUSE", err)
	}

	srv2 := startFUSE(t, backing, filepath.Join(tmp, "mnt2"))
	cfg2 := containerConfig(t, "ckpt-fuse", srv2.mnt, 256<<20)
	p, out := newProcess(args, nil)
	c, _, err := Restore(ctx, RestoreOptions{Root: root, ID: "ckpt-fuse", Config: cfg2, Process: p,
		ImageDir: received, FUSE: []string{srv2.mnt}})
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	r := &job{c: c, p: p, out: out}
	after := waitCount(t, countsFile, len(before)+5)
	r.stop(t)
	checkUnbroken(t, after)
	checkReads(t, filepath.Join(backing, "reads.txt"))
}

// TestWatchdog stops the FUSE server during a dump: the watchdog kills
// CRIU at the deadline, the job is thawed and counts on once the server
// answers again.
func TestWatchdog(t *testing.T) {
	needCRIU(t)
	ctx := context.Background()
	tmp := t.TempDir()
	root, backing := filepath.Join(tmp, "state"), filepath.Join(tmp, "backing")
	if err := os.Mkdir(backing, 0o755); err != nil {
		t.Fatal(err)
	}
	writeInput(t, backing)
	srv := startFUSE(t, backing, filepath.Join(tmp, "mnt"))
	cfg := containerConfig(t, "ckpt-stuck", srv.mnt, 256<<20)
	j := startJob(t, root, "ckpt-stuck", cfg, []string{"sh", "-c", countScript}, nil)
	defer j.stop(t)
	countsFile := filepath.Join(backing, "counts.txt")
	waitCount(t, countsFile, 3)

	if err := srv.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	_, err := Dump(ctx, j.c, DumpOptions{ImageDir: filepath.Join(tmp, "img"), Timeout: 2 * time.Second})
	if !errors.Is(err, ErrTimeout) {
		t.Errorf("dump with a stopped FUSE server: %v, want ErrTimeout", err)
	}
	if err := srv.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// Status waits for the container's lock, which CRIU holds until it
	// has exited (it may wait for the server to close its files).
	st, err := j.c.Status()
	if err != nil || st != libcontainer.Running {
		t.Fatalf("container after the aborted dump: %v %v, want running", st, err)
	}
	n := len(counts(t, countsFile))
	checkUnbroken(t, waitCount(t, countsFile, n+5))
}

// TestWatchdogAbortFUSE lets the watchdog abort the FUSE connection: a
// dump against a stopped server then ends without the server's help, and
// the job (whose working directory is now dead) still runs.
func TestWatchdogAbortFUSE(t *testing.T) {
	needCRIU(t)
	ctx := context.Background()
	tmp := t.TempDir()
	root, backing := filepath.Join(tmp, "state"), filepath.Join(tmp, "backing")
	if err := os.Mkdir(backing, 0o755); err != nil {
		t.Fatal(err)
	}
	writeInput(t, backing)
	srv := startFUSE(t, backing, filepath.Join(tmp, "mnt"))
	cfg := containerConfig(t, "ckpt-abort", srv.mnt, 256<<20)
	j := startJob(t, root, "ckpt-abort", cfg, []string{"sh", "-c", countScript}, nil)
	waitCount(t, filepath.Join(backing, "counts.txt"), 3)

	if err := srv.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	_, err := Dump(ctx, j.c, DumpOptions{ImageDir: filepath.Join(tmp, "img"), Timeout: 2 * time.Second,
		Grace: time.Second, AbortFUSE: []string{srv.mnt}})
	if !errors.Is(err, ErrTimeout) || errors.Is(err, ErrStuck) {
		t.Errorf("dump with a stopped FUSE server: %v, want ErrTimeout and CRIU gone", err)
	}
	status := make(chan libcontainer.Status, 1)
	go func() {
		st, _ := j.c.Status()
		status <- st
	}()
	select {
	case st := <-status:
		if st != libcontainer.Running {
			t.Errorf("container after the aborted dump: %v, want running", st)
		}
	case <-time.After(30 * time.Second): // a guard against a hang, not a measurement
		t.Error("the container stays locked: CRIU did not exit")
	}
	_ = srv.cmd.Process.Signal(syscall.SIGCONT)
	j.stop(t)
}

// TestResumeFromLastCheckpoint takes a checkpoint of a running job
// (it goes on counting), kills the job as a crash would and restores the
// checkpoint: the job counts on from the checkpoint's number, so the
// lines it wrote after the checkpoint are written again.
func TestResumeFromLastCheckpoint(t *testing.T) {
	needCRIU(t)
	ctx := context.Background()
	tmp, root, jobDir := jobDirs(t)
	writeInput(t, jobDir)
	cfg := containerConfig(t, "ckpt-periodic", jobDir, 256<<20)
	args := []string{"sh", "-c", countScript}
	j := startJob(t, root, "ckpt-periodic", cfg, args, nil)
	countsFile := filepath.Join(jobDir, "counts.txt")
	atDump := len(waitCount(t, countsFile, 3))
	img := filepath.Join(tmp, "img")
	// The count seen while the dump has the job frozen is the image's.
	var frozen [][]int
	info, err := Dump(WithFrozen(ctx, func() { frozen = append(frozen, counts(t, countsFile)) }), j.c,
		DumpOptions{ImageDir: img, LeaveRunning: true})
	if err != nil {
		j.stop(t)
		t.Fatal(err)
	}
	if len(frozen) != 1 || len(frozen[0]) < atDump {
		t.Fatalf("the dump called its frozen hook %d times, seeing %v; want once, after count %d", len(frozen), frozen, atDump)
	}
	waitCount(t, countsFile, atDump+5) // it runs on
	j.stop(t)
	crashed := len(counts(t, countsFile))

	p, out := newProcess(args, nil)
	c, _, err := Restore(ctx, RestoreOptions{Root: root, ID: "ckpt-periodic", Config: cfg, Process: p, ImageDir: img})
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	r := &job{c: c, p: p, out: out}
	all := waitCount(t, countsFile, crashed+5)
	r.stop(t)
	checkUnbroken(t, all[:crashed])
	resumed := all[crashed:]
	k := resumed[0] - 1 // the count at the checkpoint
	if k < atDump || k >= crashed {
		t.Fatalf("resumed at %d; the checkpoint was taken between counts %d and %d", resumed[0], atDump, crashed)
	}
	if seen := frozen[0]; k != seen[len(seen)-1] {
		t.Errorf("resumed after %d; the job was frozen for the dump after %d", k, seen[len(seen)-1])
	}
	for i, v := range resumed {
		if v != k+1+i {
			t.Fatalf("after the restore: %v", resumed)
		}
	}

	// The input the job reads grows: the check says so, and CRIU would
	// indeed refuse the image.
	resolve := func(p string) (string, bool) {
		rel, ok := strings.CutPrefix(p, "/job/")
		return filepath.Join(jobDir, rel), ok
	}
	if err := CheckInputs(info.Inputs, resolve); err != nil {
		t.Fatalf("inputs before the change: %v", err)
	}
	f, err := os.OpenFile(filepath.Join(jobDir, "input.txt"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("one more line\n")
	f.Close()
	var ie *InputsError
	if err := CheckInputs(info.Inputs, resolve); !errors.As(err, &ie) || len(ie.Changed) != 1 || ie.Changed[0].Path != "/job/input.txt" {
		t.Fatalf("inputs after the change: %v", err)
	}
	p, _ = newProcess(args, nil)
	if _, _, err := Restore(ctx, RestoreOptions{Root: root, ID: "ckpt-periodic", Config: cfg, Process: p, ImageDir: img,
		WorkDir: img + ".restore2"}); err == nil {
		t.Fatal("CRIU restored a job whose input changed")
	}
	if _, err := libcontainer.Load(root, "ckpt-periodic"); err == nil {
		t.Error("a failed restore left its container")
	}
}

// TestRestoreLeavesHostMounts restores a job whose container binds a
// host directory holding a shared mount with a mount below it, as /run
// holds /run/netns and the network namespaces "ip netns" names there.
// The host's mounts are all there after the restore: libcontainer's
// preparation of CRIU's root binds that directory recursively and
// unmounts it again, and that unmount must not propagate to the host.
func TestRestoreLeavesHostMounts(t *testing.T) {
	needCRIU(t)
	ctx := context.Background()
	tmp := t.TempDir()
	root, jobDir, hostDir := filepath.Join(tmp, "state"), filepath.Join(tmp, "job"), filepath.Join(tmp, "host")
	shared, below := filepath.Join(hostDir, "ns"), filepath.Join(hostDir, "ns", "a")
	for _, d := range []string{jobDir, below} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(jobDir, jobUser, jobUser); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(shared, shared, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(shared, unix.MNT_DETACH) })
	if err := unix.Mount("", shared, "", unix.MS_SHARED, ""); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", below, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(below, unix.MNT_DETACH) })
	isTmpfs := func() bool {
		var st unix.Statfs_t
		return unix.Statfs(below, &st) == nil && st.Type == unix.TMPFS_MAGIC
	}

	writeInput(t, jobDir)
	id := "ckpt-host-mounts"
	cfg := containerConfig(t, id, jobDir, 256<<20)
	if err := os.MkdirAll(filepath.Join(testRootfs, "host"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Not recursive, as the sandbox binds the host's directories: the
	// job does not see the shared mount.
	cfg.Mounts = append(cfg.Mounts, &configs.Mount{Source: hostDir, Destination: "/host", Device: "bind",
		Flags: unix.MS_BIND | unix.MS_RDONLY})
	j := startJob(t, root, id, cfg, []string{"sh", "-c", countScript}, nil)
	countsFile := filepath.Join(jobDir, "counts.txt")
	waitCount(t, countsFile, 3)
	img := filepath.Join(tmp, "img")
	if _, err := Dump(ctx, j.c, DumpOptions{ImageDir: img, LoopbackOnly: true}); err != nil {
		j.stop(t)
		t.Fatal(err)
	}
	j.gone(t)
	before := counts(t, countsFile)
	if !isTmpfs() {
		t.Fatal("the host's mount is gone after the dump")
	}
	p, out := newProcess([]string{"sh", "-c", countScript}, nil)
	c, _, err := Restore(ctx, RestoreOptions{Root: root, ID: id, Config: cfg, Process: p, ImageDir: img})
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	r := &job{c: c, p: p, out: out}
	defer r.stop(t)
	checkUnbroken(t, waitCount(t, countsFile, len(before)+3))
	if !isTmpfs() {
		t.Errorf("the restore unmounted the host's %s", below)
	}
	// Nor does the restore leave mounts of its own on the host.
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(mi), "\n") {
		if f := strings.Fields(l); len(f) > 4 && strings.HasPrefix(f[4], tmp) && f[4] != shared && f[4] != below {
			t.Errorf("mount left on the host: %s", f[4])
		}
	}
}

// TestDumpPreCopy checkpoints a counting job with DumpPreCopy and the
// machine's real features, then restores it from the image sent through
// Pack and Unpack. Without dirty-memory tracking (our machines) it must
// be one full dump, exactly as Dump: no pre-dumps, no parent link, no
// staging directory. With it, the pre-dumps travel inside the image.
func TestDumpPreCopy(t *testing.T) {
	needCRIU(t)
	ctx := context.Background()
	f, err := Probe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pre-copy supported: %v", f.PreCopy)
	tmp, root, jobDir := jobDirs(t)
	writeInput(t, jobDir)
	id := "ckpt-precopy"
	cfg := containerConfig(t, id, jobDir, 256<<20)
	args := []string{"sh", "-c", countScript}
	j := startJob(t, root, id, cfg, args, nil)
	countsFile := filepath.Join(jobDir, "counts.txt")
	waitCount(t, countsFile, 5)

	img := filepath.Join(tmp, "img")
	res, err := DumpPreCopy(ctx, j.c, f, DumpOptions{ImageDir: img, LoopbackOnly: true})
	if err != nil {
		j.stop(t)
		t.Fatal(err)
	}
	j.gone(t)
	before := counts(t, countsFile)
	if _, err := os.Lstat(img + ".pre"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the staging directory %s.pre is left: %v", img, err)
	}
	link, lerr := os.Readlink(filepath.Join(img, "parent"))
	if f.PreCopy {
		want := preDumpName(len(res.PreDumps))
		if len(res.PreDumps) == 0 || len(res.PreDumps) > MaxPreDumps || lerr != nil || link != want {
			t.Errorf("pre-copy: %d pre-dumps, parent link %q %v; want 1 to %d, %q", len(res.PreDumps), link, lerr, MaxPreDumps, want)
		}
	} else {
		entries, _ := os.ReadDir(img)
		for _, e := range entries {
			if !e.Type().IsRegular() {
				t.Errorf("a full dump holds %s (%v)", e.Name(), e.Type())
			}
		}
		if len(res.PreDumps) != 0 {
			t.Errorf("no pre-copy here, yet %d pre-dumps", len(res.PreDumps))
		}
	}
	if info, err := ReadInfo(img); err != nil || len(info.PreDumps) != len(res.PreDumps) {
		t.Errorf("ReadInfo: %+v %v, want the dump's result", info, err)
	}
	received, _ := transfer(t, img)
	p, out := newProcess(args, nil)
	c, _, err := Restore(ctx, RestoreOptions{Root: root, ID: id, Config: cfg, Process: p, ImageDir: received})
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	r := &job{c: c, p: p, out: out}
	defer r.stop(t)
	checkUnbroken(t, waitCount(t, countsFile, len(before)+5))
	checkReads(t, filepath.Join(jobDir, "reads.txt"))
}

// TestDumpForkingJob checkpoints a job that starts programs all the time,
// as a shell script does. The shell vforks each one, and a process
// waiting for its vforked child to exec cannot be seized: a dump that
// freezes the job in that window must not fail.
func TestDumpForkingJob(t *testing.T) {
	needCRIU(t)
	tmp, root, jobDir := jobDirs(t)
	cfg := containerConfig(t, "ckpt-forking", jobDir, 64<<20)
	j := startJob(t, root, "ckpt-forking", cfg, []string{"sh", "-c", "echo 1 >/job/counts.txt; while :; do /bin/true; done"}, nil)
	defer j.stop(t)
	// Not before the job runs: until its init has exec'd the shell, the
	// process is the runtime's, with the host's files mapped.
	waitCount(t, filepath.Join(jobDir, "counts.txt"), 0)
	for i := range 8 {
		start := time.Now()
		_, err := Dump(context.Background(), j.c, DumpOptions{
			ImageDir: filepath.Join(tmp, fmt.Sprintf("img%d", i)), LeaveRunning: true, LoopbackOnly: true})
		if err != nil {
			t.Fatalf("dump %d (after %v): %v", i, time.Since(start), err)
		}
		t.Logf("dump %d: %v", i, time.Since(start))
	}
}

// TestDumpGivesUpOnVfork: a job that stays in a vfork cannot be
// checkpointed. Dump gives up once it has waited long enough, with
// ErrVfork, instead of leaving the job frozen through CRIU's 10 s
// timeout, and the job goes on running.
func TestDumpGivesUpOnVfork(t *testing.T) {
	needCRIU(t)
	tmp, root, jobDir := jobDirs(t)
	cfg := memJobConfig(t, "ckpt-vfork", jobDir, 0)
	j := startJob(t, root, "ckpt-vfork", cfg, []string{"/harrier-ckpt-test"}, []string{roleEnv + "=vforkjob"})
	defer j.stop(t)
	waitOutput(t, j.out, 0)
	for end := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		pid, _, err := unseizable(j.c)
		if err != nil {
			t.Fatal(err)
		}
		if pid != 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the job does not vfork: %q", j.out.String())
		}
	}
	start := time.Now()
	_, err := Dump(context.Background(), j.c, DumpOptions{ImageDir: filepath.Join(tmp, "img"), LeaveRunning: true})
	if !errors.Is(err, ErrVfork) {
		t.Fatalf("dump of a job in a vfork: %v, want ErrVfork", err)
	}
	t.Logf("gave up after %v: %v", time.Since(start), err)
	if st, err := j.c.Status(); err != nil || st != libcontainer.Running {
		t.Errorf("the job after the dump: %v %v, want running", st, err)
	}
}

// tcpJob serves on 127.0.0.1:5000 in a thread and talks to itself over
// one connection: it sends a count, reads it back and appends it to
// /job/counts.txt, so that the count goes on only while the connection
// does.
const tcpJob = `
import socket, threading, time
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 5000))
srv.listen()
def echo(c):
    f = c.makefile("rb", buffering=0)
    for line in f:
        c.sendall(line)
def serve():
    while True:
        threading.Thread(target=echo, args=(srv.accept()[0],), daemon=True).start()
threading.Thread(target=serve, daemon=True).start()
cl = socket.create_connection(("127.0.0.1", 5000))
replies = cl.makefile("rb", buffering=0)
i = 0
while True:
    i += 1
    cl.sendall(b"%d\n" % i)
    r = replies.readline()
    with open("/job/counts.txt", "ab") as out:
        out.write(r)
    time.sleep(0.1)
`

// udpJob sends a count to itself over a connected UDP socket on
// 127.0.0.1 and appends what it receives to /job/counts.txt.
const udpJob = `
import socket, time
srv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
srv.bind(("127.0.0.1", 5000))
cl = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
cl.connect(("127.0.0.1", 5000))
i = 0
while True:
    i += 1
    cl.send(b"%d\n" % i)
    r = srv.recv(64)
    with open("/job/counts.txt", "ab") as out:
        out.write(r)
    time.sleep(0.1)
`

// TestDumpRestoreInetSockets checkpoints a job holding internet sockets
// on its loopback and restores it: a listening TCP socket and both ends
// of an established connection, or two UDP sockets, one connected to the
// other. The count goes on only while they do. Asked to leave the
// network namespace out (LoopbackOnly), Dump keeps it in, as CRIU binds
// the sockets to their addresses as it restores them.
func TestDumpRestoreInetSockets(t *testing.T) {
	for _, tc := range []struct{ name, job string }{{"tcp", tcpJob}, {"udp", udpJob}} {
		t.Run(tc.name, func(t *testing.T) {
			id := "ckpt-" + tc.name
			tmp, root, jobDir, cfg := pythonJob(t, id)
			args := []string{"python3", "-c", tc.job}
			j := startJob(t, root, id, cfg, args, nil)
			countsFile := filepath.Join(jobDir, "counts.txt")
			waitCount(t, countsFile, 3)
			res, r, before := migrate(t, j, tmp, root, id, cfg, args, DumpOptions{LoopbackOnly: true}, countsFile)
			if res.LoopbackOnly {
				t.Error("the image of a job holding internet sockets leaves its network namespace out")
			}
			checkUnbroken(t, waitCount(t, countsFile, len(before)+5))
			if s := r.out.String(); s != "" {
				t.Errorf("the job's output: %s", s)
			}
		})
	}
}

// TestDumpRestoreStopped checkpoints a job with a stopped child, first
// leaving it running, then to restore it: the dumps finish (CRIU cannot
// seize a stopped process in a frozen cgroup), and the child is stopped
// again where the job goes on, after each.
func TestDumpRestoreStopped(t *testing.T) {
	ctx := context.Background()
	id := "ckpt-stopped"
	tmp, root, jobDir, cfg := pythonJob(t, id)
	args := []string{"python3", "-c", `import os, signal, time
child = os.fork()
if child == 0:
    while True:
        time.sleep(0.01)
os.kill(child, signal.SIGSTOP)
with open("/job/child.pid", "w") as f:
    f.write("%d" % child)
i = 0
while True:
    i += 1
    with open("/job/counts.txt", "a") as f:
        f.write("%d\n" % i)
    time.sleep(0.1)
`}
	j := startJob(t, root, id, cfg, args, nil)
	countsFile := filepath.Join(jobDir, "counts.txt")
	waitCount(t, countsFile, 3)
	b, err := os.ReadFile(filepath.Join(jobDir, "child.pid"))
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatal(err)
	}
	// childState is the state of the job's child in c.
	childState := func(c *libcontainer.Container) byte {
		t.Helper()
		pids, err := c.Processes()
		if err != nil {
			t.Fatal(err)
		}
		for _, pid := range pids {
			if st, ns, err := processState(pid); err == nil && ns == child {
				return st
			}
		}
		t.Fatalf("no process %d in the job", child)
		return 0
	}
	if st := childState(j.c); st != 'T' {
		t.Fatalf("the child is in state %c before the dump", st)
	}
	// Stuck, the dump would take its whole timeout.
	opts := DumpOptions{ImageDir: filepath.Join(tmp, "periodic"), LeaveRunning: true, LoopbackOnly: true, Timeout: 20 * time.Second}
	if _, err := Dump(ctx, j.c, opts); err != nil {
		j.stop(t)
		t.Fatal(err)
	}
	// The stop is a signal: it takes the child a moment to stop.
	for end := time.Now().Add(10 * time.Second); childState(j.c) != 'T'; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("after a checkpoint that left it running, the child is in state %c", childState(j.c))
		}
	}
	res, r, before := migrate(t, j, tmp, root, id, cfg, args, DumpOptions{LoopbackOnly: true, Timeout: 20 * time.Second}, countsFile)
	if !slices.Equal(res.Stopped, []int{child}) {
		t.Errorf("the image records the stopped processes %v, want [%d]", res.Stopped, child)
	}
	checkUnbroken(t, waitCount(t, countsFile, len(before)+3))
	if st := childState(r.c); st != 'T' {
		t.Errorf("after the restore, the child is in state %c", st)
	}
}

// TestDumpRestoreRemovedFile checkpoints a job holding open a file it
// removed from its own directory (a temporary file beside its data) and
// restores it: the file travels in the image (within CRIU's default
// limit: the sandbox raises it), is no input a restore looks for, and
// comes back whole, and nameless.
func TestDumpRestoreRemovedFile(t *testing.T) {
	id := "ckpt-removed"
	tmp, root, jobDir, cfg := pythonJob(t, id)
	args := []string{"python3", "-c", `import hashlib, os, time
f = open("/job/scratch.tmp", "w+b")
data = os.urandom(512 << 10)
f.write(data)
f.flush()
os.unlink("/job/scratch.tmp")
want = hashlib.sha256(data).digest()
i = 0
while True:
    i += 1
    f.seek(0)
    if hashlib.sha256(f.read()).digest() != want:
        print("the removed file changed", flush=True)
    with open("/job/counts.txt", "a") as out:
        out.write("%d\n" % i)
    time.sleep(0.1)
`}
	j := startJob(t, root, id, cfg, args, nil)
	countsFile := filepath.Join(jobDir, "counts.txt")
	waitCount(t, countsFile, 3)
	res, r, before := migrate(t, j, tmp, root, id, cfg, args, DumpOptions{LoopbackOnly: true}, countsFile)
	if in, ok := findInput(res.Inputs, "/job/scratch.tmp"); ok {
		t.Errorf("the removed file is an input a restore looks for: %+v", in)
	}
	checkUnbroken(t, waitCount(t, countsFile, len(before)+3))
	if s := r.out.String(); s != "" {
		t.Errorf("the job's output: %s", s)
	}
	if _, err := os.Stat(filepath.Join(jobDir, "scratch.tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the removed file has a name again after the restore: %v", err)
	}
}

// TestDumpRestoreTimerfd checkpoints a job waiting on a periodic timerfd
// whose period passed while the job slept (a tick pending, the timer not
// yet moved on) and restores it: the timer goes on ticking (CRIU as
// scripts/setup patches it; a plain one disarms it, and the job blocks
// for ever on its next read).
func TestDumpRestoreTimerfd(t *testing.T) {
	id := "ckpt-timerfd"
	tmp, root, jobDir, cfg := pythonJob(t, id)
	args := []string{"python3", "-c", `import ctypes, os, struct, time
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.timerfd_create(1, 0)  # CLOCK_MONOTONIC
assert fd >= 0
# every 20 ms from 20 ms on
assert libc.timerfd_settime(fd, 0, struct.pack("qqqq", 0, 20000000, 0, 20000000), None) == 0
i = 0
while True:
    os.read(fd, 8)
    i += 1
    with open("/job/counts.txt", "a") as f:
        f.write("%d\n" % i)
    time.sleep(0.3)  # the timer expires meanwhile, unread
`}
	j := startJob(t, root, id, cfg, args, nil)
	countsFile := filepath.Join(jobDir, "counts.txt")
	waitCount(t, countsFile, 2)
	time.Sleep(100 * time.Millisecond) // well past the period after a read
	_, _, before := migrate(t, j, tmp, root, id, cfg, args, DumpOptions{LoopbackOnly: true}, countsFile)
	checkUnbroken(t, waitCount(t, countsFile, len(before)+3))
}

// TestDumpRestoreZombie checkpoints a job holding a child it has not
// reaped, and restores it: CRIU records no threads for a zombie (its
// thread list says 0), and the privilege check must not look for them.
func TestDumpRestoreZombie(t *testing.T) {
	id := "ckpt-zombie"
	tmp, root, jobDir, cfg := pythonJob(t, id)
	args := []string{"python3", "-c", `import os, time
if os.fork() == 0:
    os._exit(3)
i = 0
while True:
    i += 1
    with open("/job/counts.txt", "a") as f:
        f.write("%d\n" % i)
    time.sleep(0.1)
`}
	j := startJob(t, root, id, cfg, args, nil)
	countsFile := filepath.Join(jobDir, "counts.txt")
	waitCount(t, countsFile, 3)
	_, _, before := migrate(t, j, tmp, root, id, cfg, args, DumpOptions{LoopbackOnly: true}, countsFile)
	checkUnbroken(t, waitCount(t, countsFile, len(before)+3))
}
