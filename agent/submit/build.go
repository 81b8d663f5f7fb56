package submit

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"harrier.dev/harrier/classad"
)

// A builder makes the jobs of one Jobs call. Jobs of one cluster mostly
// share their settings, so it applies the commands that do not depend on
// the job once per queue statement and remembers its last results.
type builder struct {
	d        *Description
	env      Env
	dir      string // absolute submit directory
	cluster  int
	arch     string
	opsys    string
	template *job              // defaults and the attributes common to the whole call
	preset   map[string]string // the variables defined before the description is read

	exprs  map[string]classad.Expr // parsed expressions by source
	exeErr map[string]error        // executable checks by absolute path
	sizes  map[string]int64        // file sizes in bytes by absolute path

	iwd, cmd, in, out, err, log pathMemo
	envMemo                     envMemo
	reqSrc                      string
	reqExpr                     classad.Expr
	disk                        diskMemo
}

// Jobs expands the description into one ad per job of cluster cluster, in
// proc order, with all macros and queue forms applied. On error it returns
// no ads and an *Error naming the line. A missing or non-executable
// executable is such an error, unless transfer_executable is false or
// skip_filechecks true.
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
		d: d, env: env, dir: dir, cluster: cluster,
		exprs:  make(map[string]classad.Expr),
		exeErr: make(map[string]error),
		sizes:  make(map[string]int64),
	}
	b.arch, b.opsys = submitPlatform()
	b.preset = presetMacros(dir, d.file)
	b.template = newJob()
	b.template.exprs = b.exprs
	ad := b.template.ad
	ad.SetInt("ClusterId", int64(cluster))
	ad.SetString("Owner", env.Owner)
	user := env.Owner
	if env.UIDDomain != "" {
		user += "@" + env.UIDDomain
	}
	ad.SetString("User", user)
	ad.SetInt("QDate", now.Unix())
	ad.SetInt("EnteredCurrentStatus", now.Unix())

	defs := make(map[string]macro)
	var customs []stmt
	var ads []*classad.ClassAd
	for _, st := range d.stmts {
		switch st.kind {
		case assignStmt:
			defs[st.name] = macro{value: st.value, file: st.file, line: st.line}
		case customStmt:
			customs = setCustom(customs, st)
			defs["my."+strings.ToLower(st.name)] = macro{value: st.value, file: st.file, line: st.line}
		case queueStmt:
			if ads, err = b.queue(ads, st, defs, customs); err != nil {
				return nil, err
			}
		}
	}
	return ads, nil
}

// errorf returns an *Error for the line of file.
func errorf(file string, line int, format string, args ...any) error {
	return &Error{File: file, Line: line, Err: fmt.Errorf(format, args...)}
}

// expander returns an expander over defs for the jobs of this call.
func (b *builder) expander(defs map[string]macro, m *jobMacros) *expander {
	return &expander{defs: defs, job: m, getenv: b.env.Getenv, rand: b.env.Rand, dir: b.dir, preset: b.preset}
}

// setCustom records a custom attribute, replacing an earlier one of the same
// name. It never modifies customs, which earlier queue statements share.
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
	static := b.expander(defs, &jobMacros{cluster: b.cluster})
	rows, count, err := q.rows(static, b.dir, b.env.Command)
	if err != nil {
		return nil, errorf(st.file, st.line, "%w", err)
	}
	if len(rows) == 0 || count == 0 {
		return ads, nil
	}
	at := macro{file: st.file, line: st.line}
	p := plan{queue: at, exe: at, req: at, base: b.template.clone()}
	dyn := dependence{defs: defs, vars: q.vars, memo: make(map[string]bool)}
	for _, name := range commandOrder {
		def, ok := defs[name]
		fromVar := q.hasVar(name)
		if fromVar {
			def, ok = at, true
		}
		if !ok {
			continue
		}
		switch name {
		case "executable":
			p.exe = def
		case "requirements":
			p.req = def
		}
		if fromVar || dyn.of(def.value) {
			p.dynamic = append(p.dynamic, name)
			continue
		}
		if err := b.apply(p.base, static, name, def); err != nil {
			return nil, err
		}
	}
	// Finishing the base job adds the attributes finish sets, so that the
	// jobs' copies overwrite them in place instead of growing. It fails when
	// the base lacks what the jobs provide, such as the executable; each
	// job's own finish then reports any real problem.
	_ = b.finish(p.base, &p)
	m := &jobMacros{cluster: b.cluster, hasJob: true, vars: q.vars}
	x := b.expander(defs, m)
	for r, row := range rows {
		for step := 0; step < count; step++ {
			m.proc, m.step, m.row, m.values = len(ads), step, r, row
			ad, err := b.job(&p, x, customs)
			if err != nil {
				return nil, err
			}
			ads = append(ads, ad)
		}
	}
	return ads, nil
}

// A plan is how the jobs of one queue statement are made: from a base job
// holding the commands that are the same for all of them, by applying the
// commands that depend on the job.
type plan struct {
	base            *job
	dynamic         []string // names of the commands to apply per job
	queue, exe, req macro    // where the queue statement, executable and requirements are, for messages
}

// apply expands and applies one command's definition to j.
func (b *builder) apply(j *job, x *expander, name string, def macro) error {
	v, err := x.expand(def.value)
	if err != nil {
		return errorf(def.file, def.line, "%s: %w", name, err)
	}
	if v = strings.TrimSpace(v); v == "" {
		return nil
	}
	if err := commands[name](j, name, v); err != nil {
		return errorf(def.file, def.line, "%w", err)
	}
	return nil
}

// job makes the ad of one job, whose macros x expands.
func (b *builder) job(p *plan, x *expander, customs []stmt) (*classad.ClassAd, error) {
	j := p.base.clone()
	for _, name := range p.dynamic {
		def := x.defs[name]
		if v, ok := x.job.varValue(name); ok {
			// A queue variable named like a command sets it, as in HTCondor.
			def = macro{value: v, file: p.queue.file, line: p.queue.line}
		}
		if err := b.apply(j, x, name, def); err != nil {
			return nil, err
		}
	}
	j.ad.SetInt("ProcId", int64(x.job.proc))
	if err := b.finish(j, p); err != nil {
		return nil, err
	}
	for _, c := range customs {
		v, err := x.expand(c.value)
		if err != nil {
			return nil, errorf(c.file, c.line, "%w", err)
		}
		v = strings.TrimSpace(v)
		e, err := j.expr("+"+c.name, v)
		if err != nil {
			return nil, errorf(c.file, c.line, "%w", err)
		}
		j.ad.Set(c.name, e)
	}
	return j.ad, nil
}

// dependence finds the values that differ between the jobs of one queue
// statement: those that refer, directly or through other macros, to a
// per-job macro or a queue variable.
type dependence struct {
	defs map[string]macro
	vars []string
	memo map[string]bool // by macro name; false while being visited
}

var perJobMacros = map[string]bool{"process": true, "procid": true, "step": true, "row": true, "itemindex": true}

// of reports whether value differs between jobs: it refers to a per-job
// macro, or draws a random number, which condor_submit does for each job.
func (d *dependence) of(value string) bool {
	if !strings.Contains(value, "$") {
		return false
	}
	if hasRandom(value) {
		return true
	}
	refs := make(map[string]bool)
	macroRefs(value, refs)
	for name := range refs {
		if d.name(name) {
			return true
		}
	}
	return false
}

func (d *dependence) name(name string) bool {
	if perJobMacros[name] || contains(d.vars, name) {
		return true
	}
	if v, ok := d.memo[name]; ok {
		return v
	}
	d.memo[name] = false
	def, ok := d.defs[name]
	v := ok && d.of(def.value)
	d.memo[name] = v
	return v
}

func (q *queueSpec) hasVar(name string) bool { return contains(q.vars, name) }

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
