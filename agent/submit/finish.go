package submit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/jobargs"
)

// finish sets the attributes derived from several commands or from the
// file system: paths, environment, requirements, hold, disk and retries.
func (b *builder) finish(j *job, p *plan) error {
	ad := j.ad
	iwd := b.dir
	if j.iwd != "" {
		iwd, _ = b.iwd.resolve(b.dir, j.iwd)
	}
	ad.Set("Iwd", b.iwd.literal(iwd))
	if j.exe == "" {
		return errorf(p.queue.file, p.queue.line, "no executable given")
	}
	cmd, e := b.cmd.resolve(b.dir, j.exe)
	// An executable that is not transferred is a program of the execute
	// machine: nothing to check here.
	if transferExe, _ := ad.EvalBool("TransferExecutable"); !j.skipChecks && transferExe {
		if err := b.checkExecutable(cmd); err != nil {
			return errorf(p.exe.file, p.exe.line, "%w", err)
		}
	}
	ad.Set("Cmd", e)
	in := b.setPath(ad, "In", &b.in, iwd, j.input)
	b.setPath(ad, "Out", &b.out, iwd, j.output)
	b.setPath(ad, "Err", &b.err, iwd, j.errPath)
	b.setPath(ad, "UserLog", &b.log, iwd, j.log)
	ad.Set("Environment", b.envMemo.get(b.env.Environ, j.getenv, j.env))
	if err := b.containerImage(j, iwd); err != nil {
		return errorf(p.queue.file, p.queue.line, "%w", err)
	}
	if err := j.finishGPUs(); err != nil {
		return err
	}
	// A job is charged to its owner within its accounting group.
	if u, ok := ad.EvalString("AcctGroupUser"); ok && u != b.env.Owner {
		return errorf(p.queue.file, p.queue.line, "accounting_group_user %q: a job is charged to its owner, %s", u, b.env.Owner)
	}
	if err := finishTransfer(j); err != nil {
		return errorf(p.queue.file, p.queue.line, "%w", err)
	}
	if err := b.requirements(j); err != nil {
		return errorf(p.req.file, p.req.line, "%w", err)
	}
	if j.hold {
		ad.SetInt("JobStatus", statusHeld)
		ad.SetString("HoldReason", "submitted on hold at user's request")
		ad.SetInt("HoldReasonCode", holdCodeSubmittedOnHold)
		ad.SetInt("HoldReasonSubCode", 0)
	} else if _, held := ad.Lookup("HoldReason"); held {
		// The base job was held and this job's hold command says not.
		ad.SetInt("JobStatus", statusIdle)
		for _, a := range []string{"HoldReason", "HoldReasonCode", "HoldReasonSubCode"} {
			ad.Delete(a)
		}
	}
	if j.requestDisk {
		ad.Delete("DiskUsage") // left by the base job, which did not ask for disk
	} else {
		usage, request := b.disk.get(b, cmd, in)
		ad.Set("DiskUsage", usage)
		ad.Set("RequestDisk", request)
	}
	return b.retryPolicy(j)
}

// retryPolicy turns the retry commands into the OnExitRemove expression
// condor_submit makes of them: the job leaves the queue once it has run
// more than JobMaxRetries times, exits with its success code, or meets
// retry_until (an exit code, or an expression); the job's own
// on_exit_remove, if any, is or'ed in. The expression is built from the
// commands, not from the ad, which for a job of a queue statement is a
// copy of one finished already.
func (b *builder) retryPolicy(j *job) error {
	if !j.retries {
		return nil
	}
	ad := j.ad
	if _, ok := ad.Lookup("JobMaxRetries"); !ok {
		ad.SetInt("JobMaxRetries", defaultMaxRetries)
	}
	src := fmt.Sprintf("NumJobCompletions > JobMaxRetries || ExitCode is %d", j.successCode)
	if !j.retryUntil.IsZero() {
		// setRetryUntil let only an integer or a boolean literal through.
		v, literal := j.retryUntil.AsLiteral()
		switch {
		case literal && v.Kind() == classad.IntKind:
			code, _ := v.IntValue()
			src += fmt.Sprintf(" || ExitCode is %d", code)
		case literal:
			src += " || " + j.retryUntil.String()
		default:
			src += " || (" + j.retryUntil.String() + ")"
		}
	}
	if !j.onExitRemove.IsZero() {
		src += " || (" + j.onExitRemove.String() + ")"
	}
	e, err := j.expr("on_exit_remove", src)
	if err != nil {
		return err
	}
	ad.Set("OnExitRemove", e)
	return nil
}

// setPath sets attr to path made absolute against iwd, if path is set, and
// returns the absolute path.
func (b *builder) setPath(ad *classad.ClassAd, attr string, m *pathMemo, iwd, path string) string {
	if path == "" {
		return ""
	}
	abs, e := m.resolve(iwd, path)
	ad.Set(attr, e)
	return abs
}

// A pathMemo remembers the last path it made absolute, since most jobs of a
// cluster share most of their paths.
type pathMemo struct {
	base, rel, abs string
	e              classad.Expr
}

// resolve returns rel made absolute against base, and as a string literal.
func (m *pathMemo) resolve(base, rel string) (string, classad.Expr) {
	if m.e.IsZero() || m.base != base || m.rel != rel {
		m.base, m.rel, m.abs = base, rel, absJoin(base, rel)
		m.e = classad.Literal(classad.String(m.abs))
	}
	return m.abs, m.e
}

// literal returns abs as a string literal, reusing the last one made.
func (m *pathMemo) literal(abs string) classad.Expr {
	if m.e.IsZero() || m.abs != abs {
		m.base, m.rel, m.abs = "", "", abs
		m.e = classad.Literal(classad.String(abs))
	}
	return m.e
}

// An envMemo remembers the last Environment it made. Jobs share the slices
// of the base job unless their environment commands depend on the job.
type envMemo struct {
	getenv, explicit []string
	e                classad.Expr
}

func (m *envMemo) get(environ, getenv, explicit []string) classad.Expr {
	if m.e.IsZero() || !sameSlice(m.getenv, getenv) || !sameSlice(m.explicit, explicit) {
		m.getenv, m.explicit = getenv, explicit
		m.e = classad.Literal(classad.String(jobargs.Join(mergeEnv(environ, getenv, explicit))))
	}
	return m.e
}

func sameSlice(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// A diskMemo remembers the last default disk request it computed.
type diskMemo struct {
	cmd, in        string
	usage, request classad.Expr
}

// get returns DiskUsage and RequestDisk, in KiB, for a job that did not ask
// for disk: the size of its executable and input, as HTCondor estimates it.
func (m *diskMemo) get(b *builder, cmd, in string) (usage, request classad.Expr) {
	if m.usage.IsZero() || m.cmd != cmd || m.in != in {
		kib := (b.size(cmd) + b.size(in) + 1023) / 1024
		m.cmd, m.in = cmd, in
		m.usage = classad.Literal(classad.Int(kib))
		m.request = classad.Literal(classad.Int(max(kib, 1)))
	}
	return m.usage, m.request
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
	if path == "" {
		return 0
	}
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
// clauses condor_submit adds for attributes the expression does not
// mention: Arch, OpSys, Disk, Memory and Cpus, and for a job that may be
// checkpointed its checkpoint's platform.
func (b *builder) requirements(j *job) error {
	plugins := pluginClauses(j)
	ckpt := "no"
	if want, ok := j.ad.EvalBool("WantCheckpoint"); !ok || want {
		ckpt = "yes"
	}
	src := j.requirements + "\x00" + j.universe + "\x00" + strings.Join(gpuClauses(j, nil), "\x00") + "\x00" + strings.Join(plugins, "\x00") + "\x00" + ckpt
	if !b.reqExpr.IsZero() && b.reqSrc == src {
		j.ad.Set("Requirements", b.reqExpr)
		return nil
	}
	mentioned := make(map[string]bool)
	for _, w := range identifiers(j.requirements) {
		mentioned[strings.ToLower(w)] = true
	}
	var parts []string
	if j.requirements != "" {
		parts = append(parts, "("+j.requirements+")")
	}
	switch {
	case j.universe == "docker" && !mentioned["hasdocker"]:
		parts = append(parts, "(TARGET.HasDocker)")
	case j.universe == "container" && !mentioned["hascontainer"]:
		parts = append(parts, "(TARGET.HasContainer)")
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
	if !mentioned["cpus"] {
		parts = append(parts, "(TARGET.Cpus >= RequestCpus)")
	}
	parts = append(parts, gpuClauses(j, mentioned)...)
	if !mentioned["hasfiletransferpluginmethods"] {
		parts = append(parts, plugins...)
	}
	// A checkpointed job goes on only where its image can be restored:
	// a machine of the platform it was checkpointed on (HTCondor adds
	// the same clause for the jobs it checkpoints).
	if ckpt == "yes" && !mentioned["checkpointplatform"] && !mentioned["lastcheckpointplatform"] {
		parts = append(parts, "((MY.LastCheckpointPlatform =?= undefined) || (TARGET.CheckpointPlatform =?= MY.LastCheckpointPlatform))")
	}
	e, err := j.expr("requirements", strings.Join(parts, " && "))
	if err != nil {
		return err
	}
	b.reqSrc, b.reqExpr = src, e
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

// mergeEnv returns the job's environment: the variables of environ that
// the getenv match list imports, then the explicit entries, which override
// them.
func mergeEnv(environ, matchList, explicit []string) []string {
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
	if len(matchList) > 0 {
		for _, e := range environ {
			name, _, ok := strings.Cut(e, "=")
			if ok && name != "" && imports(matchList, name) {
				add(e)
			}
		}
	}
	for _, e := range explicit {
		add(e)
	}
	return out
}

// imports reports whether a getenv match list imports the variable name:
// some member matches it (any name, if every member rejects) and no "!"
// member does.
func imports(matchList []string, name string) bool {
	accepted, anyAccept := false, false
	for _, m := range matchList {
		if reject, ok := strings.CutPrefix(m, "!"); ok {
			if wildMatch(reject, name) {
				return false
			}
			continue
		}
		anyAccept = true
		accepted = accepted || wildMatch(m, name)
	}
	return accepted || !anyAccept
}

// wildMatch matches name against pattern, ignoring case, where "*" stands
// for any run of characters.
func wildMatch(pattern, name string) bool {
	pattern, name = strings.ToLower(pattern), strings.ToLower(name)
	first, rest, star := strings.Cut(pattern, "*")
	if !star {
		return pattern == name
	}
	if !strings.HasPrefix(name, first) {
		return false
	}
	name = name[len(first):]
	for {
		part, after, more := strings.Cut(rest, "*")
		if !more {
			return len(name) >= len(part) && strings.HasSuffix(name, part)
		}
		i := strings.Index(name, part)
		if i < 0 {
			return false
		}
		name, rest = name[i+len(part):], after
	}
}

// containerImage sets the attributes of a job in its own container
// image: WantContainer and ContainerImage, or WantDocker and DockerImage.
// container_image alone makes a container universe job, as in HTCondor.
// A container_image without docker:// is an OCI image layout directory
// or a docker-save tarball on this machine, named from the initial
// directory and recorded absolute; the starter reads it through the
// job's initial directory. A docker_image names an image in a registry.
func (b *builder) containerImage(j *job, iwd string) error {
	if j.universe == "" && j.image != "" {
		j.universe = "container"
	}
	switch {
	case j.universe == "":
		return nil
	case j.image == "" && j.universe == "docker":
		return errors.New("universe = docker needs docker_image")
	case j.image == "":
		return errors.New("universe = container needs container_image")
	}
	ref := j.image
	if j.universe == "container" && !strings.HasPrefix(ref, "docker://") {
		if !filepath.IsAbs(ref) {
			ref = filepath.Join(iwd, ref)
		}
		ref = filepath.Clean(ref)
		if !j.skipChecks {
			if _, err := os.Stat(ref); err != nil {
				return fmt.Errorf("container_image %s: %w", j.image, errors.Unwrap(err))
			}
		}
	}
	if j.universe == "docker" {
		j.ad.SetBool("WantDocker", true)
		j.ad.SetString("DockerImage", ref)
	} else {
		j.ad.SetBool("WantContainer", true)
		j.ad.SetString("ContainerImage", ref)
	}
	return nil
}
