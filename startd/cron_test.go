package startd

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"harrier.dev/harrier/classad"
)

func TestParseCronOutput(t *testing.T) {
	out := "# health\nHasCVMFS = true\n\nScratchFreeMB = 1024\nSite = \"north\"\n- end\nIgnored = 1\n"
	attrs, err := parseCronOutput([]byte(out), "Health_")
	if err != nil {
		t.Fatal(err)
	}
	if len(attrs) != 3 {
		t.Fatalf("attrs %v", attrs)
	}
	for name, want := range map[string]string{"Health_HasCVMFS": "true", "Health_ScratchFreeMB": "1024", "Health_Site": `"north"`} {
		if e, ok := attrs[name]; !ok || e.String() != want {
			t.Errorf("%s = %v (%v), want %s", name, e, ok, want)
		}
	}
	for _, bad := range []string{"no equals sign", "1x = 2", "A = (", "A.b = 1"} {
		if _, err := parseCronOutput([]byte(bad), ""); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestCronAttrsPublish(t *testing.T) {
	c := cronAttrs{jobs: []string{"A", "B"}}
	c = c.withResult("A", map[string]classad.Expr{"HasCVMFS": classad.Literal(classad.Bool(true))}, false)
	c = c.withResult("B", nil, true)
	ad := classad.New()
	c.publish(ad)
	if b, _ := ad.EvalBool("HasCVMFS"); !b {
		t.Error("A's attribute is missing")
	}
	if s, _ := ad.EvalString(attrCronFailures); s != "B" {
		t.Errorf("%s = %q, want B", attrCronFailures, s)
	}
	// A's next run fails: its attributes go, and the earlier value is
	// left as it was.
	d := c.withResult("A", nil, true)
	ad = classad.New()
	d.publish(ad)
	if _, ok := ad.Lookup("HasCVMFS"); ok {
		t.Error("a failed job's attribute is still published")
	}
	if s, _ := ad.EvalString(attrCronFailures); s != "A,B" {
		t.Errorf("%s = %q, want A,B", attrCronFailures, s)
	}
	if _, ok := c.attrs["A"]; !ok {
		t.Error("withResult changed the value it was called on")
	}
	none := classad.New()
	cronAttrs{}.publish(none)
	if none.Len() != 0 {
		t.Errorf("no cron jobs published %v", none)
	}
}

// TestRunCron runs real scripts: one that reports, one that fails, one
// that hangs past its period and is killed.
func TestRunCron(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	s := &Startd{}
	attrs, err := s.runCron(context.Background(), CronJob{Name: "OK", Mode: CronPeriodic, Period: time.Minute, Prefix: "X_",
		Executable: script("ok", `echo "Arg = \"$1\""; echo "Name = \"$_CONDOR_CRON_NAME\""`), Args: []string{"hello"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := attrs["X_Arg"].String() + " " + attrs["X_Name"].String(); got != `"hello" "OK"` {
		t.Errorf("attrs %v", attrs)
	}
	_, err = s.runCron(context.Background(), CronJob{Name: "BAD", Mode: CronPeriodic, Period: time.Minute,
		Executable: script("bad", "echo broken >&2\nexit 3\n")})
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "broken") {
		t.Errorf("failing script: %v", err)
	}
	_, err = s.runCron(context.Background(), CronJob{Name: "HANG", Mode: CronPeriodic, Period: time.Second,
		Executable: script("hang", "echo A = 1\nsleep 600 & wait\n")})
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("hanging script: %v", err)
	}
	_, err = s.runCron(context.Background(), CronJob{Name: "MISSING", Mode: CronOneShot, Executable: filepath.Join(dir, "none")})
	if err == nil {
		t.Error("a missing executable ran")
	}
}

func TestCronConfigChecked(t *testing.T) {
	for _, j := range []CronJob{
		{Name: "A", Executable: "rel/path", Mode: CronPeriodic, Period: time.Minute},
		{Name: "A", Executable: "/bin/true", Mode: "ondemand", Period: time.Minute},
		{Name: "A", Executable: "/bin/true", Mode: CronPeriodic},
	} {
		if err := j.check(); err == nil {
			t.Errorf("%+v accepted", j)
		}
	}
}

func TestCronCredential(t *testing.T) {
	if os.Geteuid() != 0 {
		if c, err := cronCredential("nobody", slog.Default()); c != nil || err != nil {
			t.Errorf("a startd that is not root: %v, %v; want its own user", c, err)
		}
		return
	}
	c, err := cronCredential("", slog.Default())
	if err != nil || c == nil || c.Uid == 0 {
		t.Errorf("default cron user: %+v, %v; want nobody", c, err)
	}
	if _, err := cronCredential("no-such-harrier-user", slog.Default()); err == nil {
		t.Error("a configured user that does not exist accepted")
	}
}

// TestCronLoopOneShot: a oneshot job runs once, and its result reaches
// the ads' configuration and wakes the advertiser.
func TestCronLoopOneShot(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "once")
	count := filepath.Join(dir, "count")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\necho run >> "+count+"\necho 'Once = 1'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := &Startd{changed: make(chan struct{}, 1), log: slog.Default(), adc: adConfig{cron: cronAttrs{jobs: []string{"ONCE"}}}}
	s.cronLoop(t.Context(), CronJob{Name: "ONCE", Executable: exe, Mode: CronOneShot}) // returns after its one run
	select {
	case <-s.changed:
	default:
		t.Error("the advertiser was not woken")
	}
	ad := classad.New()
	s.adc.cron.publish(ad)
	if n, _ := ad.EvalInt("Once"); n != 1 {
		t.Errorf("Once = %v", ad.Eval("Once"))
	}
	if b, _ := os.ReadFile(count); string(b) != "run\n" {
		t.Errorf("the oneshot job ran %q", b)
	}
}
