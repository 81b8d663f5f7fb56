package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// appendConfig adds lines to the pool's configuration file; later
// definitions override earlier ones.
func (p *testPool) appendConfig(t *testing.T, lines string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(p.dir, poolConfigName), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("\n" + lines + "\n"); err != nil {
		t.Fatal(err)
	}
}

// slotStates returns each slot's State, by slot name.
func (p *testPool) slotStates(t *testing.T) map[string]string {
	t.Helper()
	states := map[string]string{}
	for _, ad := range p.jobs(t, "status") {
		name, _ := ad["Name"].(string)
		states[name], _ = ad["State"].(string)
	}
	return states
}

// A reconfig that turns START false takes effect on the idle slot (it
// goes to the owner) without evicting the running job; turned true again,
// the waiting job runs. Both jobs complete exactly once. Only the
// administrator may reconfigure.
func TestReconfigChangesStartWithoutEviction(t *testing.T) {
	bin := publicBinary(t)
	p := startPoolFrom(t, bin, 1, "NUM_SLOTS = 2\nNEGOTIATOR_INTERVAL = 2")
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	first := p.submit(t, dir, "first.sub", "executable = /bin/sleep\narguments = 20\nlog = jobs.log\nqueue\n")
	eventually(t, time.Minute, "the first job to run", func() bool { return p.jobStatus(t, fmt.Sprint(first)+".0") == 2 })

	alice := newUser(t)
	env := append([]string{asHarrier + "=1"}, p.env...)
	if out, code := asUser(t, bin, alice.Username, env, "reconfig"); code == 0 || !strings.Contains(out, "only the pool administrator") {
		t.Errorf("a user reconfigured the pool: exit %d: %s", code, out)
	}

	p.appendConfig(t, "START = FALSE")
	if out := p.must(t, "reconfig"); !strings.Contains(out, "re-read the configuration") {
		t.Errorf("reconfig said %q", out)
	}
	eventually(t, time.Minute, "the idle slot to go to its owner", func() bool {
		n := 0
		for _, st := range p.slotStates(t) {
			if st == "Owner" {
				n++
			}
		}
		return n == 1
	})
	second := p.submit(t, dir, "second.sub", "executable = /bin/true\nlog = jobs.log\nqueue\n")
	if st := p.jobStatus(t, fmt.Sprint(first)+".0"); st != 2 {
		t.Errorf("the running job's status after the reconfig: %d, want 2 (running)", st)
	}

	// SIGHUP to the master (systemctl reload) does what reconfig does.
	p.appendConfig(t, "START = TRUE")
	if err := syscall.Kill(readPid(masterPidFile(p.dir, hostName())), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "both jobs to complete", func() bool {
		out, code := p.harrier(t, "q", "-nobatch", "-af", "ClusterId")
		return code == 0 && strings.TrimSpace(out) == ""
	})
	log, err := os.ReadFile(filepath.Join(dir, "jobs.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []int{first, second} {
		if n := strings.Count(string(log), fmt.Sprintf("005 (%03d.000.000)", c)); n != 1 {
			t.Errorf("cluster %d: %d completion events, want 1\n%s", c, n, log)
		}
	}
	if strings.Contains(string(log), "004 (") {
		t.Errorf("a job was evicted:\n%s", log)
	}
	startdLog, _ := os.ReadFile(filepath.Join(p.dir, "log", hostName()+".log"))
	if !strings.Contains(string(startdLog), "reconfigured") {
		t.Errorf("the startd's log does not say it reconfigured:\n%s", startdLog)
	}
}

// off stops one daemon and the master leaves it off; on starts it again;
// restart gives it a new process. A user may do none of it.
func TestOffOnRestart(t *testing.T) {
	bin := publicBinary(t)
	p := startPoolFrom(t, bin, 1, "")
	host := hostName()
	pidFile := filepath.Join(p.dir, "run", host+".pid")
	startd := readPid(pidFile)

	alice := newUser(t)
	env := append([]string{asHarrier + "=1"}, p.env...)
	for _, verb := range []string{"off", "on", "restart"} {
		if out, code := asUser(t, bin, alice.Username, env, verb, "-daemon", "agent"); code == 0 || !strings.Contains(out, "only the pool administrator") {
			t.Errorf("a user ran %s: exit %d: %s", verb, code, out)
		}
	}

	if out := p.must(t, "off", "-daemon", host); !strings.Contains(out, "turned off "+host) {
		t.Errorf("off said %q", out)
	}
	if alive(startd) || readPid(pidFile) != 0 {
		t.Fatalf("the startd runs after off")
	}
	// The master's back-off starts a dead daemon after about 2 s; a
	// daemon turned off is not dead. Restart the agent meanwhile, and
	// look again once that is done.
	agentPid := readPid(filepath.Join(p.dir, "run", "agent.pid"))
	if out := p.must(t, "restart", "-daemon", "agent"); !strings.Contains(out, "restarted agent") {
		t.Errorf("restart said %q", out)
	}
	if now := readPid(filepath.Join(p.dir, "run", "agent.pid")); now == agentPid || !alive(now) {
		t.Errorf("the agent was not restarted: pid %d, then %d", agentPid, now)
	}
	eventually(t, 30*time.Second, "the agent to answer", func() bool {
		_, code := p.harrier(t, "q")
		return code == 0
	})
	if readPid(pidFile) != 0 {
		t.Errorf("the startd was started again while off")
	}
	who := p.must(t, "who")
	for _, want := range []string{
		fmt.Sprintf(`(?m)^%s +master +%d `, host, readPid(masterPidFile(p.dir, host))),
		fmt.Sprintf(`(?m)^%s +agent +%d +\S+ \S+ +1 +running$`, host, readPid(filepath.Join(p.dir, "run", "agent.pid"))),
		fmt.Sprintf(`(?m)^%s +%s +- +\S+ \S+ +0 +off$`, host, host),
	} {
		if !regexp.MustCompile(want).MatchString(who) {
			t.Errorf("who does not match %s:\n%s", want, who)
		}
	}
	p.must(t, "on", "-daemon", host)
	if pid := readPid(pidFile); pid == 0 || !alive(pid) {
		t.Errorf("the startd does not run after on")
	}
	if _, code := p.harrier(t, "off", "-daemon", "nosuch"); code == 0 {
		t.Errorf("off of an unknown daemon succeeded")
	}
}

// lineOf returns the number of the first line of path that is text.
func lineOf(t *testing.T, path, text string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) == text {
			return i + 1
		}
	}
	t.Fatalf("%s has no line %q", path, text)
	return 0
}

// config-val shows a value and the file and line it comes from, or that
// it is a daemon's default; -dump lists what a daemon uses; a daemon
// answers with what it re-read on reconfig. Only the administrator may
// ask a daemon.
func TestConfigVal(t *testing.T) {
	bin := publicBinary(t)
	p := startPoolFrom(t, bin, 1, "NUM_SLOTS = 2")
	conf := filepath.Join(p.dir, poolConfigName)
	host := hostName()

	want := fmt.Sprintf("START = TRUE\n # at %s:%d\n", conf, lineOf(t, conf, "START = TRUE"))
	if out := p.must(t, "config-val", "-verbose", "START"); out != want {
		t.Errorf("config-val -verbose START: %q, want %q", out, want)
	}
	if out := p.must(t, "config-val", "-daemon", host, "-verbose", "START"); out != want {
		t.Errorf("config-val -daemon %s -verbose START: %q, want %q", host, out, want)
	}
	if out := p.must(t, "config-val", "-daemon", host, "-verbose", "POLLING_INTERVAL"); out != "POLLING_INTERVAL = 1\n # not defined: the daemon's default\n" {
		t.Errorf("the startd's default polling interval: %q", out)
	}
	if out, code := p.harrier(t, "config-val", "NO_SUCH_KEY"); code != 1 || !strings.Contains(out, "Not defined: NO_SUCH_KEY") {
		t.Errorf("an undefined key: exit %d: %s", code, out)
	}
	startd := p.must(t, "config-val", "-daemon", host, "-dump")
	mm := p.must(t, "config-val", "-daemon", "matchmaker", "-dump")
	for _, c := range []struct {
		out, line string
		want      bool
	}{
		{startd, "NUM_SLOTS = 2", true}, {startd, "CLAIM_LEASE = 60", true}, {startd, "NEGOTIATOR_INTERVAL = 20", false},
		{mm, "NEGOTIATOR_INTERVAL = 20", true}, {mm, "NUM_SLOTS = 2", false},
	} {
		if strings.Contains(c.out, c.line+"\n") != c.want {
			t.Errorf("%q in a -dump: %v, want %v\n%s", c.line, !c.want, c.want, c.out)
		}
	}

	p.appendConfig(t, "START = FALSE\nNEGOTIATOR_INTERVAL = 7")
	p.must(t, "reconfig")
	want = fmt.Sprintf("START = FALSE\n # at %s:%d\n", conf, lineOf(t, conf, "START = FALSE"))
	eventually(t, 30*time.Second, "the startd and the matchmaker to re-read their configuration", func() bool {
		return p.must(t, "config-val", "-daemon", host, "-verbose", "START") == want &&
			p.must(t, "config-val", "-daemon", "matchmaker", "NEGOTIATOR_INTERVAL") == "7\n"
	})
	mmLog, _ := os.ReadFile(filepath.Join(p.dir, "log", "matchmaker.log"))
	if !regexp.MustCompile(`msg=reconfigured .*interval=7s`).Match(mmLog) {
		t.Errorf("the matchmaker's log does not say it reconfigured:\n%s", mmLog)
	}
	agentLog, _ := os.ReadFile(filepath.Join(p.dir, "log", "agent.log"))
	if !regexp.MustCompile(`msg="configuration re-read" .*negotiator_interval`).Match(agentLog) {
		t.Errorf("the agent's log does not say it re-read the configuration:\n%s", agentLog)
	}

	// A START that does not parse is refused whole: the startd runs on,
	// and says so, with the configuration it had.
	p.appendConfig(t, "START = (((")
	p.must(t, "reconfig")
	eventually(t, 30*time.Second, "the startd to refuse the reconfig", func() bool {
		b, _ := os.ReadFile(filepath.Join(p.dir, "log", host+".log"))
		return strings.Contains(string(b), "reconfig refused")
	})
	if out := p.must(t, "config-val", "-daemon", host, "-verbose", "START"); out != want {
		t.Errorf("after a refused reconfig the startd says %q, want %q", out, want)
	}

	alice := newUser(t)
	env := append([]string{asHarrier + "=1"}, p.env...)
	if out, code := asUser(t, bin, alice.Username, env, "config-val", "-daemon", "agent", "-dump"); code == 0 || !strings.Contains(out, "only the pool administrator") {
		t.Errorf("a user asked the agent: exit %d: %s", code, out)
	}
}

// The agent re-reads its limits on reconfig, without a restart: a lowered
// MAX_JOBS_PER_OWNER refuses the owner's next job, not another owner's,
// and the running job runs on to complete once. A changed setting that
// needs a restart (MAX_SUBMISSION_BYTES: the socket's largest message) is
// said not to be applied, in the log and by config-val -verbose, which
// shows the value the agent runs on.
func TestReconfigAgentLimits(t *testing.T) {
	bin := publicBinary(t)
	p := startPoolFrom(t, bin, 1, "NUM_SLOTS = 2\nNEGOTIATOR_INTERVAL = 2")
	conf := filepath.Join(p.dir, poolConfigName)
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	first := p.submit(t, dir, "first.sub", "executable = /bin/sleep\narguments = 10\nlog = jobs.log\nqueue\n")
	id := fmt.Sprint(first) + ".0"
	eventually(t, time.Minute, "the job to run", func() bool { return p.jobStatus(t, id) == 2 })
	agentPid := readPid(filepath.Join(p.dir, "run", "agent.pid"))
	sent := p.must(t, "config-val", "-daemon", "agent", "MAX_SUBMISSION_BYTES")

	p.appendConfig(t, "MAX_JOBS_PER_OWNER = 1\nMAX_SUBMISSION_BYTES = 1000000")
	p.must(t, "reconfig")
	eventually(t, 30*time.Second, "the agent to re-read its configuration", func() bool {
		return p.must(t, "config-val", "-daemon", "agent", "MAX_JOBS_PER_OWNER") == "1\n"
	})
	path := filepath.Join(dir, "second.sub")
	writeFile(t, path, "executable = /bin/true\nqueue\n", 0o644)
	if out, code := p.harrier(t, "submit", path); code == 0 || !strings.Contains(out, "MAX_JOBS_PER_OWNER") {
		t.Errorf("a second job of the owner under MAX_JOBS_PER_OWNER = 1: exit %d: %s", code, out)
	}
	alice := newUser(t)
	p.submitAs(t, alice.Username, dir, "alice.sub", "executable = /bin/true\nqueue\n")

	if out := p.must(t, "config-val", "-daemon", "agent", "MAX_SUBMISSION_BYTES"); out != sent {
		t.Errorf("the agent says it runs on MAX_SUBMISSION_BYTES %q, want %q as it started", out, sent)
	}
	want := fmt.Sprintf(" # not applied: changed to 1000000 at %s:%d; takes effect when the daemon restarts\n", conf, lineOf(t, conf, "MAX_SUBMISSION_BYTES = 1000000"))
	if out := p.must(t, "config-val", "-daemon", "agent", "-verbose", "MAX_SUBMISSION_BYTES"); !strings.HasSuffix(out, want) {
		t.Errorf("config-val -verbose of a setting waiting for a restart: %q, want it to end %q", out, want)
	}
	agentLog, _ := os.ReadFile(filepath.Join(p.dir, "log", "agent.log"))
	if !regexp.MustCompile(`not_applied=\[MAX_SUBMISSION_BYTES\]`).Match(agentLog) || !strings.Contains(string(agentLog), "max_jobs_per_owner=1") {
		t.Errorf("the agent's log does not say what it applied and what it did not:\n%s", agentLog)
	}

	eventually(t, 2*time.Minute, "the first job to complete", func() bool { return p.jobStatus(t, id) == 0 })
	if now := readPid(filepath.Join(p.dir, "run", "agent.pid")); now != agentPid {
		t.Errorf("the agent was restarted: pid %d, then %d", agentPid, now)
	}
	log, err := os.ReadFile(filepath.Join(dir, "jobs.log"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(log), fmt.Sprintf("005 (%03d.000.000)", first)); n != 1 || strings.Contains(string(log), "004 (") {
		t.Errorf("the running job: %d completion events, want 1 and no eviction\n%s", n, log)
	}
	if starts := p.historyAd(t, id)["NumJobStarts"]; starts != float64(1) {
		t.Errorf("the job started %v times, want 1", starts)
	}
}

// A graceful drain takes the machine out of service, leaving the running
// job alone for its retirement time (the idle slot Drained); a quick one
// vacates it; cancelled, the machine runs both jobs to completion. Only
// the administrator may drain.
func TestDrain(t *testing.T) {
	bin := publicBinary(t)
	p := startPoolFrom(t, bin, 1, "NUM_SLOTS = 2\nNEGOTIATOR_INTERVAL = 2\nMAXJOBRETIREMENTTIME = 3600")
	host := hostName()
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	first := p.submit(t, dir, "first.sub", "executable = /bin/sleep\narguments = 20\nlog = jobs.log\nqueue\n")
	id := fmt.Sprint(first) + ".0"
	eventually(t, time.Minute, "the first job to run", func() bool { return p.jobStatus(t, id) == 2 })

	alice := newUser(t)
	env := append([]string{asHarrier + "=1"}, p.env...)
	if out, code := asUser(t, bin, alice.Username, env, "drain", host); code == 0 || !strings.Contains(out, "only the pool administrator") {
		t.Errorf("a user drained a machine: exit %d: %s", code, out)
	}

	if out, code := p.harrier(t, "drain", "-check", `State == "Owner"`, host); code == 0 || !strings.Contains(out, "is not true for slot") {
		t.Errorf("a drain whose -check is false: exit %d: %s", code, out)
	}
	if out := p.must(t, "drain", "-graceful", host); !strings.Contains(out, "draining") {
		t.Errorf("drain said %q", out)
	}
	eventually(t, time.Minute, "the idle slot to leave service", func() bool {
		st := p.slotStates(t)
		return st["slot1@"+host] == "Drained" || st["slot2@"+host] == "Drained"
	})
	second := p.submit(t, dir, "second.sub", "executable = /bin/true\nlog = jobs.log\nqueue\n")
	if st := p.jobStatus(t, id); st != 2 {
		t.Errorf("the running job's status after a graceful drain: %d, want 2", st)
	}
	if out := p.must(t, "drain", "-quick", host); !strings.Contains(out, "vacated") {
		t.Errorf("drain -quick said %q", out)
	}
	eventually(t, time.Minute, "the vacated job to wait again", func() bool { return p.jobStatus(t, id) == 1 })
	if st := p.jobStatus(t, fmt.Sprint(second)+".0"); st != 1 {
		t.Errorf("the second job's status on a drained pool: %d, want 1 (idle)", st)
	}

	p.must(t, "drain", "-cancel", host)
	eventually(t, 2*time.Minute, "both jobs to complete", func() bool {
		out, code := p.harrier(t, "q", "-nobatch", "-af", "ClusterId")
		return code == 0 && strings.TrimSpace(out) == ""
	})
	log, err := os.ReadFile(filepath.Join(dir, "jobs.log"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(log), fmt.Sprintf("004 (%03d.000.000)", first)); n != 1 {
		t.Errorf("%d eviction events for the first job, want 1\n%s", n, log)
	}
	for _, c := range []int{first, second} {
		if n := strings.Count(string(log), fmt.Sprintf("005 (%03d.000.000)", c)); n != 1 {
			t.Errorf("cluster %d: %d completion events, want 1\n%s", c, n, log)
		}
	}
}

// A drained machine stays drained when its startd is killed and its
// master starts it again: a negotiation cycle that sees an idle job
// matches nothing there. Once the drain is cancelled, the job runs there.
// Only the administrator may cancel a drain.
func TestDrainSurvivesStartdRestart(t *testing.T) {
	bin := publicBinary(t)
	p := startPoolFrom(t, bin, 1, "NEGOTIATOR_INTERVAL = 2")
	host := hostName()
	machine := func() map[string]any {
		if ads := p.jobs(t, "status"); len(ads) == 1 {
			return ads[0]
		}
		return map[string]any{}
	}
	p.must(t, "drain", host)
	var addr string
	eventually(t, time.Minute, "the drained machine's ad", func() bool {
		ad := machine()
		addr, _ = ad["StartdAddr"].(string)
		return ad["Draining"] == true
	})
	p.killDaemon(t, host)
	var ad map[string]any
	eventually(t, time.Minute, "the restarted startd's ad", func() bool {
		ad = machine()
		now, _ := ad["StartdAddr"].(string)
		return now != "" && now != addr
	})
	if ad["Draining"] != true || ad["Start"] != false {
		t.Errorf("the restarted startd forgot the drain: Draining %v, Start %v", ad["Draining"], ad["Start"])
	}

	dir := t.TempDir()
	id := fmt.Sprint(p.submit(t, dir, "job.sub", "executable = /bin/true\nlog = job.log\nqueue\n")) + ".0"
	if n := p.nextCycleMatches(t); n != 0 {
		t.Errorf("a cycle on the drained pool made %d matches", n)
	}
	if st := p.jobStatus(t, id); st != 1 {
		t.Errorf("the job's status on the drained pool: %d, want 1 (idle)", st)
	}

	alice := newUser(t)
	if out, code := asUser(t, bin, alice.Username, append([]string{asHarrier + "=1"}, p.env...), "drain", "-cancel", host); code == 0 || !strings.Contains(out, "only the pool administrator") {
		t.Errorf("a user cancelled a drain: exit %d: %s", code, out)
	}
	if out := p.must(t, "drain", "-cancel", host); !strings.Contains(out, "back in service") {
		t.Errorf("drain -cancel said %q", out)
	}
	if out, code := p.harrier(t, "wait", "--timeout", "120", id); code != 0 {
		t.Fatalf("the job did not complete once the drain was cancelled: exit %d: %s", code, out)
	}
	if h := p.historyAd(t, id); h["LastRemoteHost"] != "slot1@"+host {
		t.Errorf("the job ran on %v, want slot1@%s", h["LastRemoteHost"], host)
	}
}

// nextCycleMatches waits for a negotiation cycle that begins from now on
// and sees an idle job, and returns how many matches it made.
func (p *testPool) nextCycleMatches(t *testing.T) int {
	t.Helper()
	after := time.Now().Unix()
	var cycle []string
	eventually(t, time.Minute, "a negotiation cycle that sees an idle job", func() bool {
		cycle = strings.Fields(p.must(t, "status", "-negotiator", "-af", "LastNegotiationCycleTime0", "LastNegotiationCycleNumIdleJobs0", "LastNegotiationCycleMatches0"))
		return len(cycle) == 3 && atoi(cycle[0]) > int(after) && atoi(cycle[1]) >= 1
	})
	return atoi(cycle[2])
}

// Each host's master publishes its DaemonMaster ad, the negotiator and
// the agent theirs; status -daemons lists them, and a daemon's restart
// shows in its master's ad.
func TestStatusDaemons(t *testing.T) {
	p := startPool(t, 2)
	host := hostName()
	byName := func() map[string]map[string]any {
		ads := map[string]map[string]any{}
		for _, ad := range p.jobs(t, "status", "-daemons") {
			typ, _ := ad["MyType"].(string)
			name, _ := ad["Name"].(string)
			ads[typ+"/"+name] = ad
		}
		return ads
	}
	var ads map[string]map[string]any
	eventually(t, time.Minute, "every daemon's ad", func() bool {
		ads = byName()
		return ads["DaemonMaster/"+host+"-1"] != nil && ads["DaemonMaster/"+host+"-2"] != nil &&
			ads["Scheduler/agent@personal"] != nil && len(ads) == 4
	})
	m1 := ads["DaemonMaster/"+host+"-1"]
	if m1["DaemonList"] != "matchmaker, agent, "+host+"-1" || m1["agent_Pid"] != float64(readPid(filepath.Join(p.dir, "run", "agent.pid"))) {
		t.Errorf("the first host's master ad: %v", m1)
	}
	for key, ad := range ads {
		if start, _ := ad["DaemonStartTime"].(float64); start <= 0 {
			t.Errorf("%s has no DaemonStartTime: %v", key, ad)
		}
	}

	second := attrName(host + "-2")
	p.killDaemon(t, host+"-2")
	eventually(t, time.Minute, "the master's ad to show the restart", func() bool {
		ad := byName()["DaemonMaster/"+host+"-2"]
		return ad != nil && ad[second+"_Restarts"] == float64(1) && ad[second+"_Pid"] == float64(readPid(filepath.Join(p.dir, "run", host+"-2.pid")))
	})
	if out := p.must(t, "status", "-master", "-af", "Name"); strings.Join(strings.Fields(out), " ") != host+"-1 "+host+"-2" && strings.Join(strings.Fields(out), " ") != host+"-2 "+host+"-1" {
		t.Errorf("status -master: %q", out)
	}
	if out := p.must(t, "status", "-negotiator", "-af", "MyType"); out != "Negotiator\n" {
		t.Errorf("status -negotiator: %q", out)
	}
	out := p.must(t, "status", "-daemons")
	for _, want := range []string{
		`(?m)^` + host + `-2 +DaemonMaster +\S+ \S+ +daemons ` + host + `-2; 1 restarts$`,
		`(?m)^agent@personal +Scheduler +\S+ \S+ +0 idle, 0 running, 0 held$`,
		`(?m)^\S+ +Negotiator +\S+ \S+ +last cycle `,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("status -daemons does not match %s:\n%s", want, out)
		}
	}
}

// An administrator on a host without the master's socket reaches the
// master over the pool's TLS with the admin certificate, at the address
// its DaemonMaster ad gives; a user without the certificate cannot.
func TestAdminFromAnotherHost(t *testing.T) {
	bin := publicBinary(t)
	p := startPoolFrom(t, bin, 2, "")
	host := hostName() + "-2"
	// Another host's view of the pool: the same configuration, but a run
	// directory without this host's sockets.
	other := filepath.Join(t.TempDir(), "elsewhere")
	for _, d := range []string{other, filepath.Join(other, "run")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(other, poolConfigName),
		"include : "+filepath.Join(p.dir, poolConfigName)+"\nRUN = "+filepath.Join(other, "run")+"\n", 0o644)
	env := []string{"HARRIER_POOL=" + other}
	var last string
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("status -daemons said last:\n%s", last)
		}
	})
	eventually(t, time.Minute, "the master's ad", func() bool {
		out, code := harrier(t, env, "status", "-daemons", "-af", "Name", "MasterAddr", "-constraint", fmt.Sprintf("Name == %q", host))
		last = out
		return code == 0 && strings.HasPrefix(out, host+" 127.0.0.1:")
	})

	alice := newUser(t)
	for d := other; d != "/" && d != "/tmp"; d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755)
	}
	if out, code := asUser(t, bin, alice.Username, append([]string{asHarrier + "=1"}, env...), "off", "-daemon", host, host); code == 0 || !strings.Contains(out, "only the pool administrator") {
		t.Errorf("a user turned a daemon off: exit %d: %s", code, out)
	}
	pidFile := filepath.Join(p.dir, "run", host+".pid")
	if out := mustHarrier(t, env, "off", "-daemon", host, host); !strings.Contains(out, host+": turned off "+host) {
		t.Errorf("off over TLS said %q", out)
	}
	if pid := readPid(pidFile); pid != 0 {
		t.Errorf("the startd runs after off: pid %d", pid)
	}
	if out := mustHarrier(t, env, "who", host); !regexp.MustCompile(`(?m)^` + host + ` +` + host + ` +- .* off$`).MatchString(out) {
		t.Errorf("who over TLS:\n%s", out)
	}
	mustHarrier(t, env, "on", "-daemon", host, host)
	if pid := readPid(pidFile); pid == 0 || !alive(pid) {
		t.Errorf("the startd does not run after on")
	}
	// The master passes requests on to its daemons.
	if out := mustHarrier(t, env, "config-val", "-daemon", host, "-host", host, "-verbose", "START"); !strings.HasPrefix(out, "START = TRUE\n # at "+filepath.Join(p.dir, poolConfigName)+":") {
		t.Errorf("config-val over TLS: %q", out)
	}
	if out := mustHarrier(t, env, "drain", host); !strings.Contains(out, "draining") {
		t.Errorf("drain over TLS said %q", out)
	}
	eventually(t, time.Minute, "the drained machine's ads", func() bool {
		out, _ := harrier(t, env, "status", "-af", "Draining", "-constraint", fmt.Sprintf("Machine == %q", host))
		return strings.TrimSpace(out) == "true"
	})
}
