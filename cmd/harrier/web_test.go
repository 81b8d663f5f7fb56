package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// chromium is Debian's headless browser, which the status pages' tests
// load pages with; they skip without it (scripts/setup installs it).
func chromium(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("needs Debian's chromium to load the status pages (scripts/setup installs it)")
	}
	return path
}

// browse loads url in headless chromium, as the unprivileged user u (a
// person on the machine, not the pool's administrator), and returns the
// DOM the browser built; it saves a screenshot of the page to shot.
func browse(t *testing.T, browser, u, url, shot string) string {
	t.Helper()
	home := t.TempDir()
	for d := home; d != "/" && d != "/tmp"; d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755)
	}
	_ = os.Chmod(home, 0o777)
	// The browser's own sandbox needs privileges a test user lacks; the
	// page runs no script anyway (the pages send a policy forbidding
	// any).
	args := []string{"-u", u, "--", "env", "HOME=" + home, browser, "--headless", "--no-sandbox", "--disable-gpu",
		"--user-data-dir=" + filepath.Join(home, "profile"), "--window-size=1280,2400"}
	var stderr strings.Builder
	cmd := exec.Command("runuser", append(args, "--dump-dom", url)...)
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom %s: %v: %s", url, err, stderr.String())
	}
	out, err := exec.Command("runuser", append(args, "--screenshot="+filepath.Join(home, "shot.png"), url)...).CombinedOutput()
	if err != nil {
		t.Fatalf("chromium --screenshot %s: %v: %s", url, err, out)
	}
	png, err := os.ReadFile(filepath.Join(home, "shot.png"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, shot, string(png), 0o644)
	t.Logf("screenshot of %s: %s", url, shot)
	return string(dom)
}

// sampledRunning finds a point of the plot's running series above 0 (a
// minute's point is the mean of its samples).
var sampledRunning = regexp.MustCompile(` running: ([1-9]|0\.[0-9]*[1-9])[0-9.]*</title>`)

// TestStatusPagesInBrowser: a person opens the agent's and the
// matchmaker's status pages of a running personal pool, at the addresses
// harrier pool up printed, in a real browser (headless chromium), and
// sees the plots with data points, the running job in the job table with
// its state, the held job with its reason, a job whose name is markup
// shown as text (its script does not run), the job's page with its event
// log, and the pool's machine and users. The screenshots are the test's
// artifacts (go test -artifacts keeps them).
func TestStatusPagesInBrowser(t *testing.T) {
	browser := chromium(t)
	p := startPool(t, 1)
	viewer := newUser(t)
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o755)
	running := p.submit(t, dir, "run.sub", "executable = /bin/sleep\narguments = 300\nlog = run.log\nqueue\n")
	// A job name a browser would run as a script, were it not escaped.
	const xss = `<script>document.body.dataset.pwned=1</script>`
	held := p.submit(t, dir, "held.sub", "executable = /bin/sleep\narguments = 300\nrequirements = false\nbatch_name = "+xss+"\nqueue\n")
	const reason = `<b>over</b> quota`
	p.must(t, "hold", "-reason", reason, fmt.Sprintf("%d.0", held))
	eventually(t, 60*time.Second, "the job running", func() bool { return p.jobStatus(t, fmt.Sprintf("%d.0", running)) == 2 })

	// pool up names the pages (again, for a pool already up).
	out := p.must(t, "pool", "up", "--dir", p.dir, "--detach")
	urls := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^  (\S+) (http://127\.0\.0\.1:\d+/)$`).FindAllStringSubmatch(out, -1) {
		urls[m[1]] = m[2]
	}
	if urls["agent"] == "" || urls["matchmaker"] == "" {
		t.Fatalf("pool up printed no status pages of the agent and the matchmaker:\n%s", out)
	}
	// The agent samples its queue every UPDATE_INTERVAL: wait for the
	// running job to be in its history.
	eventually(t, 30*time.Second, "the running job in the agent's history", func() bool {
		resp, err := http.Get(urls["agent"])
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return sampledRunning.Match(b)
	})

	artifacts := t.ArtifactDir()
	dom := browse(t, browser, viewer.Username, urls["agent"], filepath.Join(artifacts, "agent.png"))
	if n := strings.Count(dom, `class="point"`); n == 0 {
		t.Errorf("the agent's plot has no data points:\n%s", dom)
	}
	row := func(id int) string {
		m := regexp.MustCompile(`(?s)<tr><td><a href="job/` + fmt.Sprint(id) + `\.0">.*?</tr>`).FindString(dom)
		if m == "" {
			t.Fatalf("the job table does not list job %d.0:\n%s", id, dom)
		}
		return m
	}
	if r := row(running); !strings.Contains(r, ">Running<") {
		t.Errorf("the running job's row: %s", r)
	}
	r := row(held)
	if !strings.Contains(r, ">Held<") || !strings.Contains(r, "&lt;b&gt;over&lt;/b&gt; quota") {
		t.Errorf("the held job's row does not show it held with its reason as text: %s", r)
	}
	if !strings.Contains(r, "&lt;script&gt;document.body.dataset.pwned=1&lt;/script&gt;") {
		t.Errorf("the job named %s is not shown as text: %s", xss, r)
	}
	if strings.Contains(dom, "data-pwned") || strings.Contains(dom, "<script") {
		t.Errorf("the job's name ran as a script:\n%s", dom)
	}

	dom = browse(t, browser, viewer.Username, urls["agent"]+fmt.Sprintf("job/%d.0", running), filepath.Join(artifacts, "job.png"))
	for _, want := range []string{"Event log", "Submitted", "Executing", "Remote I/O", "Checkpoints"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the running job's page lacks %q:\n%s", want, dom)
		}
	}

	// The accountant charges the running job's owner at the next
	// negotiation cycle.
	eventually(t, 60*time.Second, "the job's owner among the pool's users", func() bool {
		resp, err := http.Get(urls["matchmaker"])
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), "<td>root</td>")
	})
	dom = browse(t, browser, viewer.Username, urls["matchmaker"], filepath.Join(artifacts, "pool.png"))
	if n := strings.Count(dom, `class="point"`); n == 0 {
		t.Errorf("the pool's plots have no data points:\n%s", dom)
	}
	if !strings.Contains(dom, "<td>root</td>") {
		t.Errorf("the pool's page lacks its users:\n%s", dom)
	}
	dom = browse(t, browser, viewer.Username, urls["matchmaker"]+"machines?state=Claimed", filepath.Join(artifacts, "machines.png"))
	if !strings.Contains(dom, "<td>Claimed</td>") {
		t.Errorf("the machine table lists no claimed slot (the running job's):\n%s", dom)
	}
}

// sampledHeld finds a point of the plot's held series above 0.
var sampledHeld = regexp.MustCompile(` held: ([1-9]|0\.[0-9]*[1-9])[0-9.]*</title>`)

// TestStatusHistoryKeptAcrossRestart: the agent's history outlives the
// agent. A held job is sampled, removed (the queue has no held job any
// more), and the agent restarted; its new pages still plot the time the
// job was held, which only the history file it saved can have told it.
func TestStatusHistoryKeptAcrossRestart(t *testing.T) {
	p := startPool(t, 1)
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o755)
	held := p.submit(t, dir, "held.sub", "executable = /bin/sleep\narguments = 300\nhold = true\nqueue\n")
	page := func() string {
		addr, err := os.ReadFile(webFile(filepath.Join(p.dir, "run"), "agent"))
		if err != nil {
			return ""
		}
		resp, err := http.Get("http://" + strings.TrimSpace(string(addr)) + "/")
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	eventually(t, 30*time.Second, "the held job in the agent's history", func() bool { return sampledHeld.MatchString(page()) })
	p.must(t, "rm", fmt.Sprintf("%d.0", held))
	eventually(t, 30*time.Second, "the job gone", func() bool { return p.jobStatus(t, fmt.Sprintf("%d.0", held)) == 0 })
	pidFile := filepath.Join(p.dir, "run", "agent.pid")
	pid := readPid(pidFile)
	if out := p.must(t, "restart", "-daemon", "agent"); !strings.Contains(out, "restarted agent") {
		t.Fatalf("restart: %s", out)
	}
	if _, err := os.Stat(filepath.Join(p.dir, "spool", "web-history.json")); err != nil {
		t.Fatalf("the agent saved no history: %v", err)
	}
	var after string
	eventually(t, 30*time.Second, "the restarted agent's pages", func() bool {
		if now := readPid(pidFile); now <= 0 || now == pid {
			return false
		}
		after = page()
		return after != ""
	})
	if !sampledHeld.MatchString(after) {
		t.Errorf("the restarted agent's history lost the held job:\n%s", after)
	}
}

// TestJobPageReadsTheLogAsItsOwner: a user whose job's log names a file
// only root may read (or who puts a link to one in the log's place) does
// not get the file through the job's page: the agent reads the log as
// the job's owner, and the page says it could not. Her own log she sees.
func TestJobPageReadsTheLogAsItsOwner(t *testing.T) {
	h := newUsersPool(t)
	alice := newUser(t).Username
	secret := filepath.Join(h.dir, "secret")
	writeFile(t, secret, "000 (001.000.000) 2026-11-27 10:00:00 Job submitted from host: <TOPSECRET>\n...\n", 0o600)
	own, code := h.tool(t, alice, "submit", h.submitFile(t, "own.sub", "executable = /bin/sleep\narguments = 300\nrequirements = false\nlog = alice.log\nqueue\n"))
	ownID := submitted(t, own, code)
	out, code := h.tool(t, alice, "submit", h.submitFile(t, "steal.sub", "executable = /bin/sleep\narguments = 300\nrequirements = false\nlog = "+secret+"\nqueue\n"))
	stealID := submitted(t, out, code)
	addr, err := os.ReadFile(webFile(filepath.Join(h.testPool.dir, "run"), "agent"))
	if err != nil {
		t.Fatal(err)
	}
	get := func(id int) string {
		resp, err := http.Get(fmt.Sprintf("http://%s/job/%d.0", strings.TrimSpace(string(addr)), id))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	page := get(stealID)
	if strings.Contains(page, "TOPSECRET") {
		t.Fatalf("the job's page shows a file its owner may not read:\n%s", page)
	}
	if !strings.Contains(page, `class="error"`) || !strings.Contains(page, "permission denied") {
		t.Errorf("the job's page does not say the log could not be read:\n%s", page)
	}
	if page := get(ownID); !strings.Contains(page, "Job submitted from host") {
		t.Errorf("the owner's own log is not on her job's page:\n%s", page)
	}
}

// TestJobPageShowsRemoteIOAndCheckpoints: a job reads a file of its
// submitter's through remote I/O and is vacated with a checkpoint; its
// page, in the browser, lists the file with the bytes read, and the
// checkpoint: the ad's count and size, the eviction with a checkpoint
// and the restore from its event log.
func TestJobPageShowsRemoteIOAndCheckpoints(t *testing.T) {
	browser := chromium(t)
	p := startContainerPool(t)
	viewer := newUser(t)
	dir := filepath.Join(t.TempDir(), "job")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(dir, 0o777)
	writeFile(t, filepath.Join(dir, "in.dat"), strings.Repeat("0123456789", 5000), 0o644)
	writeFile(t, filepath.Join(dir, "io.sh"), `#!/bin/sh
cat in.dat > /dev/null
i=0
while [ "$i" -lt 600 ]; do
	i=$((i + 1))
	echo "$i" > count.txt
	sleep 0.5
done
`, 0o755)
	c := p.submit(t, dir, "io.sub", "executable = io.sh\noutput = io.out\nerror = io.err\nlog = io.log\nqueue\n")
	id := fmt.Sprintf("%d.0", c)
	eventually(t, 60*time.Second, "the job to run", func() bool {
		_, err := os.Stat(filepath.Join(dir, "count.txt"))
		return err == nil
	})
	p.must(t, "vacate", id)
	eventually(t, 90*time.Second, "the job restored from its checkpoint", func() bool {
		return strings.Contains(readLog(t, filepath.Join(dir, "io.log")), "Job was evicted.") && p.jobStatus(t, id) == 2 &&
			strings.Count(readLog(t, filepath.Join(dir, "io.log")), "Job executing") >= 2
	})
	addr, err := os.ReadFile(webFile(filepath.Join(p.dir, "run"), "agent"))
	if err != nil {
		t.Fatal(err)
	}
	dom := browse(t, browser, viewer.Username, fmt.Sprintf("http://%s/job/%s", strings.TrimSpace(string(addr)), id), filepath.Join(t.ArtifactDir(), "job-io-checkpoint.png"))
	if !regexp.MustCompile(`<td>` + regexp.QuoteMeta(filepath.Join(dir, "in.dat")) + `</td><td class="num">\d+</td><td class="num">\d+</td><td class="num">50000</td>`).MatchString(dom) {
		t.Errorf("the job's page does not list in.dat with its 50000 bytes read:\n%s", dom)
	}
	if !regexp.MustCompile(`<th>CRIU checkpoints</th><td class="num">[1-9]`).MatchString(dom) || !strings.Contains(dom, "evicted with a checkpoint") {
		t.Errorf("the job's page does not show its checkpoint:\n%s", dom)
	}
	p.must(t, "rm", id)
}
