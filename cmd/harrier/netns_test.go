package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"harrier.dev/harrier/checkpoint"
	"harrier.dev/harrier/pki"
)

// netnsHost is one "machine" of a multi-host test: a network namespace with
// one address on a bridge shared by all hosts.
type netnsHost struct {
	name string // also the startd's machine name
	ns   string
	ip   string
	dir  string
	port string // its end of the link, on the bridge
}

// netnsPool builds hosts in network namespaces joined by a bridge. Every
// address exists only inside the namespaces, which the test removes.
type netnsPool struct {
	t      testing.TB
	hosts  map[string]*netnsHost
	procs  []*exec.Cmd
	prefix string
	// extra is added to every host's configuration.
	extra string
	// bin is the harrier binary the hosts run, where the shadows, which
	// run as the jobs' owners, may run it too.
	bin string
}

func ipCmd(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

func newNetnsPool(t testing.TB, names ...string) *netnsPool {
	t.Helper()
	needPool(t)
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2's ip to create network namespaces (scripts/setup installs it)")
	}
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	n := &netnsPool{t: t, hosts: map[string]*netnsHost{}, prefix: "hv" + hex.EncodeToString(b), bin: publicBinary(t)}
	bridge := n.prefix + "-br"
	// Made before the teardown is registered, so removed after it: the
	// daemons are gone and their logs read by then.
	base := t.TempDir()
	t.Cleanup(n.teardown)
	ipCmd(t, "netns", "add", bridge)
	ipCmd(t, "-n", bridge, "link", "add", "br0", "type", "bridge")
	ipCmd(t, "-n", bridge, "link", "set", "br0", "up")
	for d := base; d != "/" && d != "/tmp"; d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755)
	}
	for i, name := range names {
		inHost, inBridge := fmt.Sprintf("%sh%d", n.prefix, i), fmt.Sprintf("%sb%d", n.prefix, i)
		h := &netnsHost{name: name, ns: n.prefix + "-" + name, ip: fmt.Sprintf("10.77.0.%d", i+1), dir: filepath.Join(base, name), port: inBridge}
		n.hosts[name] = h
		ipCmd(t, "netns", "add", h.ns)
		ipCmd(t, "link", "add", inHost, "type", "veth", "peer", "name", inBridge)
		ipCmd(t, "link", "set", inHost, "netns", h.ns)
		ipCmd(t, "link", "set", inBridge, "netns", bridge)
		ipCmd(t, "-n", bridge, "link", "set", inBridge, "master", "br0")
		ipCmd(t, "-n", bridge, "link", "set", inBridge, "up")
		ipCmd(t, "-n", h.ns, "addr", "add", h.ip+"/24", "dev", inHost)
		ipCmd(t, "-n", h.ns, "link", "set", inHost, "up")
		ipCmd(t, "-n", h.ns, "link", "set", "lo", "up")
	}
	return n
}

// unplug takes a host off the network (up false) or puts it back; its
// connections survive as TCP's do across a pulled cable.
func (n *netnsPool) unplug(host string, off bool) {
	state := "up"
	if off {
		state = "down"
	}
	ipCmd(n.t, "-n", n.prefix+"-br", "link", "set", n.hosts[host].port, state)
}

func (n *netnsPool) teardown() {
	for _, c := range n.procs {
		if c.Process != nil {
			_ = c.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, c := range n.procs {
		done := make(chan struct{})
		go func() { _ = c.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = c.Process.Kill()
		}
	}
	if n.t.Failed() {
		for _, h := range n.hosts {
			logs, _ := filepath.Glob(filepath.Join(h.dir, "*.log"))
			daemons, _ := filepath.Glob(filepath.Join(h.dir, "log", "*.log"))
			starters, _ := filepath.Glob(filepath.Join(h.dir, "execute", "*", "*.log"))
			logs = append(append(logs, daemons...), starters...)
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				n.t.Logf("---- %s\n%s", l, b)
			}
		}
	}
	for _, h := range n.hosts {
		freeFUSEMounts(n.t, h.dir)
		_ = exec.Command("ip", "netns", "del", h.ns).Run()
	}
	_ = exec.Command("ip", "netns", "del", n.prefix+"-br").Run()
}

// configure gives every host a pool configuration and its own certificate
// from one pool CA; only the matchmaker's host knows the matchmaker's address
// as its own.
func (n *netnsPool) configure(mm string, roles map[string]string) {
	mmOf, extra := map[string]string{}, map[string]string{}
	for name := range n.hosts {
		mmOf[name], extra[name] = mm, n.extra
	}
	n.configurePools(mmOf, roles, extra)
}

// configurePools is configure with each host's matchmaker named in mmOf
// and extra configuration lines per host: the hosts may form several
// Harrier pools, which share one CA.
func (n *netnsPool) configurePools(mmOf, roles, extra map[string]string) {
	t := n.t
	caDir := filepath.Join(t.TempDir(), "ca")
	if err := os.MkdirAll(caDir, 0o700); err != nil {
		t.Fatal(err)
	}
	ca, err := pki.CreateCA(caDir, "netns-pool")
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(caDir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	// Every execute host of a pool holds the same checkpoint key, as an
	// administrator copies it (docs/pool.md).
	keyPath := filepath.Join(caDir, checkpointKeyName)
	if err := checkpoint.CreateKeyFile(keyPath); err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	for name, h := range n.hosts {
		pkiDir := filepath.Join(h.dir, "pki")
		writeFile(t, filepath.Join(pkiDir, "ca.pem"), string(caPEM), 0o644)
		writeFile(t, filepath.Join(pkiDir, checkpointKeyName), string(key), 0o600)
		// A host may have several roles ("matchmaker,agent"), each its
		// own certificate.
		for _, role := range strings.Split(roles[name], ",") {
			if role == "" {
				continue // a host of users only
			}
			if err := ca.Issue(role+"@"+name, []string{h.ip}, filepath.Join(pkiDir, role+".pem"), filepath.Join(pkiDir, role+".key")); err != nil {
				t.Fatal(err)
			}
		}
		conf := fmt.Sprintf(`POOL_DIR = %s
MATCHMAKER_ADDR = %s:9618
BIND_HOST = %s
PKI_DIR = $(POOL_DIR)/pki
SPOOL = $(POOL_DIR)/spool
EXECUTE = $(POOL_DIR)/execute
AGENT_SOCKET = $(POOL_DIR)/agent.sock
AGENT_NAME = agent@%s
UPDATE_INTERVAL = 2
NEGOTIATOR_INTERVAL = 10
%s
`, h.dir, n.hosts[mmOf[name]].ip, h.ip, name, extra[name])
		writeFile(t, filepath.Join(h.dir, poolConfigName), conf, 0o644)
	}
}

// daemon starts a daemon inside a host's namespace.
func (n *netnsPool) daemon(host, role string) {
	t := n.t
	h := n.hosts[host]
	logf, err := os.Create(filepath.Join(h.dir, role+".log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	// nsenter joins only the host's network namespace: "ip netns exec"
	// would also remount /sys and hide the cgroups containers need.
	cmd := exec.Command("nsenter", "--net=/var/run/netns/"+h.ns, n.bin, "daemon", role,
		"--config", filepath.Join(h.dir, poolConfigName), "--name", host)
	cmd.Env = append(os.Environ(), asHarrier+"=1")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n.procs = append(n.procs, cmd)
}

// master starts a host's master inside its namespace, running the daemons
// of roles ("matchmaker,agent"); they log in the host's log/ directory and
// keep their pid files in its run/.
func (n *netnsPool) master(host, roles string) {
	t := n.t
	h := n.hosts[host]
	logf, err := os.Create(filepath.Join(h.dir, "master.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command("nsenter", "--net=/var/run/netns/"+h.ns, n.bin, "master",
		"--config", filepath.Join(h.dir, poolConfigName), "--name", host, "--daemons", strings.ToUpper(roles))
	cmd.Env = append(os.Environ(), asHarrier+"=1")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n.procs = append(n.procs, cmd)
}

// start configures the pool with the matchmaker on mm (see configure) and
// runs it (see run).
func (n *netnsPool) start(mm string, roles map[string]string) {
	n.configure(mm, roles)
	n.run(roles)
}

// run starts every host's daemons, matchmakers first, then agents, then
// startds, and waits until the agent's host sees every startd's slot.
func (n *netnsPool) run(roles map[string]string) {
	n.t.Helper()
	hosts := slices.Sorted(maps.Keys(roles))
	var agentHost string
	var slots []string
	for _, role := range []string{"matchmaker", "agent", "startd"} {
		for _, h := range hosts {
			if !slices.Contains(strings.Split(roles[h], ","), role) {
				continue
			}
			n.daemon(h, role)
			switch role {
			case "agent":
				agentHost = h
			case "startd":
				slots = append(slots, "slot1@"+h)
			}
		}
	}
	n.waitForSlots(agentHost, slots...)
}

// waitForSlots waits until the pool's status, asked from host, shows
// every one of slots.
func (n *netnsPool) waitForSlots(host string, slots ...string) {
	n.t.Helper()
	eventually(n.t, 30*time.Second, strings.Join(slots, " and ")+" to be advertised", func() bool {
		out, code := n.tool(host, "status")
		if code != 0 {
			return false
		}
		for _, s := range slots {
			if !strings.Contains(out, s) {
				return false
			}
		}
		return true
	})
}

// tool runs a harrier tool inside a host's namespace.
func (n *netnsPool) tool(host string, args ...string) (string, int) {
	h := n.hosts[host]
	cmd := exec.Command("nsenter", append([]string{"--net=/var/run/netns/" + h.ns, n.bin}, args...)...)
	cmd.Env = append(os.Environ(), asHarrier+"=1", "HARRIER_POOL="+h.dir)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		n.t.Fatalf("harrier %s: %v", strings.Join(args, " "), err)
	}
	return string(out), 0
}

func TestMultiHostPoolInNetworkNamespaces(t *testing.T) {
	n := newNetnsPool(t, "cm", "submit", "exec1", "exec2")
	n.start("cm", map[string]string{"cm": "matchmaker", "submit": "agent", "exec1": "startd", "exec2": "startd"})

	// One job pinned to each execute host; input and output live only on
	// the submit host's disk.
	work := filepath.Join(n.hosts["submit"].dir, "work")
	src := filepath.Join("..", "..", "examples", "hello")
	if out, err := exec.Command("cp", "-a", src, work).CombinedOutput(); err != nil {
		t.Fatalf("copy example: %v: %s", err, out)
	}
	writeFile(t, filepath.Join(work, "spread.sub"), `executable   = hello.sh
arguments    = $(host)
input        = words.txt
output       = out.$(host)
error        = err.$(host)
log          = spread.log
requirements = Machine == "$(host)"
queue host in (exec1, exec2)
`, 0o644)
	out, code := n.tool("submit", "submit", filepath.Join(work, "spread.sub"))
	if code != 0 || !strings.Contains(out, "2 job(s) submitted to cluster 1.") {
		t.Fatalf("submit: exit %d: %s", code, out)
	}
	for _, id := range []string{"1.0", "1.1"} {
		if out, code := n.tool("submit", "wait", "--timeout", "60", id); code != 0 {
			t.Fatalf("wait %s: exit %d: %s", id, code, out)
		}
	}
	for _, host := range []string{"exec1", "exec2"} {
		b, err := os.ReadFile(filepath.Join(work, "out."+host))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "Hello, "+host) || !strings.Contains(string(b), "apple\nbanana") {
			t.Errorf("out.%s:\n%s", host, b)
		}
	}
	hist, code := n.tool("submit", "history", "-long")
	if code != 0 {
		t.Fatalf("history: %s", hist)
	}
	for _, want := range []string{`LastRemoteHost = "slot1@exec1"`, `LastRemoteHost = "slot1@exec2"`, "JobStatus = 4"} {
		if !strings.Contains(hist, want) {
			t.Errorf("history lacks %s:\n%s", want, hist)
		}
	}
	log, _ := os.ReadFile(filepath.Join(work, "spread.log"))
	if strings.Count(string(log), "Job terminated.") != 2 {
		t.Errorf("event log:\n%s", log)
	}
}

// TestRemoteIOAcrossHosts runs unmodified system programs on an execute
// host against files that only the submit side can read: the job's
// directory is private to its owner, so the job (the slot user, in its
// container) reaches it only through iofs and its shadow.
func TestRemoteIOAcrossHosts(t *testing.T) {
	n := newNetnsPool(t, "cm", "submit", "exec1")
	n.start("cm", map[string]string{"cm": "matchmaker", "submit": "agent", "exec1": "startd"})
	if out, _ := n.tool("submit", "status", "-long"); !strings.Contains(out, `HarrierSandbox = "container"`) {
		t.Fatalf("exec1 does not run jobs in containers:\n%s", out)
	}
	work := filepath.Join(n.hosts["submit"].dir, "private")
	writeFile(t, filepath.Join(work, "data", "a.txt"), "pear\napple\nfig\n", 0o600)
	writeFile(t, filepath.Join(work, "data", "b.txt"), "kiwi\nbanana\n", 0o600)
	if err := os.Chmod(work, 0o700); err != nil {
		t.Fatal(err)
	}
	script := `#!/bin/sh
set -e
cat data/a.txt data/b.txt | sort > sorted.txt
wc -l < sorted.txt > count.txt
grep -c an sorted.txt > grep.txt
tar cf data.tar data
mkdir -p out && echo made > out/new.txt
mv out/new.txt out/renamed.txt
if command -v python3 >/dev/null; then python3 -c 'import os; print(len(os.listdir("data")))' > py.txt; fi
if command -v sqlite3 >/dev/null; then sqlite3 jobs.db 'create table t(x); insert into t values (1),(2),(3); select sum(x) from t;' > sql.txt; fi
`
	writeFile(t, filepath.Join(work, "tools.sh"), script, 0o700)
	writeFile(t, filepath.Join(work, "tools.sub"), "executable = tools.sh\noutput = tools.out\nerror = tools.err\nlog = tools.log\nqueue\n", 0o600)
	out, code := n.tool("submit", "submit", filepath.Join(work, "tools.sub"))
	if code != 0 {
		t.Fatalf("submit: %s", out)
	}
	if out, code := n.tool("submit", "wait", "--timeout", "60", "1.0"); code != 0 {
		errOut, _ := os.ReadFile(filepath.Join(work, "tools.err"))
		hist, _ := n.tool("submit", "history", "-long")
		t.Fatalf("wait: exit %d: %s\nstderr: %s\n%s", code, out, errOut, hist)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(work, name))
		if err != nil {
			t.Errorf("%s: %v (the job's output should be on the submit side)", name, err)
		}
		return string(b)
	}
	if got := read("sorted.txt"); got != "apple\nbanana\nfig\nkiwi\npear\n" {
		t.Errorf("sorted.txt = %q", got)
	}
	if got := strings.TrimSpace(read("count.txt")); got != "5" {
		t.Errorf("count.txt = %q", got)
	}
	if got := strings.TrimSpace(read("grep.txt")); got != "1" {
		t.Errorf("grep.txt = %q", got)
	}
	if got := read("out/renamed.txt"); got != "made\n" {
		t.Errorf("out/renamed.txt = %q", got)
	}
	list, err := exec.Command("tar", "tf", filepath.Join(work, "data.tar")).CombinedOutput()
	if err != nil || !strings.Contains(string(list), "data/a.txt") {
		t.Errorf("data.tar: %v: %s", err, list)
	}
	if _, err := exec.LookPath("python3"); err == nil {
		if got := strings.TrimSpace(read("py.txt")); got != "2" {
			t.Errorf("py.txt = %q", got)
		}
	}
	if _, err := exec.LookPath("sqlite3"); err == nil {
		if got := strings.TrimSpace(read("sql.txt")); got != "6" {
			t.Errorf("sql.txt = %q", got)
		}
		// The database the job made is on the submit side.
		if out, err := exec.Command("sqlite3", filepath.Join(work, "jobs.db"), "select count(*) from t;").CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "3" {
			t.Errorf("jobs.db on the submit side: %v: %s", err, out)
		}
	}
}

// as runs a harrier tool as u on the submit host.
func (p *netnsPool) as(u *user.User, args ...string) (string, int) {
	p.t.Helper()
	cmd := exec.Command("nsenter", append([]string{"--net=/var/run/netns/" + p.hosts["submit"].ns,
		"--setuid", u.Uid, "--setgid", u.Gid, p.bin}, args...)...)
	cmd.Env = append(os.Environ(), asHarrier+"=1", "HARRIER_POOL="+p.hosts["submit"].dir, "HOME="+u.HomeDir)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		p.t.Fatalf("harrier %s as %s: %v", strings.Join(args, " "), u.Username, err)
	}
	return string(out), 0
}

// status returns the JobStatus of job id (0 once it left the queue).
func (p *netnsPool) status(id string) int {
	out, code := p.tool("submit", "q", "-allusers", "-af", "JobStatus", id)
	if code != 0 {
		p.t.Fatalf("q %s: %s", id, out)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(out))
	return n
}

// restartMatchmaker kills the matchmaker and starts it again, returning
// when.
func (p *netnsPool) restartMatchmaker(t *testing.T) time.Time {
	t.Helper()
	for _, c := range p.procs {
		if slices.Contains(c.Args, "matchmaker") && c.ProcessState == nil {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}
	at := time.Now()
	p.daemon("cm", "matchmaker")
	return at
}
