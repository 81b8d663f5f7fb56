package submit

import (
	"errors"
	"strconv"
	"strings"
)

// maxMacroDepth bounds nested expansions: a function argument that names a
// macro is expanded on its own, and a macro whose value calls a function on
// itself would otherwise recurse for ever.
const maxMacroDepth = 32

// maxSubstitutions bounds the references one expansion may replace, which
// catches macros that refer to each other in a cycle without growing.
const maxSubstitutions = 1 << 20

// maxExpansion bounds the length of an expanded value, which catches macros
// that double at each level of nesting.
const maxExpansion = 1 << 20

var (
	errMacroLoop = errors.New("macro expansion does not end (do macros refer to each other?)")
	errMacroSize = errors.New("macro expansion longer than 1 MiB")
)

// A macro is a definition in effect: its value, with references to its own
// earlier value already replaced, and where it was made.
type macro struct {
	value string
	file  string
	line  int
}

// jobMacros are the macros HTCondor defines for each job.
type jobMacros struct {
	cluster int
	proc    int
	step    int
	row     int
	hasJob  bool     // proc, step, row and vars are set
	vars    []string // queue variable names, lower case
	values  []string
}

// fixed returns the value of a per-job macro that a definition in the file
// cannot change: Cluster and Process, and the queue variables. name may be
// in any case.
func (m *jobMacros) fixed(name string) (string, bool) {
	if m == nil {
		return "", false
	}
	if equalFold(name, "cluster") || equalFold(name, "clusterid") {
		return strconv.Itoa(m.cluster), true
	}
	if !m.hasJob {
		return "", false
	}
	if equalFold(name, "process") || equalFold(name, "procid") {
		return strconv.Itoa(m.proc), true
	}
	return m.varValue(name)
}

// automatic returns the value of a per-job macro that a definition in the
// file overrides, as the manual says of Step, ItemIndex, Row and Node.
func (m *jobMacros) automatic(name string) (string, bool) {
	if m == nil || !m.hasJob {
		return "", false
	}
	switch {
	case equalFold(name, "step"):
		return strconv.Itoa(m.step), true
	case equalFold(name, "row"), equalFold(name, "itemindex"):
		return strconv.Itoa(m.row), true
	case equalFold(name, "node"): // set only for the parallel universe
		return "", true
	}
	return "", false
}

// varValue returns the value of the queue variable name (any case) for
// this job.
func (m *jobMacros) varValue(name string) (string, bool) {
	for i, v := range m.vars {
		if equalFold(name, v) {
			return m.values[i], true
		}
	}
	return "", false
}

// An expander expands macro references in values, with the definitions in
// defs, the per-job macros of job (nil while the file is read) and the
// variables condor_submit defines before reading a file.
type expander struct {
	defs   map[string]macro
	job    *jobMacros
	getenv func(string) (string, bool)
	rand   func(int) int
	dir    string            // the submit directory, for $Ff
	preset map[string]string // ARCH, OPSYS, ... by lower-case name
	budget int               // substitutions left in the current expansion
}

// fullExpansion replaces every reference but $(DOLLAR), which stands for a
// dollar sign once everything else is expanded.
var fullExpansion = refFilter{mode: skipDollar}

// expand returns s with its macro references replaced and $(DOLLAR) turned
// into "$".
func (x *expander) expand(s string) (string, error) {
	if strings.IndexByte(s, '$') < 0 {
		return s, nil
	}
	x.budget = maxSubstitutions
	v, err := x.rewrite(s, fullExpansion, 0)
	if err != nil {
		return "", err
	}
	return dollars(v), nil
}

// expandSelf returns the value of a definition of name with its references
// to name, which mean the earlier value, replaced; other references are
// left for when the value is used. This is how "args = $(args) -v" grows a
// value.
func (x *expander) expandSelf(s, name string) (string, error) {
	if strings.IndexByte(s, '$') < 0 {
		return s, nil
	}
	x.budget = maxSubstitutions
	return x.rewrite(s, refFilter{mode: onlySelf, self: name}, 0)
}

// rewrite replaces the references f accepts, as condor_submit does: a
// replacement is read again from its start, so references in a macro's
// value are expanded in turn, and text before a replacement is never read
// again. A replacement without "$" cannot start a reference, so it is
// copied out at once; one with "$" sends the rest of the work to a gap
// buffer.
func (x *expander) rewrite(s string, f refFilter, depth int) (string, error) {
	if strings.IndexByte(s, '$') < 0 {
		return s, nil
	}
	if depth > maxMacroDepth {
		return "", errMacroLoop
	}
	var out strings.Builder
	done := 0 // s[:done] is in out
	for {
		r, ok := nextRef(s, done, f)
		if !ok {
			break
		}
		repl, err := x.replace(&r, depth)
		if err != nil {
			return "", err
		}
		if out.Cap() == 0 {
			out.Grow(len(s) + len(repl))
		}
		out.WriteString(s[done:r.start])
		if strings.IndexByte(repl, '$') >= 0 {
			return x.rewriteBuffer(&out, repl, s[r.end:], f, depth)
		}
		out.WriteString(repl)
		done = r.end
		if out.Len()+len(s)-done > maxExpansion {
			return "", errMacroSize
		}
	}
	if done == 0 {
		return s, nil
	}
	out.WriteString(s[done:])
	return out.String(), nil
}

// rewriteBuffer goes on with rewrite over repl followed by rest, in a gap
// buffer so that each replacement costs only its own length.
func (x *expander) rewriteBuffer(out *strings.Builder, repl, rest string, f refFilter, depth int) (string, error) {
	g := gapBuffer{buf: make([]byte, 0, len(repl)+len(rest))}
	g.buf = append(append(g.buf, repl...), rest...)
	for {
		text := g.text()
		if out.Len()+len(text) > maxExpansion {
			return "", errMacroSize
		}
		r, ok := nextRef(text, 0, f)
		if !ok {
			out.Write(text)
			return out.String(), nil
		}
		out.Write(text[:r.start])
		g.skip(r.start)
		repl, err := x.replace(&r, depth)
		if err != nil {
			return "", err
		}
		g.replace(r.end-r.start, repl)
	}
}

// replace counts one substitution against the budget and returns the
// replacement of r.
func (x *expander) replace(r *ref, depth int) (string, error) {
	if x.budget--; x.budget < 0 {
		return "", errMacroLoop
	}
	return x.eval(r, depth)
}

// dollars turns each $(DOLLAR) into "$", reading again from each one so
// that, as in condor_submit, "$(DOLLAR)$(DOLLAR)(X)" leaves "$$(DOLLAR)(X)".
func dollars(s string) string {
	r, ok := nextRef(s, 0, refFilter{mode: onlyDollar})
	if !ok {
		return s
	}
	var out strings.Builder
	out.WriteString(s[:r.start])
	g := gapBuffer{buf: []byte(s[r.end-1:])} // room for the "$" before the rest
	g.buf[0] = '$'
	for {
		text := g.text()
		r, ok := nextRef(text, 0, refFilter{mode: onlyDollar})
		if !ok {
			out.Write(text)
			return out.String()
		}
		out.Write(text[:r.start])
		g.skip(r.start)
		g.replace(r.end-r.start, "$")
	}
}

// lookup returns the value of the macro name, in any case.
func (x *expander) lookup(name string) (string, bool) {
	if v, ok := x.job.fixed(name); ok {
		return v, true
	}
	key := name
	if hasUpper(name) {
		key = strings.ToLower(name)
	}
	if m, ok := x.defs[key]; ok {
		return m.value, true
	}
	if v, ok := x.job.automatic(name); ok {
		return v, true
	}
	v, ok := x.preset[key]
	return v, ok
}

func hasUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return true
		}
	}
	return false
}

// A gapBuffer holds the text still to be read, buf[p:], with room before p
// so that replacing its start costs only the replacement.
type gapBuffer struct {
	buf []byte
	p   int
}

func (g *gapBuffer) text() []byte { return g.buf[g.p:] }
func (g *gapBuffer) skip(n int)   { g.p += n }

// replace replaces the first n bytes of the text with repl.
func (g *gapBuffer) replace(n int, repl string) {
	end := g.p + n
	if len(repl) <= end {
		g.p = end - len(repl)
		copy(g.buf[g.p:], repl)
		return
	}
	rest := g.buf[end:]
	room := len(repl) + len(rest)
	buf := make([]byte, room+len(repl)+len(rest))
	copy(buf[room:], repl)
	copy(buf[room+len(repl):], rest)
	g.buf, g.p = buf, room
}

// macroRefs adds to refs the (lower-case) names of the macros s refers to,
// including those a function takes as its argument.
func macroRefs(s string, refs map[string]bool) {
	if strings.IndexByte(s, '$') < 0 {
		return
	}
	for i := 0; ; {
		r, ok := nextRef(s, i, refFilter{})
		if !ok {
			return
		}
		i = r.end
		arg, _, _ := strings.Cut(r.body, ",")
		switch r.kind {
		case refMacro:
			refs[strings.ToLower(r.name())] = true
			if def, ok := r.def(); ok {
				macroRefs(def, refs)
			}
		case refInt, refReal, refString, refSubstr, refFile, refBasename, refDirname:
			refs[strings.ToLower(strings.TrimSpace(arg))] = true
		case refEval:
			refs[strings.ToLower(r.body)] = true
		case refRandomChoice:
			if !strings.Contains(r.body, ",") {
				refs[strings.ToLower(strings.TrimSpace(r.body))] = true
			}
		case refChoice:
			refs[strings.ToLower(strings.TrimSpace(arg))] = true
			if items := strings.Split(r.body, ","); len(items) == 2 {
				refs[strings.ToLower(strings.TrimSpace(items[1]))] = true
			}
		}
	}
}

// hasRandom reports whether s calls $RANDOM_CHOICE or $RANDOM_INTEGER,
// whose value differs from job to job.
func hasRandom(s string) bool {
	if !strings.Contains(s, "$RANDOM_") {
		return false
	}
	for i := 0; ; {
		r, ok := nextRef(s, i, refFilter{})
		if !ok {
			return false
		}
		if r.kind == refRandomChoice || r.kind == refRandomInteger {
			return true
		}
		i = r.end
	}
}
