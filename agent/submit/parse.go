package submit

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// A Description is a parsed and checked submit description. It is immutable
// and safe for concurrent use.
type Description struct {
	file  string
	stmts []stmt
}

type stmtKind uint8

const (
	assignStmt stmtKind = iota // name = value: a command or a macro
	customStmt                 // +Attr = expr or MY.Attr = expr
	queueStmt
)

type stmt struct {
	kind  stmtKind
	line  int
	name  string // lower case for assignments, as written for custom attributes
	as    string // the name as written
	value string
	queue *queueSpec
}

// Parse reads and checks a whole description. filename is used in error
// messages and need not exist. Commands whose values use macros are checked
// again, after expansion, by Jobs.
func Parse(src []byte, filename string) (*Description, error) {
	d := &Description{file: filename}
	lines := splitLines(bytes.TrimPrefix(src, []byte("\ufeff"))) // editors may add a byte order mark
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		st, used, err := parseStmt(lines[i:])
		if err != nil {
			return nil, &Error{File: filename, Line: l.num, Err: err}
		}
		i += used - 1
		d.stmts = append(d.stmts, st)
	}
	if err := d.check(); err != nil {
		return nil, err
	}
	return d, nil
}

// statementWords are the condor_submit keywords that start a statement
// rather than an assignment; only queue is supported.
var statementWords = map[string]bool{
	"queue": true, "if": true, "elif": true, "else": true, "endif": true,
	"include": true, "error": true, "warning": true,
}

// parseStmt parses the statement starting at lines[0] and reports how many
// lines it used (more than one for multi-line queue lists).
func parseStmt(lines []srcLine) (stmt, int, error) {
	l := lines[0]
	word, rest := leadingWord(l.text)
	if kw := strings.ToLower(word); statementWords[kw] && !strings.HasPrefix(strings.TrimSpace(rest), "=") {
		if kw != "queue" {
			return stmt{}, 0, fmt.Errorf("%q statements are not supported", kw)
		}
		q, used, err := parseQueue(lines)
		if err != nil {
			return stmt{}, 0, err
		}
		return stmt{kind: queueStmt, line: l.num, queue: q}, used, nil
	}
	name, value, ok := strings.Cut(l.text, "=")
	if !ok {
		return stmt{}, 0, fmt.Errorf("expected \"name = value\" or a queue statement, found %q", l.text)
	}
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	if attr, ok := customName(name); ok {
		if !isIdent(attr) {
			return stmt{}, 0, fmt.Errorf("bad attribute name %q", name)
		}
		return stmt{kind: customStmt, line: l.num, name: attr, value: value}, 1, nil
	}
	if !isIdent(name) {
		return stmt{}, 0, fmt.Errorf("bad command or macro name %q", name)
	}
	return stmt{kind: assignStmt, line: l.num, name: strings.ToLower(name), as: name, value: value}, 1, nil
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

// leadingWord splits s into its first run of identifier characters and the rest.
func leadingWord(s string) (word, rest string) {
	i := 0
	for i < len(s) && isIdentByte(s[i], i > 0) {
		i++
	}
	return s[:i], s[i:]
}

func isIdentByte(c byte, notFirst bool) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || notFirst && '0' <= c && c <= '9'
}

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

// check applies the checks that need the whole file: every assignment is a
// command or a macro, literal command values are valid, and something is
// queued.
func (d *Description) check() error {
	refs := make(map[string]bool)
	for _, st := range d.stmts {
		switch st.kind {
		case assignStmt, customStmt:
			macroRefs(st.value, refs)
		case queueStmt:
			st.queue.refs(refs)
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
			return &Error{File: d.file, Line: st.line, Err: err}
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
		if why, ok := unsupported[st.name]; ok {
			return fmt.Errorf("command %q is not supported: %s", st.name, why)
		}
		if refs[st.name] {
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
