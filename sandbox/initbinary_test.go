package sandbox

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/opencontainers/runc/libcontainer"
	"golang.org/x/sys/unix"
)

// TestInitNamesTheRuncRelease: the installed init's directory names the
// runc release go.mod requires, so that a harrier built with another
// never hands over to it.
func TestInitNamesTheRuncRelease(t *testing.T) {
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*github.com/opencontainers/runc (v\S+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod requires no github.com/opencontainers/runc")
	}
	if string(m[1]) != initRunc() {
		t.Fatalf("go.mod requires runc %s, initbinary.go's HARRIER_INIT_RUNC says %s: change it with the release", m[1], initRunc())
	}
	if !strings.Contains(InitPath(), "runc-"+initRunc()+"/") {
		t.Fatalf("InitPath %s does not name runc %s", InitPath(), initRunc())
	}
}

var (
	buildInitOnce sync.Once
	builtInit     string
	buildInitErr  error
)

// buildInit builds harrier-init from this tree, once per test process, in
// a directory of root's.
func buildInit(t testing.TB) string {
	t.Helper()
	buildInitOnce.Do(func() {
		dir, err := os.MkdirTemp("", "harrier-init-")
		if err != nil {
			buildInitErr = err
			return
		}
		builtInit = filepath.Join(dir, "harrier-init")
		out, err := exec.Command("go", "build", "-o", builtInit, "harrier.dev/harrier/cmd/harrier-init").CombinedOutput()
		if err != nil {
			buildInitErr = errors.New("go build ./cmd/harrier-init: " + err.Error() + "\n" + string(out))
		}
	})
	if buildInitErr != nil {
		t.Fatal(buildInitErr)
	}
	return builtInit
}

// installInit installs the small init built from this tree.
func installInit(t testing.TB) {
	t.Helper()
	if err := InstallInit(buildInit(t)); err != nil {
		t.Fatal(err)
	}
}

// initOf starts a container for task up to its init, before the job's
// program, and returns the init's executable; then it lets the job run
// and checks that it exits 0.
func initOf(t *testing.T, r *Runner, task *Task) string {
	t.Helper()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	task.Stdout, task.Stderr = null, null
	s, cfg, err := r.prepare(context.Background(), task, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := libcontainer.Create(containersDir(r.cfg.StateRoot, r.cfg.Slot), s.id, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	p := r.process(task, s)
	if err := c.Start(p); err != nil {
		t.Fatal(err)
	}
	pid, err := p.Pid()
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		t.Fatal(err)
	}
	if exe == InitPath() {
		// The installed init runs with one processor and no collector.
		env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		if err != nil || !bytes.Contains(env, []byte("\x00GOMAXPROCS=1\x00GOGC=off\x00")) {
			t.Errorf("the installed init's environment: %q %v", env, err)
		}
	}
	if err := c.Exec(); err != nil {
		t.Fatal(err)
	}
	st, err := p.Wait()
	if err != nil || !st.Success() {
		t.Fatalf("job: %v %v", st, err)
	}
	return exe
}

// TestInstalledInitStartsContainers: once InstallInit has run, a
// container's init is the small binary, read-only even to root, and the
// job runs; installing again changes nothing.
func TestInstalledInitStartsContainers(t *testing.T) {
	r := testRunner(t, nil)
	installInit(t)
	installInit(t) // again: nothing to do
	dir := t.TempDir()
	if got := initOf(t, r, &Task{ID: "1.0", Path: "/bin/true", Dir: dir, ScratchDir: dir}); got != InitPath() {
		t.Fatalf("the container's init ran %s, want %s", got, InitPath())
	}
	f, err := os.OpenFile(InitPath(), os.O_WRONLY, 0)
	if err == nil {
		f.Close()
		t.Fatalf("root opened the installed init for writing")
	}
	if !errors.Is(err, unix.EROFS) {
		t.Fatalf("open the installed init for writing: %v, want EROFS", err)
	}
	res := startJob(t, r, &Task{ID: "1.1", Path: "/bin/sh", Args: []string{"-c", "echo in; env"}}).wait(t)
	if res.exit.Code != 0 || !strings.HasPrefix(res.stdout, "in\n") {
		t.Fatalf("job through the installed init: %+v %q %q", res.exit, res.stdout, res.stderr)
	}
	if strings.Contains(res.stdout, "GOMAXPROCS") || strings.Contains(res.stdout, "GOGC") {
		t.Errorf("the init's own settings reached the job's environment:\n%s", res.stdout)
	}
}

// TestInitRefusesWhatRootShouldNotRun: InstallInit takes only harrier-init
// itself, root's and out of other users' reach.
func TestInitRefusesWhatRootShouldNotRun(t *testing.T) {
	needContainers(t)
	src := buildInit(t)
	dir := t.TempDir()
	copyTo := func(name string, mode os.FileMode) string {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, mode); err != nil || os.Chmod(p, mode) != nil {
			t.Fatal(err)
		}
		return p
	}
	nobodyOwned := copyTo("nobody-owned", 0o755)
	if err := os.Chown(nobodyOwned, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	inOpenDir := filepath.Join(open, "harrier-init")
	if b, err := os.ReadFile(src); err != nil || os.WriteFile(inOpenDir, b, 0o755) != nil {
		t.Fatal("copy", err)
	}
	for _, c := range []struct{ path, want string }{
		{"/bin/true", "not a Go binary"},
		{copyTo("group-writable", 0o775), "writable by root alone"},
		{nobodyOwned, "owned by uid 65534"},
		{inOpenDir, "is writable by others"},
		{"relative/harrier-init", "not an absolute path"},
	} {
		err := InstallInit(c.path)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("InstallInit(%s) = %v, want an error saying %q", c.path, err, c.want)
		}
	}
	exe, _ := os.Executable() // a Go binary, but not harrier-init
	if err := InstallInit(exe); err == nil || !strings.Contains(err.Error(), "not harrier.dev/harrier/cmd/harrier-init") {
		t.Errorf("InstallInit(the test binary) = %v", err)
	}
}

// withoutInstalledInit is set for the test binary re-executed in a mount
// namespace of its own, where the installed init is taken away.
const withoutInstalledInit = "HARRIER_SANDBOX_TEST_WITHOUT_INIT"

// TestContainersStartWithoutTheInstalledInit: where no init is installed
// (here, a mount namespace of its own where it is unmounted), a
// container's init is the binary that started it, and the job runs; an
// init of another kind found installed is replaced.
func TestContainersStartWithoutTheInstalledInit(t *testing.T) {
	if os.Getenv(withoutInstalledInit) == "" {
		needContainers(t)
		installInit(t)
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("unshare", "--mount", "--propagation", "private", exe, "-test.run", "^TestContainersStartWithoutTheInstalledInit$", "-test.v")
		cmd.Env = append(os.Environ(), withoutInstalledInit+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS") {
			t.Fatalf("in a mount namespace without the installed init: %v\n%s", err, out)
		}
		return
	}
	if err := unix.Unmount(filepath.Dir(InitPath()), unix.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	r := testRunner(t, nil)
	dir := t.TempDir()
	got := initOf(t, r, &Task{ID: "1.0", Path: "/bin/true", Dir: dir, ScratchDir: dir})
	if got == InitPath() {
		t.Fatalf("the container's init ran %s, which is not there", got)
	}
	t.Logf("init without the installed one: %s", got)

	// Something else installed there, read-only (another build's init,
	// say): InstallInit puts its own in its place.
	initDir := filepath.Dir(InitPath())
	if err := unix.Mount("tmpfs", initDir, "tmpfs", 0, "mode=0755"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile("/bin/true"); err != nil || os.WriteFile(InitPath(), b, 0o755) != nil {
		t.Fatal("plant", err)
	}
	if err := unix.Mount("", initDir, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatal(err)
	}
	installInit(t)
	scratch := t.TempDir()
	if got := initOf(t, r, &Task{ID: "1.1", Path: "/bin/true", Dir: scratch, ScratchDir: scratch}); got != InitPath() {
		t.Fatalf("after installing over another init, the container's init ran %s, want %s", got, InitPath())
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builtInit != "" {
		os.RemoveAll(filepath.Dir(builtInit))
	}
	os.Exit(code)
}
