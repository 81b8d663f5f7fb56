package submit

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// A Description is a parsed and checked submit description. It is immutable
// and safe for concurrent use.
type Description struct {
	file     string
	stmts    []stmt
	warnings []*Error
}

type stmtKind uint8

const (
	assignStmt stmtKind = iota // name = value: a command or a macro
	customStmt                 // +Attr = expr or MY.Attr = expr
	queueStmt
)

type stmt struct {
	kind  stmtKind
	file  string // the file it was read from, for messages
	line  int
	name  string // lower case for assignments, as written for custom attributes
	as    string // the name as written
	value string // for assignments, with references to the earlier value replaced
	queue *queueSpec
}

// Parse reads and checks a whole description. filename names it in
// messages and need not exist. Parse reads the description as condor_submit
// does, from top to bottom: if conditions, include file names and error
// and warning messages see the macros defined above them and env's
// environment; included files are found relative to env.Dir, and included
// commands run only if env.Command is set. Commands whose values use
// macros are checked again, after expansion, by Jobs.
//
// Parse and Jobs read included, "from" and "matching" files with the
// caller's permissions and may quote them in errors and job ads, so only a
// process running as the submitting user (harrier submit) may read a
// description.
func Parse(src []byte, filename string, env Env) (*Description, error) {
	r := newReader(env, filename)
	if len(env.Defines) > 0 {
		if err := r.read([]byte(strings.Join(env.Defines, "\n")), "command line"); err != nil {
			return nil, err
		}
	}
	if err := r.read(bytes.TrimPrefix(src, []byte("\ufeff")), filename); err != nil { // editors may add a byte order mark
		return nil, err
	}
	if len(env.Append) > 0 {
		if err := r.appendLines(env.Append); err != nil {
			return nil, err
		}
	}
	d := &Description{file: filename, stmts: r.stmts, warnings: r.warnings}
	if err := d.check(r.refs); err != nil {
		return nil, err
	}
	return d, nil
}

// Warnings returns what the description's warning statements said, in
// order, each naming its file and line.
func (d *Description) Warnings() []*Error { return d.warnings }

// appendLines reads -append lines and moves their statements to just
// before the first queue statement read so far.
func (r *reader) appendLines(lines []string) error {
	n := len(r.stmts)
	if err := r.read([]byte(strings.Join(lines, "\n")), "-append"); err != nil {
		return err
	}
	added := append([]stmt(nil), r.stmts[n:]...)
	at := slices.IndexFunc(r.stmts[:n], func(st stmt) bool { return st.kind == queueStmt })
	if at < 0 {
		return nil // the description has no queue statement: they stay last
	}
	if i := slices.IndexFunc(added, func(st stmt) bool { return st.kind == queueStmt }); i >= 0 {
		return &Error{File: added[i].file, Line: added[i].line, Err: fmt.Errorf("a queue statement on the command line, but %s has its own at line %d", r.stmts[at].file, r.stmts[at].line)}
	}
	r.stmts = slices.Insert(r.stmts[:n], at, added...)
	return nil
}

// maxIncludeDepth bounds nested include statements.
const maxIncludeDepth = 20

// A reader reads a description and the files it includes into statements.
type reader struct {
	env      Env
	defs     map[string]macro // definitions so far
	x        *expander        // over defs, for conditions, include names and messages
	stmts    []stmt
	warnings []*Error
	refs     map[string]bool // macros referred to anywhere
	depth    int             // of include statements
}

func newReader(env Env, filename string) *reader {
	dir, err := filepath.Abs(env.Dir)
	if err != nil {
		dir = env.Dir
	}
	r := &reader{env: env, defs: make(map[string]macro), refs: make(map[string]bool)}
	r.x = &expander{defs: r.defs, getenv: env.Getenv, rand: env.Rand, dir: dir, preset: presetMacros(dir, filename)}
	return r
}

// read reads the statements of one file.
func (r *reader) read(src []byte, file string) error {
	lines := splitLines(src)
	var conds conditionals
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		text := l.text
		// condor_submit ignores a ":" starting a line of an if body, which
		// hides the line from parsers older than if statements.
		if len(text) > 1 && text[0] == ':' && (conds.inside() || keywordIs(text[1:], "if")) {
			text = text[1:]
		}
		handled, err := conds.line(text, l.num, func(expr string) (bool, error) {
			macroRefs(expr, r.refs)
			if w, rest := firstWord(expr); strings.EqualFold(w, "defined") {
				r.refs[strings.ToLower(strings.TrimSpace(rest))] = true
			}
			return testCondition(expr, r.x)
		})
		if err != nil {
			return &Error{File: file, Line: l.num, Err: err}
		}
		if handled || !conds.enabled() {
			continue
		}
		lines[i].text = text
		used, err := r.statement(lines[i:], file)
		if err != nil {
			var e *Error
			if errors.As(err, &e) {
				return err
			}
			return &Error{File: file, Line: l.num, Err: err}
		}
		i += used - 1
	}
	if len(conds.frames) > 0 {
		return &Error{File: file, Line: conds.frames[len(conds.frames)-1].line, Err: errors.New("if without endif")}
	}
	return nil
}

func keywordIs(text, word string) bool {
	w, _ := keyword(text)
	return w == word
}

// A lineShape is a line cut as condor_submit cuts it: a first word, the
// words between it and the operator (include options, an error code, or
// the rest of a queue statement), the operator and the value.
type lineShape struct {
	name  string
	words string
	op    byte // '=', ':', '@' for "@=", or 0 for none
	value string
}

func shapeLine(text string) lineShape {
	var s lineShape
	i := strings.IndexAny(text, " \t=:")
	if i < 0 {
		s.name = text
		return s
	}
	s.name = text[:i]
	j := i
	for j < len(text) && isSpace(text[j]) {
		j++
	}
	start := j
	for j < len(text) && text[j] != '=' && text[j] != ':' && text[j] != '@' {
		j++
	}
	s.words = strings.TrimSpace(text[start:j])
	if j < len(text) {
		switch {
		case text[j] != '@':
			s.op = text[j]
			j++
		case j+1 < len(text) && text[j+1] == '=':
			s.op = '@'
			j += 2
		}
	}
	if s.op != 0 {
		s.value = strings.TrimSpace(text[j:])
	}
	return s
}

// statement reads the statement starting at lines[0] and reports how many
// lines it used (more than one for multi-line queue lists and values).
func (r *reader) statement(lines []srcLine, file string) (int, error) {
	l := lines[0]
	s := shapeLine(l.text)
	word := strings.ToLower(strings.TrimPrefix(s.name, "@")) // "@include" is "include", for parsers that predate it
	if s.op == ':' {
		switch word {
		case "include":
			return 1, r.include(s.words, s.value, file, l.num)
		case "error", "warning":
			msg, err := r.x.expand(s.value)
			if err != nil {
				return 0, err
			}
			macroRefs(s.value, r.refs)
			if word == "error" {
				return 0, fmt.Errorf("error: %s", msg)
			}
			r.warnings = append(r.warnings, &Error{File: file, Line: l.num, Err: fmt.Errorf("warning: %s", msg)})
			return 1, nil
		case "use":
			return 0, errors.New("use statements are not supported: Harrier has no submit templates")
		}
	}
	if s.words != "" || (s.op != '=' && s.op != '@') || strings.EqualFold(s.name, "queue") {
		if !strings.EqualFold(s.name, "queue") {
			return 0, fmt.Errorf("expected \"name = value\" or a queue statement, found %q", l.text)
		}
		q, used, err := parseQueue(lines)
		if err != nil {
			return 0, err
		}
		q.refs(r.refs)
		r.stmts = append(r.stmts, stmt{kind: queueStmt, file: file, line: l.num, queue: q})
		return used, nil
	}
	value, used := s.value, 1
	if s.op == '@' {
		var err error
		if value, used, err = hereValue(lines, s.value); err != nil {
			return 0, err
		}
	}
	if attr, ok := customName(s.name); ok {
		if !isIdent(attr) {
			return 0, fmt.Errorf("bad attribute name %q", s.name)
		}
		r.defs["my."+strings.ToLower(attr)] = macro{value: value, file: file, line: l.num}
		r.stmts = append(r.stmts, stmt{kind: customStmt, file: file, line: l.num, name: attr, value: value})
		return used, nil
	}
	if !isMacroName(s.name) {
		return 0, fmt.Errorf("bad command or macro name %q", s.name)
	}
	name := strings.ToLower(s.name)
	value, err := r.x.expandSelf(value, name)
	if err != nil {
		return 0, err
	}
	r.defs[name] = macro{value: value, file: file, line: l.num}
	r.stmts = append(r.stmts, stmt{kind: assignStmt, file: file, line: l.num, name: name, as: s.name, value: value})
	return used, nil
}

// hereValue reads a multi-line value, "name @=tag" followed by lines up to
// one that is "@tag"; the lines are joined with newlines.
func hereValue(lines []srcLine, tag string) (string, int, error) {
	var b strings.Builder
	for i := 1; i < len(lines); i++ {
		if lines[i].text == "@"+tag {
			return b.String(), i + 1, nil
		}
		if i > 1 {
			b.WriteByte('\n')
		}
		b.WriteString(lines[i].text)
	}
	return "", 0, fmt.Errorf("no line \"@%s\" ends this multi-line value", tag)
}

// customName reports the attribute named by "+Attr" or "MY.Attr".
func customName(name string) (string, bool) {
	if attr, ok := strings.CutPrefix(name, "+"); ok {
		return attr, true
	}
	if len(name) > 3 && strings.EqualFold(name[:3], "my.") {
		return name[3:], true
	}
	return "", false
}

// firstWord splits s into its first run of letters, digits and "_" and the
// rest.
func firstWord(s string) (word, rest string) {
	i := 0
	for i < len(s) && isWordByte(s[i]) {
		i++
	}
	return s[:i], s[i:]
}

func isIdentByte(c byte, notFirst bool) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || notFirst && '0' <= c && c <= '9'
}

// isIdent reports whether s is a ClassAd attribute name.
func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isIdentByte(s[i], i > 0) {
			return false
		}
	}
	return true
}

// check applies the checks that need the whole description: every
// assignment is a command or a macro, literal command values are valid,
// and something is queued.
func (d *Description) check(refs map[string]bool) error {
	for _, st := range d.stmts {
		switch st.kind {
		case assignStmt, customStmt:
			macroRefs(st.value, refs)
		}
	}
	queued := false
	for _, st := range d.stmts {
		var err error
		switch st.kind {
		case assignStmt:
			err = checkAssign(st, refs)
		case customStmt:
			if !strings.Contains(st.value, "$") {
				_, err = parseExpr(st.value, "+"+st.name)
			}
		case queueStmt:
			queued = true
			err = st.queue.check()
		}
		if err != nil {
			return &Error{File: st.file, Line: st.line, Err: err}
		}
	}
	if !queued {
		return &Error{File: d.file, Err: errors.New("no queue statement")}
	}
	return nil
}

// checkAssign checks one name = value line: see "Unknown commands" in the
// package documentation.
func checkAssign(st stmt, refs map[string]bool) error {
	cmd, ok := commands[st.name]
	if !ok {
		if known, err := refused(st.name, st.value); known {
			return err
		}
		if refs[st.name] || !isIdent(st.name) {
			return nil
		}
		near := nearestCommand(st.name)
		switch {
		case near != "":
			return fmt.Errorf("unknown command %q (did you mean %q?)", st.as, near)
		case st.as == st.name:
			return fmt.Errorf("unknown command %q", st.as)
		}
		return nil
	}
	if st.value == "" || strings.Contains(st.value, "$") {
		return nil
	}
	return cmd(newJob(), st.name, st.value)
}
