package transferplugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// demoPlugin is a multiple-file plugin for demo:// URLs written in shell,
// as an administrator would: it "downloads" demo://host/NAME as the text
// "demo NAME", uploads by copying into $DEMO_DIR, and fails on a name
// holding "bad".
const demoPlugin = `#!/bin/sh
if [ "$1" = -classad ]; then
	printf 'MultipleFileSupport = true\nPluginVersion = "1.0"\nPluginType = "FileTransfer"\nSupportedMethods = "demo,Other"\n'
	exit 0
fi
in=$2 out=$4 rc=0
: > "$out"
while read -r name eq value; do
	value=${value#\"}; value=${value%\"}
	case $name in
	Url) url=$value ;;
	LocalFileName) local=$value ;;
	esac
	if [ -n "$url" ] && [ -n "$local" ]; then
		case $url in
		*bad*) printf 'TransferUrl = "%s"\nTransferSuccess = false\nTransferError = "no such demo"\n\n' "$url" >> "$out"; rc=1 ;;
		*) if [ "$5" = -upload ]; then cp "$local" "` + "`dirname $in`" + `/up.${url##*/}"; else echo "demo ${url##*/}" > "$local"; fi
		   printf 'TransferUrl = "%s"\nTransferFileName = "%s"\nTransferSuccess = true\nTransferTotalBytes = 5\n\n' "$url" "${local##*/}" >> "$out" ;;
		esac
		url= local=
	fi
done < "$in"
exit $rc
`

func writePlugin(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "demo_plugin")
	if err := os.WriteFile(p, []byte(demoPlugin), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// scratchDir is a directory for Run, alone in its parent as a job's
// scratch directory is not: Run hides the rest of the parent.
func scratchDir(t testing.TB) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "scratch")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestQuery(t *testing.T) {
	p, err := Query(context.Background(), writePlugin(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !p.MultipleFile || p.Version != "1.0" || strings.Join(p.Methods, ",") != "demo,other" {
		t.Errorf("capabilities %+v", p)
	}
	if got := Advertised(Methods([]Plugin{p})); got != "demo,file,http,https,other" {
		t.Errorf("advertised %q", got)
	}
}

func TestRunDownloads(t *testing.T) {
	plugin, dir := writePlugin(t), scratchDir(t)
	res, err := Run(context.Background(), plugin, dir, nil, false, []File{
		{URL: "demo://h/a.txt", LocalFile: filepath.Join(dir, "a.txt")},
		{URL: "demo://h/b.txt", LocalFile: filepath.Join(dir, "b.txt")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || !res[0].Success || res[1].Bytes != 5 || res[1].FileName != "b.txt" {
		t.Errorf("results %+v", res)
	}
	for _, n := range []string{"a.txt", "b.txt"} {
		if b, _ := os.ReadFile(filepath.Join(dir, n)); string(b) != "demo "+n+"\n" {
			t.Errorf("%s: %q", n, b)
		}
	}
	// The plugin's own files are gone.
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("left in the directory: %v", entries)
	}
}

func TestRunFailureNamesTheURL(t *testing.T) {
	plugin, dir := writePlugin(t), scratchDir(t)
	_, err := Run(context.Background(), plugin, dir, nil, false, []File{
		{URL: "demo://h/ok", LocalFile: filepath.Join(dir, "ok")},
		{URL: "demo://h/bad", LocalFile: filepath.Join(dir, "bad")},
	})
	var fe *FileError
	if !errors.As(err, &fe) || fe.URL != "demo://h/bad" || !strings.Contains(err.Error(), "no such demo") {
		t.Errorf("err %v: want the failed URL and the plugin's reason", err)
	}
}

func TestParseNewSyntaxResults(t *testing.T) {
	ads, err := parseAds(`[ TransferUrl = "x://a]"; TransferSuccess = true ]
[ TransferUrl = "x://b"; TransferSuccess = false; TransferError = "nope" ]`)
	if err != nil || len(ads) != 2 {
		t.Fatalf("%d ads, %v", len(ads), err)
	}
	if u, _ := ads[0].EvalString("TransferUrl"); u != "x://a]" {
		t.Errorf("first URL %q", u)
	}
}

// A plugin writes in its directory and nowhere else, even where its user
// may: the kernel refuses (Landlock).
func TestRunConfinesWrites(t *testing.T) {
	if _, err := landlockABI(); err != nil {
		t.Skipf("no confinement on this kernel: %v", err)
	}
	outside := t.TempDir()
	dir := scratchDir(t)
	got := runScript(t, dir, `#!/bin/sh
local=$(sed -n 's/^LocalFileName = "\(.*\)"$/\1/p' "$2")
if echo x > `+outside+`/escaped 2>/dev/null; then r=written; else r=refused; fi
echo "$r" > "$local"
printf 'TransferUrl = "demo://h/r"\nTransferSuccess = true\n' > "$4"
`)
	if got != "refused\n" {
		t.Errorf("the plugin's write outside its directory: %q, want refused", got)
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped")); !os.IsNotExist(err) {
		t.Errorf("the plugin wrote outside its directory: %v", err)
	}
	// The caller's own threads are not confined.
	if err := os.WriteFile(filepath.Join(outside, "mine"), nil, 0o644); err != nil {
		t.Errorf("the caller cannot write after a plugin ran: %v", err)
	}
}

// TestRunHidesOtherScratchDirectories: a plugin reads the machine's files
// and its own directory, but nothing else of the directory its own is in,
// where the other jobs' scratch directories are, though its user may
// read them: the kernel refuses (Landlock).
func TestRunHidesOtherScratchDirectories(t *testing.T) {
	if _, err := landlockABI(); err != nil {
		t.Skipf("no confinement on this kernel: %v", err)
	}
	execute := t.TempDir()
	dir, other := filepath.Join(execute, "scratch.slot1.A"), filepath.Join(execute, "scratch.slot2.B")
	for _, d := range []string{dir, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(other, "secret"), []byte("another job's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mine"), []byte("its own\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := runScript(t, dir, `#!/bin/sh
local=$(sed -n 's/^LocalFileName = "\(.*\)"$/\1/p' "$2")
{
cat `+other+`/secret 2>/dev/null || echo "secret refused"
ls `+execute+` >/dev/null 2>&1 || echo "listing refused"
cat mine
head -c 4 /etc/passwd >/dev/null && echo "read /etc"
} > "$local"
printf 'TransferUrl = "demo://h/r"\nTransferSuccess = true\n' > "$4"
`)
	if want := "secret refused\nlisting refused\nits own\nread /etc\n"; got != want {
		t.Errorf("the plugin saw %q, want %q", got, want)
	}
}

func readString(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRunCannotSignalOtherJobs: a plugin, run as the slot user, cannot
// signal a process of another job of that same user, which any other
// process of the user may (shown first), by its number or by a
// descriptor of its /proc directory (pidfd_send_signal). Started by
// root, the plugin is in a process namespace of its own, which stops
// both; started by a starter that is not root (a personal pool, run here
// as nobody), it is not, and Landlock's signal scope refuses them.
func TestRunCannotSignalOtherJobs(t *testing.T) {
	if v, err := landlockABI(); err != nil || v < scopeABI {
		t.Skipf("no Landlock signal scoping on this kernel (ABI %d, %v)", v, err)
	}
	cred := nobody(t)
	other := exec.Command("sleep", "100")
	other.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	pid := strconv.Itoa(other.Process.Pid)
	signal := `python3 -c 'import os, signal; signal.pidfd_send_signal(os.open("/proc/` + pid + `", os.O_RDONLY), 0)'`
	probe := exec.Command("sh", "-c", signal+" && kill -0 "+pid)
	probe.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := probe.CombinedOutput(); err != nil {
		t.Fatalf("another process of the user's cannot signal the job's either: %v: %s", err, out)
	}
	// Not beside the scratch directory: Run hides the rest of its parent.
	plugins := publicDir(t)
	plugin := filepath.Join(plugins, "script_plugin")
	if err := os.WriteFile(plugin, []byte(`#!/bin/sh
local=$(sed -n 's/^LocalFileName = "\(.*\)"$/\1/p' "$2")
r=refused
`+signal+` 2>/dev/null && r="signalled through /proc"
kill -0 `+pid+` 2>/dev/null && r="signalled by number"
echo "$r" > "$local"
printf 'TransferUrl = "demo://h/r"\nTransferSuccess = true\n' > "$4"
`), 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	starter := filepath.Join(plugins, "starter")
	if err := os.WriteFile(starter, self, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, byRoot := range []bool{true, false} {
		dir := filepath.Join(publicDir(t), "scratch")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
		if byRoot {
			if _, err := Run(context.Background(), plugin, dir, cred, false, []File{{URL: "demo://h/r", LocalFile: filepath.Join(dir, "r")}}); err != nil {
				t.Fatal(err)
			}
		} else {
			run := exec.Command(starter)
			run.Env = append(os.Environ(), runEnv+"="+plugin+"\n"+dir)
			run.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
			if out, err := run.CombinedOutput(); err != nil {
				t.Fatalf("Run as nobody: %v: %s", err, out)
			}
		}
		if got := readString(t, filepath.Join(dir, "r")); got != "refused\n" {
			t.Errorf("a plugin started by root %v signals another job's process: %q, want refused", byRoot, got)
		}
	}
	if err := other.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the other job's process: %v", err)
	}
}

// runEnv, set to a plugin and a scratch directory separated by a
// newline, has the test binary Run that plugin there for one file, r, as
// a starter that is not root does (TestRunCannotSignalOtherJobs).
const runEnv = "TRANSFERPLUGIN_TEST_RUN"

func TestMain(m *testing.M) {
	if v := os.Getenv(runEnv); v != "" {
		plugin, dir, _ := strings.Cut(v, "\n")
		if _, err := Run(context.Background(), plugin, dir, nil, false, []File{{URL: "demo://h/r", LocalFile: filepath.Join(dir, "r")}}); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// nobody is the credential of the user nobody, as whom tests run what a
// slot user runs; only root can.
func nobody(t *testing.T) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: runs processes as nobody (CI runs as root)")
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// publicDir is a directory that every user reaches, unlike t.TempDir's,
// whose parents are root's alone.
func publicDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "plugin-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// runScript runs the shell script as a plugin in dir for one file, r,
// and returns what it wrote there.
func runScript(t *testing.T, dir, script string) string {
	t.Helper()
	plugin := filepath.Join(t.TempDir(), "script_plugin")
	if err := os.WriteFile(plugin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), plugin, dir, nil, false, []File{{URL: "demo://h/r", LocalFile: filepath.Join(dir, "r")}}); err != nil {
		t.Fatal(err)
	}
	return readString(t, filepath.Join(dir, "r"))
}

// TestRunLeavesNothingRunning: what a plugin starts and leaves behind
// ends with it.
func TestRunLeavesNothingRunning(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only plugins root starts get a process namespace of their own")
	}
	const marker = "4242.5"
	dir := scratchDir(t)
	if got := runScript(t, dir, `#!/bin/sh
local=$(sed -n 's/^LocalFileName = "\(.*\)"$/\1/p' "$2")
setsid sleep `+marker+` </dev/null >/dev/null 2>&1 &
echo left > "$local"
printf 'TransferUrl = "demo://h/r"\nTransferSuccess = true\n' > "$4"
`); got != "left\n" {
		t.Fatalf("the plugin wrote %q", got)
	}
	sleeping := func() bool {
		procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, p := range procs {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), marker) {
				return true
			}
		}
		return false
	}
	for end := time.Now().Add(5 * time.Second); sleeping(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("a process the plugin left behind still runs")
		}
	}
}
