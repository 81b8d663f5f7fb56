package submit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/jobargs"
)

// Env is what a description is expanded against: where and by whom it was
// submitted.
type Env struct {
	Dir     string                      // directory of the submit file: relative paths are relative to it (or to initialdir)
	Owner   string                      // Unix user name of the submitter
	Getenv  func(string) (string, bool) // for $ENV(name); nil means an empty environment
	Environ []string                    // NAME=value entries, for getenv
	Now     time.Time                   // submission time; the zero Time means time.Now()
	// UIDDomain, if set, makes User "Owner@UIDDomain"; otherwise User is Owner.
	UIDDomain string
}

// Job status codes, as in HTCondor.
const (
	StatusIdle = 1
	StatusHeld = 5
)

// HoldCodeSubmittedOnHold is HTCondor's HoldReasonCode for jobs submitted
// with "hold = true".
const HoldCodeSubmittedOnHold = 15

// A job collects one job's settings while its commands are applied.
type job struct {
	ad    *classad.ClassAd
	exprs map[string]classad.Expr // parsed expressions shared by the jobs of one Jobs call; may be nil

	exe, input, output, errPath, log, iwd string
	requirements                          string
	env                                   []string // NAME=value from environment
	getenv                                []string // patterns of variables to import
	acctGroup, acctUser                   string
	transferExe                           bool
	skipChecks                            bool
	hold                                  bool
	requestDisk                           bool // request_disk was given
}

// newJob returns a job holding HTCondor's defaults, in the attribute order
// job ads are printed in.
func newJob() *job {
	ad := classad.New()
	ad.SetInt("ClusterId", 0)
	ad.SetInt("ProcId", 0)
	ad.SetString("Owner", "")
	ad.SetString("User", "")
	ad.SetInt("JobUniverse", 5)
	ad.SetString("Cmd", "")
	ad.SetString("Arguments", "")
	ad.SetString("Environment", "")
	ad.SetString("Iwd", "")
	ad.SetString("In", "/dev/null")
	ad.SetString("Out", "/dev/null")
	ad.SetString("Err", "/dev/null")
	ad.SetInt("JobStatus", StatusIdle)
	ad.SetInt("QDate", 0)
	ad.SetInt("EnteredCurrentStatus", 0)
	ad.SetInt("RequestCpus", 1)
	ad.SetInt("RequestMemory", 128)
	ad.SetInt("RequestDisk", 1)
	ad.Set("Requirements", classad.Literal(classad.Bool(true)))
	ad.SetReal("Rank", 0)
	ad.SetInt("JobPrio", 0)
	ad.SetBool("PeriodicHold", false)
	ad.SetBool("PeriodicRelease", false)
	ad.SetBool("PeriodicRemove", false)
	ad.SetBool("OnExitHold", false)
	ad.SetBool("OnExitRemove", true)
	ad.SetBool("LeaveJobInQueue", false)
	ad.SetInt("JobNotification", 0)
	ad.SetString("ShouldTransferFiles", "IF_NEEDED")
	ad.SetString("WhenToTransferOutput", "ON_EXIT")
	ad.SetBool("TransferExecutable", true)
	ad.SetBool("WantCheckpoint", false)
	ad.SetInt("NumJobStarts", 0)
	return &job{ad: ad, transferExe: true}
}

// expr parses src as a ClassAd expression for command name.
func (j *job) expr(name, src string) (classad.Expr, error) {
	if e, ok := j.exprs[src]; ok {
		return e, nil
	}
	e, err := parseExpr(src, name)
	if err == nil && j.exprs != nil {
		j.exprs[src] = e
	}
	return e, err
}

func parseExpr(src, name string) (classad.Expr, error) {
	e, err := classad.ParseExpr(src)
	if err != nil {
		return classad.Expr{}, fmt.Errorf("bad expression for %s: %w", name, err)
	}
	return e, nil
}

// A builder makes the jobs of one Jobs call.
type builder struct {
	d       *Description
	env     Env
	dir     string // absolute submit directory
	cluster int
	now     int64
	arch    string
	opsys   string

	exprs  map[string]classad.Expr
	exeErr map[string]error // executable checks by absolute path
	sizes  map[string]int64 // file sizes in bytes by absolute path, -1 if missing
}

// Jobs expands the description into one ad per job of cluster cluster, in
// proc order, with all macros and queue forms applied. On error it returns
// no ads and an *Error naming the line; a missing or non-executable
// executable is such an error, unless transfer_executable or
// skip_filechecks is false or true respectively.
func (d *Description) Jobs(cluster int, env Env) ([]*classad.ClassAd, error) {
	dir, err := filepath.Abs(env.Dir)
	if err != nil {
		return nil, &Error{File: d.file, Err: fmt.Errorf("submit directory: %w", err)}
	}
	now := env.Now
	if now.IsZero() {
		now = time.Now()
	}
	b := &builder{
		d: d, env: env, dir: dir, cluster: cluster, now: now.Unix(),
		exprs:  make(map[string]classad.Expr),
		exeErr: make(map[string]error),
		sizes:  make(map[string]int64),
	}
	b.arch, b.opsys = platform()

	defs := make(map[string]macro)
	var customs []stmt
	var ads []*classad.ClassAd
	for _, st := range d.stmts {
		switch st.kind {
		case assignStmt:
			v := st.value
			if refersTo(v, st.name) {
				x := &expander{defs: defs, only: st.name}
				if v, err = x.expand(v); err != nil {
					return nil, b.errorf(st.line, "%w", err)
				}
			}
			defs[st.name] = macro{value: v, line: st.line}
		case customStmt:
			customs = setCustom(customs, st)
		case queueStmt:
			if ads, err = b.queue(ads, st, defs, customs); err != nil {
				return nil, err
			}
		}
	}
	return ads, nil
}

func (b *builder) errorf(line int, format string, args ...any) error {
	return &Error{File: b.d.file, Line: line, Err: fmt.Errorf(format, args...)}
}

// refersTo reports whether value refers to the macro name.
func refersTo(value, name string) bool {
	if !strings.Contains(value, "$") {
		return false
	}
	refs := make(map[string]bool)
	macroRefs(value, refs)
	return refs[name]
}

// setCustom records a custom attribute, replacing an earlier one of the same
// name.
func setCustom(customs []stmt, st stmt) []stmt {
	for i, c := range customs {
		if strings.EqualFold(c.name, st.name) {
			out := append([]stmt(nil), customs...)
			out[i] = st
			return out
		}
	}
	return append(customs[:len(customs):len(customs)], st)
}

// queue appends the jobs of one queue statement to ads.
func (b *builder) queue(ads []*classad.ClassAd, st stmt, defs map[string]macro, customs []stmt) ([]*classad.ClassAd, error) {
	q := st.queue
	static := &expander{defs: defs, job: &jobMacros{cluster: b.cluster}, getenv: b.env.Getenv}
	rows, count, err := q.rows(static, b.dir)
	if err != nil {
		return nil, b.errorf(st.line, "%w", err)
	}
	for r, row := range rows {
		for step := 0; step < count; step++ {
			m := &jobMacros{
				cluster: b.cluster, proc: len(ads), step: step, row: r,
				hasJob: true, vars: q.vars, values: row,
			}
			ad, err := b.job(defs, customs, m, st.line)
			if err != nil {
				return nil, err
			}
			ads = append(ads, ad)
		}
	}
	return ads, nil
}

// job makes the ad of one job.
func (b *builder) job(defs map[string]macro, customs []stmt, m *jobMacros, queueLine int) (*classad.ClassAd, error) {
	j := newJob()
	j.exprs = b.exprs
	x := &expander{defs: defs, job: m, getenv: b.env.Getenv}
	exeLine, reqLine := queueLine, queueLine
	for _, name := range commandOrder {
		def, ok := defs[name]
		if v, isVar := m.varValue(name); isVar {
			// A queue variable named like a command sets it, as in HTCondor.
			def, ok = macro{value: v, line: queueLine}, true
		}
		if !ok {
			continue
		}
		switch name {
		case "executable":
			exeLine = def.line
		case "requirements":
			reqLine = def.line
		}
		v, err := x.expand(def.value)
		if err != nil {
			return nil, b.errorf(def.line, "%s: %w", name, err)
		}
		if v = strings.TrimSpace(v); v == "" {
			continue
		}
		if err := commands[name](j, name, v); err != nil {
			return nil, b.errorf(def.line, "%w", err)
		}
	}
	ad := j.ad
	ad.SetInt("ClusterId", int64(m.cluster))
	ad.SetInt("ProcId", int64(m.proc))
	ad.SetString("Owner", b.env.Owner)
	user := b.env.Owner
	if b.env.UIDDomain != "" {
		user += "@" + b.env.UIDDomain
	}
	ad.SetString("User", user)
	ad.SetInt("QDate", b.now)
	ad.SetInt("EnteredCurrentStatus", b.now)

	iwd := b.dir
	if j.iwd != "" {
		iwd = absJoin(b.dir, j.iwd)
	}
	ad.SetString("Iwd", iwd)
	if j.exe == "" {
		return nil, b.errorf(queueLine, "no executable given")
	}
	cmd := absJoin(b.dir, j.exe)
	if j.transferExe && !j.skipChecks {
		if err := b.checkExecutable(cmd); err != nil {
			return nil, b.errorf(exeLine, "%w", err)
		}
	}
	ad.SetString("Cmd", cmd)
	for _, p := range []struct{ attr, path string }{{"In", j.input}, {"Out", j.output}, {"Err", j.errPath}, {"UserLog", j.log}} {
		if p.path != "" {
			ad.SetString(p.attr, absJoin(iwd, p.path))
		}
	}
	ad.SetString("Environment", jobargs.Join(mergeEnv(b.env.Environ, j.getenv, j.env)))
	if err := b.requirements(j); err != nil {
		return nil, b.errorf(reqLine, "%w", err)
	}
	if j.hold {
		ad.SetInt("JobStatus", StatusHeld)
		ad.SetString("HoldReason", "submitted on hold at user's request")
		ad.SetInt("HoldReasonCode", HoldCodeSubmittedOnHold)
		ad.SetInt("HoldReasonSubCode", 0)
	}
	if !j.requestDisk {
		kib := (b.size(cmd) + b.size(absJoin(iwd, j.input)) + 1023) / 1024
		ad.SetInt("DiskUsage", kib)
		ad.SetInt("RequestDisk", max(kib, 1))
	}
	if j.acctGroup != "" {
		u := j.acctUser
		if u == "" {
			u = b.env.Owner
		}
		ad.SetString("AcctGroup", j.acctGroup)
		ad.SetString("AcctGroupUser", u)
		ad.SetString("AccountingGroup", j.acctGroup+"."+u)
	}
	for _, c := range customs {
		v, err := x.expand(c.value)
		if err != nil {
			return nil, b.errorf(c.line, "%w", err)
		}
		e, err := j.expr("+"+c.name, strings.TrimSpace(v))
		if err != nil {
			return nil, b.errorf(c.line, "%w", err)
		}
		ad.Set(c.name, e)
	}
	return ad, nil
}

func absJoin(base, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(base, p)
}

// checkExecutable reports why path cannot be run, once per path.
func (b *builder) checkExecutable(path string) error {
	if err, ok := b.exeErr[path]; ok {
		return err
	}
	var err error
	fi, serr := os.Stat(path)
	switch {
	case errors.Is(serr, fs.ErrNotExist):
		err = fmt.Errorf("executable %s does not exist", path)
	case serr != nil:
		err = fmt.Errorf("executable: %w", serr)
	case fi.IsDir():
		err = fmt.Errorf("executable %s is a directory", path)
	case fi.Mode()&0o111 == 0:
		err = fmt.Errorf("executable %s is not executable (mode %v)", path, fi.Mode().Perm())
	}
	b.exeErr[path] = err
	return err
}

// size returns the size of the file at path, or 0 if it cannot be read.
func (b *builder) size(path string) int64 {
	if n, ok := b.sizes[path]; ok {
		return n
	}
	var n int64
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
		n = fi.Size()
	}
	b.sizes[path] = n
	return n
}

// requirements sets Requirements to the user's expression AND-ed with the
// clauses HTCondor adds for attributes the expression does not mention.
func (b *builder) requirements(j *job) error {
	mentioned := make(map[string]bool)
	for _, w := range identifiers(j.requirements) {
		mentioned[strings.ToLower(w)] = true
	}
	var parts []string
	if j.requirements != "" {
		parts = append(parts, "("+j.requirements+")")
	}
	if !mentioned["arch"] {
		parts = append(parts, fmt.Sprintf("(TARGET.Arch == %q)", b.arch))
	}
	if !mentioned["opsys"] {
		parts = append(parts, fmt.Sprintf("(TARGET.OpSys == %q)", b.opsys))
	}
	if !mentioned["disk"] {
		parts = append(parts, "(TARGET.Disk >= RequestDisk)")
	}
	if !mentioned["memory"] {
		parts = append(parts, "(TARGET.Memory >= RequestMemory)")
	}
	e, err := j.expr("requirements", strings.Join(parts, " && "))
	if err != nil {
		return err
	}
	j.ad.Set("Requirements", e)
	return nil
}

// identifiers returns the attribute names an expression mentions, without
// MY. or TARGET. scopes and skipping string literals.
func identifiers(src string) []string {
	var out []string
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '"':
			i++
			for i < len(src) && src[i] != '"' {
				if src[i] == '\\' {
					i++
				}
				i++
			}
			i++
		case isIdentByte(c, false):
			k := i
			for k < len(src) && (isIdentByte(src[k], true) || src[k] == '.') {
				k++
			}
			w := src[i:k]
			if dot := strings.LastIndexByte(w, '.'); dot >= 0 {
				w = w[dot+1:]
			}
			out = append(out, w)
			i = k
		default:
			i++
		}
	}
	return out
}

// mergeEnv returns the job's environment: the variables of environ matching
// the getenv patterns, then the explicit entries, which override them.
func mergeEnv(environ, patterns, explicit []string) []string {
	var out []string
	index := make(map[string]int)
	add := func(e string) {
		name, _, _ := strings.Cut(e, "=")
		if i, ok := index[name]; ok {
			out[i] = e
			return
		}
		index[name] = len(out)
		out = append(out, e)
	}
	if len(patterns) > 0 {
		for _, e := range environ {
			name, _, ok := strings.Cut(e, "=")
			if ok && name != "" && anyPatternMatches(patterns, name) {
				add(e)
			}
		}
	}
	for _, e := range explicit {
		add(e)
	}
	return out
}

func anyPatternMatches(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := filepath.Match(p, name); ok {
			return true
		}
	}
	return false
}
