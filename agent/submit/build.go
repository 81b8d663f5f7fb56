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
	template *job // defaults and the attributes common to the whole call

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
	b.arch, b.opsys = platform()
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
	static := &expander{defs: defs, job: &jobMacros{cluster: b.cluster}, getenv: b.env.Getenv}
	rows, count, err := q.rows(static, b.dir)
	if err != nil {
		return nil, b.errorf(st.line, "%w", err)
	}
	if len(rows) == 0 || count == 0 {
		return ads, nil
	}
	p := plan{queueLine: st.line, exeLine: st.line, reqLine: st.line, base: b.template.clone()}
	dyn := dependence{defs: defs, vars: q.vars, memo: make(map[string]bool)}
	for _, name := range commandOrder {
		def, ok := defs[name]
		fromVar := q.hasVar(name)
		if fromVar {
			def, ok = macro{line: st.line}, true
		}
		if !ok {
			continue
		}
		switch name {
		case "executable":
			p.exeLine = def.line
		case "requirements":
			p.reqLine = def.line
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
	x := &expander{defs: defs, job: m, getenv: b.env.Getenv}
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
	base                        *job
	dynamic                     []string // names of the commands to apply per job
	queueLine, exeLine, reqLine int
}

// apply expands and applies one command's definition to j.
func (b *builder) apply(j *job, x *expander, name string, def macro) error {
	v, err := x.expand(def.value)
	if err != nil {
		return b.errorf(def.line, "%s: %w", name, err)
	}
	if v = strings.TrimSpace(v); v == "" {
		return nil
	}
	if err := commands[name](j, name, v); err != nil {
		return b.errorf(def.line, "%w", err)
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
			def = macro{value: v, line: p.queueLine}
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
			return nil, b.errorf(c.line, "%w", err)
		}
		e, err := j.expr("+"+c.name, strings.TrimSpace(v))
		if err != nil {
			return nil, b.errorf(c.line, "%w", err)
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

var perJobMacros = map[string]bool{"process": true, "procid": true, "node": true, "step": true, "row": true, "itemindex": true}

func (d *dependence) of(value string) bool {
	if !strings.Contains(value, "$") {
		return false
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
