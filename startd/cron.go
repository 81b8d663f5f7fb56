package startd

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"harrier.dev/harrier/classad"
)

// CronJob is one of the administrator's STARTD_CRON jobs: a program whose
// output, lines of "Name = ClassAd expression", joins every slot's ad
// (each name after Prefix) until its next run.
type CronJob struct {
	Name       string // as in STARTD_CRON_JOBLIST
	Executable string // absolute
	Args       []string
	// Period is the time between the starts of two runs of a periodic
	// job. A run still going after Period (a oneshot job's after
	// cronOneshotTimeout, or Period if set) is killed and reported.
	Period time.Duration
	Prefix string
	Mode   CronMode
}

// CronMode is when a cron job runs (STARTD_CRON_<NAME>_MODE).
type CronMode string

const (
	// CronPeriodic runs the job every Period.
	CronPeriodic CronMode = "periodic"
	// CronOneShot runs it once, when the startd starts.
	CronOneShot CronMode = "oneshot"
)

const (
	// cronOneshotTimeout bounds a oneshot job without a period.
	cronOneshotTimeout = 5 * time.Minute
	// cronMaxOutput is as much of a job's output as is read.
	cronMaxOutput = 64 << 10
	// attrCronFailures lists the cron jobs whose last run failed.
	attrCronFailures = "StartdCronFailures"
)

func (j CronJob) check() error {
	switch {
	case j.Name == "":
		return errors.New("a cron job without a name")
	case !strings.HasPrefix(j.Executable, "/"):
		return fmt.Errorf("cron job %s: executable %q is not an absolute path", j.Name, j.Executable)
	case j.Mode != CronPeriodic && j.Mode != CronOneShot:
		return fmt.Errorf("cron job %s: mode %q: want periodic or oneshot", j.Name, j.Mode)
	case j.Mode == CronPeriodic && j.Period < time.Second:
		return fmt.Errorf("cron job %s: period %v is shorter than a second", j.Name, j.Period)
	}
	return nil
}

func (j CronJob) timeout() time.Duration {
	if j.Mode == CronOneShot && j.Period == 0 {
		return cronOneshotTimeout
	}
	return j.Period
}

// cronAttrs is what the cron jobs' last runs put in the slots' ads. A
// value is never changed: a run's result replaces it whole (withResult).
type cronAttrs struct {
	jobs   []string                           // every cron job's name, in order; none: no cron
	attrs  map[string]map[string]classad.Expr // by job: its attributes, prefixed
	failed map[string]bool                    // by job: its last run failed
}

// withResult returns c with job's last run's attributes, or its failure.
// A failed job's attributes are withdrawn: a health check that cannot say
// must not be believed.
func (c cronAttrs) withResult(job string, attrs map[string]classad.Expr, failed bool) cronAttrs {
	next := cronAttrs{jobs: c.jobs, attrs: map[string]map[string]classad.Expr{}, failed: map[string]bool{}}
	for k, v := range c.attrs {
		next.attrs[k] = v
	}
	for k, v := range c.failed {
		next.failed[k] = v
	}
	delete(next.attrs, job)
	if attrs != nil {
		next.attrs[job] = attrs
	}
	next.failed[job] = failed
	return next
}

// publish sets the cron jobs' attributes in a slot's ad, and
// StartdCronFailures: the names of those whose last run failed.
func (c cronAttrs) publish(ad *classad.ClassAd) {
	if len(c.jobs) == 0 {
		return
	}
	var failed []string
	for _, job := range c.jobs {
		for name, e := range c.attrs[job] {
			ad.Set(name, e)
		}
		if c.failed[job] {
			failed = append(failed, job)
		}
	}
	ad.SetString(attrCronFailures, strings.Join(failed, ","))
}

// parseCronOutput reads a cron job's output: "Name = expression" lines,
// up to a line that starts with "-" (the end of one set of attributes in
// HTCondor's protocol). Blank lines and "#" comments are skipped; a line
// that is not an attribute is an error.
func parseCronOutput(out []byte, prefix string) (map[string]classad.Expr, error) {
	attrs := map[string]classad.Expr{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case strings.HasPrefix(line, "-"):
			return attrs, nil
		}
		name, src, ok := strings.Cut(line, "=")
		name = strings.TrimSpace(name)
		if !ok || !validAttrName(name) {
			return nil, fmt.Errorf("line %d: %q is not Name = expression", n, line)
		}
		e, err := classad.ParseExpr(strings.TrimSpace(src))
		if err != nil {
			return nil, fmt.Errorf("line %d: %s: %w", n, name, err)
		}
		attrs[prefix+name] = e
	}
	return attrs, sc.Err()
}

func validAttrName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// cronLoop runs job as its mode says until ctx is done, publishing each
// run's result.
func (s *Startd) cronLoop(ctx context.Context, job CronJob) {
	for {
		attrs, err := s.runCron(ctx, job)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			s.log.Warn("startd cron job failed", "job", job.Name, "err", err)
		} else {
			s.log.Debug("startd cron job ran", "job", job.Name, "attrs", len(attrs))
		}
		s.mu.Lock()
		s.adc.cron = s.adc.cron.withResult(job.Name, attrs, err != nil)
		s.mu.Unlock()
		s.notify()
		if job.Mode == CronOneShot {
			return
		}
		// The period runs from one start to the next, as HTCondor's.
		t := time.NewTimer(job.Period)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// runCron runs job once, as the configured cron user, in its own process
// group, which is killed when the run outlasts its timeout. A run fails
// if it cannot start, exits other than 0, is killed, or prints what is
// not an attribute.
func (s *Startd) runCron(ctx context.Context, job CronJob) (map[string]classad.Expr, error) {
	ctx, cancel := context.WithTimeout(ctx, job.timeout())
	defer cancel()
	cmd := exec.CommandContext(ctx, job.Executable, job.Args...)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "_CONDOR_CRON_NAME=" + job.Name}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: s.cronCred}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &limitedBuffer{b: &stderr, left: 4 << 10}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", job.Executable, err)
	}
	out, _ := io.ReadAll(io.LimitReader(stdout, cronMaxOutput))
	_, _ = io.Copy(io.Discard, stdout)
	err = cmd.Wait()
	if ctx.Err() == context.DeadlineExceeded {
		return nil, fmt.Errorf("%s still running after %v: killed", job.Executable, job.timeout())
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %s", job.Executable, err, strings.TrimSpace(stderr.String()))
	}
	return parseCronOutput(out, job.Prefix)
}

// limitedBuffer keeps the first left bytes written to it.
type limitedBuffer struct {
	b    *bytes.Buffer
	left int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if l.left > 0 {
		k := min(len(p), l.left)
		l.b.Write(p[:k])
		l.left -= k
	}
	return len(p), nil
}

// cronNames returns the names of jobs, in order.
func cronNames(jobs []CronJob) []string {
	names := make([]string, len(jobs))
	for i, j := range jobs {
		names[i] = j.Name
	}
	return slices.Clip(names)
}

// cronCredential is who a startd's cron jobs run as: name (default
// nobody) when the startd runs as root, else the startd's own user (nil).
// A root startd on a machine without nobody, and without a configured
// user, runs them as root, and says so.
func cronCredential(name string, log *slog.Logger) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	explicit := name != ""
	if !explicit {
		name = defaultCronUser
	}
	u, err := user.Lookup(name)
	if err != nil && !explicit {
		log.Warn("startd cron jobs run as root: no unprivileged account to run them as", "user", name, "err", err)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cron user: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("cron user %s: %w", name, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}
