package main

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// gangPool is a pool of hosts in network namespaces for gangs: exec1 on
// subnet a, exec2 and exec3 on subnet b (STARTD_ATTRS), and the
// matchmaker's licenses: sim, one seat valid on exec2 alone, and cad,
// one seat valid on exec2 and exec3.
type gangPool struct {
	*netnsPool
}

const gangLicenses = `// Licenses offered to gangs; a job's License port names the machine as Host.
[ Name = "sim"; App = "sim"; Seats = 1;
  Ports = { [ Label = Job; Requirements = Job.Host == "exec2" ] } ]
[ Name = "cad"; App = "cad"; Seats = 1;
  Ports = { [ Label = Job; Requirements = member(Job.Host, { "exec2", "exec3" }) ] } ]
`

func newGangPool(t *testing.T) *gangPool {
	n := newNetnsPool(t, "cm", "submit", "exec1", "exec2", "exec3")
	roles := map[string]string{"cm": "matchmaker", "submit": "agent", "exec1": "startd", "exec2": "startd", "exec3": "startd"}
	licenses := filepath.Join(n.hosts["cm"].dir, "licenses")
	writeFile(t, licenses, gangLicenses, 0o644)
	mmOf := map[string]string{}
	extra := map[string]string{"cm": "LICENSE_FILE = " + licenses, "submit": ""}
	for name := range n.hosts {
		mmOf[name] = "cm"
	}
	for host, subnet := range map[string]string{"exec1": "a", "exec2": "b", "exec3": "b"} {
		extra[host] = fmt.Sprintf("STARTD_ATTRS = Subnet\nSubnet = %q", subnet)
	}
	n.configurePools(mmOf, roles, extra)
	n.run(roles)
	return &gangPool{netnsPool: n}
}

// workDir makes u's directory for submit files and output on the submit
// host, with the job script: it reports its start, its gang and its end,
// sleeping its first argument's seconds between.
func (p *gangPool) workDir(t *testing.T, u *user.User) string {
	dir := filepath.Join(p.hosts["submit"].dir, "work-"+u.Username)
	writeFile(t, filepath.Join(dir, "gang.sh"), `#!/bin/sh
echo "start $(date +%s.%N)"
echo "slots=$HARRIER_GANG_SLOTS"
echo "hosts=$HARRIER_GANG_HOSTS"
echo "labels=$HARRIER_GANG_LABELS"
echo "licenses=$HARRIER_GANG_LICENSES"
sleep "$1"
echo "end $(date +%s.%N)"
`, 0o755)
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	for _, f := range []string{dir, filepath.Join(dir, "gang.sh")} {
		if err := os.Chown(f, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// submit writes a submit file for a gang job in u's directory and submits
// it, returning the job's id.
func (p *gangPool) submit(t *testing.T, u *user.User, name, ports, sleep string) string {
	t.Helper()
	dir := p.workDir(t, u)
	path := filepath.Join(dir, name+".sub")
	writeFile(t, path, fmt.Sprintf(`executable = gang.sh
arguments  = %s
output     = %s.out
error      = %s.err
log        = %s.log
+Ports     = %s
queue
`, sleep, name, name, name, ports), 0o644)
	out, code := p.as(u, "submit", path)
	if code != 0 {
		t.Fatalf("submit %s as %s: exit %d: %s", name, u.Username, code, out)
	}
	var cluster int
	if _, err := fmt.Sscanf(out[strings.Index(out, "cluster"):], "cluster %d.", &cluster); err != nil {
		t.Fatalf("submit %s: %q: %v", name, out, err)
	}
	return fmt.Sprintf("%d.0", cluster)
}

// licenseInUse returns the seats of a license in use, as harrier status
// -license shows them.
func (p *gangPool) licenseInUse(name string) int {
	out, code := p.tool("submit", "status", "-license")
	if code != 0 {
		p.t.Fatalf("status -license: %s", out)
	}
	for _, f := range fields(out) {
		if len(f) == 3 && f[0] == name {
			n, _ := strconv.Atoi(f[2])
			return n
		}
	}
	p.t.Fatalf("status -license lacks %s:\n%s", name, out)
	return 0
}

// output reads a job's output file in u's directory.
func (p *gangPool) output(t *testing.T, u *user.User, name string) string {
	b, err := os.ReadFile(filepath.Join(p.hosts["submit"].dir, "work-"+u.Username, name+".out"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// between returns the time a job's output line "what SECONDS" gives.
func between(t *testing.T, out, what string) float64 {
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, what+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			return f
		}
	}
	t.Fatalf("output lacks %q:\n%s", what, out)
	return 0
}

const (
	simPorts = `{ [ Label = Cpu; Requirements = Cpu.OpSys == "LINUX" ], \
  [ Label = License; Host = Cpu.Machine; Requirements = License.App == "sim" ] }`
	cadPorts = `{ [ Label = Cpu; Requirements = Cpu.OpSys == "LINUX" ], \
  [ Label = License; Host = Cpu.Machine; Requirements = License.App == "cad" ] }`
	// Figure 8 of the thesis: two machines on one subnet.
	pairPorts = `{ [ Label = Host1; Requirements = Host1.OpSys == "LINUX" ], \
  [ Label = Host2; Requirements = Host2.OpSys == "LINUX" && Host1.Subnet == Host2.Subnet ] }`
	nopePorts = `{ [ Label = Cpu; Requirements = Cpu.OpSys == "LINUX" ], \
  [ Label = License; Host = Cpu.Machine; Requirements = License.App == "nope" ] }`
)

// TestGangsInAPool runs gangs on hosts in their own network namespaces,
// submitted by real users: a job with a license valid on one machine, two
// users' gangs competing for one seat, a two-machine gang on one subnet,
// and a gang with a port nothing can fill, explained by -better-analyze.
func TestGangsInAPool(t *testing.T) {
	p := newGangPool(t)
	alice, bob := newUser(t), newUser(t)

	t.Run("ImpossiblePort", func(t *testing.T) {
		id := p.submit(t, alice, "nope", nopePorts, "0")
		// The job is offered to the matchmaker and stays idle.
		eventually(t, 60*time.Second, "a negotiation cycle to turn the gang down", func() bool {
			out, _ := p.tool("submit", "status", "-negotiator", "-af", "LastNegotiationCycleRejections0")
			n, _ := strconv.Atoi(strings.TrimSpace(out))
			return n == 1
		})
		out, code := p.as(alice, "q", "-better-analyze", id)
		if code != 0 {
			t.Fatalf("q -better-analyze: exit %d: %s", code, out)
		}
		for _, want := range []string{"is a gang", "Port 0 (Cpu): docks with slot1@exec1", "Port 1 (License): nothing docks here",
			`Port 1 (License) is satisfied by no candidate: License.App == "nope"`} {
			if !strings.Contains(out, want) {
				t.Errorf("-better-analyze lacks %q:\n%s", want, out)
			}
		}
		if st := p.status(id); st != 1 {
			t.Errorf("gang with an impossible port: JobStatus %d, want idle", st)
		}
		if out, code := p.as(bob, "rm", id); code == 0 {
			t.Errorf("bob removed alice's job: %s", out)
		}
		if out, code := p.as(alice, "rm", id); code != 0 {
			t.Fatalf("rm: %s", out)
		}
	})

	t.Run("LicenseValidOnOneMachine", func(t *testing.T) {
		id := p.submit(t, alice, "sim", simPorts, "25")
		eventually(t, 90*time.Second, "the sim gang to run", func() bool { return p.status(id) == 2 })
		// While it runs, its machine's claim holds the seat.
		if n := p.licenseInUse("sim"); n != 1 {
			t.Errorf("sim seats in use while the job runs: %d", n)
		}
		out, _ := p.tool("submit", "status", "-af", "Name", `member("sim", GangLicenses)`, "-constraint", `JobId == "`+id+`"`)
		if strings.TrimSpace(out) != "slot1@exec2 true" {
			t.Errorf("claimed machine ad: %q", out)
		}
		// A restarted matchmaker learns the held seat from exec2's claim and
		// does not hand it to another gang: bob's waits.
		restarted := p.restartMatchmaker(t)
		other := p.submit(t, bob, "sim", simPorts, "0")
		eventually(t, 60*time.Second, "a cycle of the restarted matchmaker, past its license hold", func() bool {
			out, _ := p.tool("submit", "status", "-negotiator", "-af", "LastNegotiationCycleEnd0")
			end, _ := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
			return end > restarted.Unix()+4
		})
		if st, n := p.status(other), p.licenseInUse("sim"); st != 1 || n != 1 || p.status(id) != 2 {
			t.Errorf("after the matchmaker's restart, with alice's gang running: bob's JobStatus %d, sim seats in use %d", st, n)
		}
		if out, code := p.tool("submit", "wait", "--timeout", "60", id); code != 0 {
			t.Fatalf("wait: %s", out)
		}
		if out, code := p.tool("submit", "wait", "--timeout", "60", other); code != 0 {
			t.Fatalf("wait for bob's gang: %s", out)
		}
		got := p.output(t, alice, "sim")
		for _, want := range []string{"slots=slot1@exec2\n", "hosts=exec2\n", "licenses=sim\n", "end "} {
			if !strings.Contains(got, want) {
				t.Errorf("output lacks %q:\n%s", want, got)
			}
		}
		eventually(t, 60*time.Second, "the sim seat to come back", func() bool { return p.licenseInUse("sim") == 0 })
	})

	t.Run("TwoGangsOneSeat", func(t *testing.T) {
		a := p.submit(t, alice, "cad", cadPorts, "8")
		b := p.submit(t, bob, "cad", cadPorts, "8")
		for _, id := range []string{a, b} {
			if out, code := p.tool("submit", "wait", "--timeout", "120", id); code != 0 {
				t.Fatalf("wait %s: %s", id, out)
			}
		}
		oa, ob := p.output(t, alice, "cad"), p.output(t, bob, "cad")
		for _, o := range []string{oa, ob} {
			if !strings.Contains(o, "licenses=cad\n") {
				t.Errorf("output:\n%s", o)
			}
		}
		// Machines were free for both (exec2 and exec3): the one seat
		// made them run one after the other, in either order.
		sa, ea, sb, eb := between(t, oa, "start"), between(t, oa, "end"), between(t, ob, "start"), between(t, ob, "end")
		if sa < eb && sb < ea {
			t.Errorf("both gangs held the one cad seat at once: alice %f-%f, bob %f-%f", sa, ea, sb, eb)
		}
		eventually(t, 60*time.Second, "the cad seat to come back", func() bool { return p.licenseInUse("cad") == 0 })
	})

	t.Run("SeatReturnsOnRemoval", func(t *testing.T) {
		a := p.submit(t, alice, "long", cadPorts, "600")
		eventually(t, 90*time.Second, "alice's gang to run", func() bool { return p.status(a) == 2 })
		b := p.submit(t, bob, "short", cadPorts, "0")
		eventually(t, 60*time.Second, "a negotiation cycle to turn bob's gang down", func() bool {
			out, _ := p.tool("submit", "status", "-negotiator", "-af", "LastNegotiationCycleRejections0")
			n, _ := strconv.Atoi(strings.TrimSpace(out))
			return n == 1 && p.status(b) == 1
		})
		out, _ := p.as(bob, "q", "-better-analyze", b)
		for _, want := range []string{"a gang forms from the pool's machines and licenses, but not from those free now",
			"license seats free: cad 0 of 1, sim 1 of 1", "Port 1 (License): nothing docks here"} {
			if !strings.Contains(out, want) {
				t.Errorf("-better-analyze of the waiting gang lacks %q:\n%s", want, out)
			}
		}
		removed := float64(time.Now().UnixNano()) / 1e9
		if out, code := p.as(alice, "rm", a); code != 0 {
			t.Fatalf("rm: %s", out)
		}
		if out, code := p.tool("submit", "wait", "--timeout", "90", b); code != 0 {
			t.Fatalf("wait %s: %s", b, out)
		}
		if start := between(t, p.output(t, bob, "short"), "start"); start < removed {
			t.Errorf("bob's gang started at %f, before alice's gang gave the seat back at %f", start, removed)
		}
	})

	t.Run("TwoMachinesOneSubnet", func(t *testing.T) {
		id := p.submit(t, bob, "pair", pairPorts, "3")
		eventually(t, 90*time.Second, "the pair to run", func() bool { return p.status(id) == 2 })
		out, _ := p.tool("submit", "status", "-af", "Name", "-constraint", `JobId == "`+id+`" && State == "Claimed"`)
		if strings.Fields(out) == nil || strings.Join(strings.Fields(out), " ") != "slot1@exec2 slot1@exec3" {
			t.Errorf("machines claimed for the pair: %q, want exec2 and exec3", out)
		}
		if out, code := p.tool("submit", "wait", "--timeout", "60", id); code != 0 {
			t.Fatalf("wait: %s", out)
		}
		got := p.output(t, bob, "pair")
		if !strings.Contains(got, "hosts=exec2 exec3\n") && !strings.Contains(got, "hosts=exec3 exec2\n") {
			t.Errorf("the pair ran on other machines than the subnet b's two:\n%s", got)
		}
		if !strings.Contains(got, "labels=Host1 Host2\n") {
			t.Errorf("labels:\n%s", got)
		}
		eventually(t, 60*time.Second, "the pair's machines to be released", func() bool {
			out, _ := p.tool("submit", "status", "-af", "Name", "-constraint", `State == "Unclaimed"`)
			return len(strings.Fields(out)) == 3
		})
	})
}
