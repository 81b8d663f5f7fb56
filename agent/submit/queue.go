package submit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"

	"harrier.dev/harrier/classad"
)

type queueMode uint8

const (
	queueCount    queueMode = iota // queue [N]
	queueIn                        // queue [N] [VAR] in (items)
	queueMatching                  // queue [N] [VAR] matching [files|dirs] patterns
	queueFrom                      // queue [N] [VARS] from FILE | (rows)
)

var queueKeywords = map[string]queueMode{"in": queueIn, "matching": queueMatching, "from": queueFrom}

type matchKind uint8

const (
	matchAny matchKind = iota
	matchFiles
	matchDirs
)

// A queueSpec is a parsed queue statement. Its count, items, patterns and
// file name may hold macros, expanded when jobs are made.
type queueSpec struct {
	count   string   // "" means 1
	vars    []string // lower case; Item if none were given; none for queue [N]
	mode    queueMode
	match   matchKind
	slice   *pySlice
	items   []string // in: items; matching: patterns; from: inline rows
	file    string   // from FILE, or from COMMAND |
	command bool     // from COMMAND |
	inline  bool     // from (rows)
}

var errMalformedQueue = errors.New("malformed queue statement")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errMalformedQueue, fmt.Sprintf(format, args...))
}

// parseQueue parses the queue statement starting at lines[0], which may
// continue on following lines with a parenthesised list, and reports how many
// lines it used.
func parseQueue(lines []srcLine) (*queueSpec, int, error) {
	rest := strings.TrimSpace(lines[0].text[len("queue"):])
	q := &queueSpec{}
	kwAt, kw := findQueueKeyword(rest)
	left := rest
	if kwAt >= 0 {
		left = rest[:kwAt]
	}
	fields := strings.FieldsFunc(left, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
	if len(fields) > 0 && (fields[0][0] == '$' || '0' <= fields[0][0] && fields[0][0] <= '9') {
		q.count, fields = fields[0], fields[1:]
	}
	if kwAt < 0 {
		if len(fields) > 0 {
			return nil, 0, malformed("unexpected %q (want queue [N] [VAR in|matching|from ...])", fields[0])
		}
		return q, 1, nil
	}
	q.mode = queueKeywords[kw]
	q.vars = []string{"item"}
	if len(fields) > 0 {
		q.vars = q.vars[:0]
		for _, v := range fields {
			if !isIdent(v) {
				return nil, 0, malformed("bad variable name %q", v)
			}
			q.vars = append(q.vars, strings.ToLower(v))
		}
	}
	if len(q.vars) > 1 && q.mode != queueFrom {
		return nil, 0, malformed("only \"from\" can set several variables")
	}
	right := strings.TrimSpace(rest[kwAt+len(kw):])
	if strings.HasPrefix(right, "[") {
		end := strings.IndexByte(right, ']')
		if end < 0 {
			return nil, 0, malformed("unclosed slice %q", right)
		}
		s, err := parseSlice(right[1:end])
		if err != nil {
			return nil, 0, malformed("%v", err)
		}
		q.slice, right = s, strings.TrimSpace(right[end+1:])
	}
	if q.mode == queueMatching {
		w, after := firstWord(right)
		switch strings.ToLower(w) {
		case "files":
			q.match, right = matchFiles, strings.TrimSpace(after)
		case "dirs":
			q.match, right = matchDirs, strings.TrimSpace(after)
		}
	}
	used := 1
	var content []string
	if strings.HasPrefix(right, "(") {
		var err error
		content, used, err = parenList(right[1:], lines)
		if err != nil {
			return nil, 0, err
		}
	} else if right != "" {
		content = []string{right}
	}
	switch q.mode {
	case queueIn:
		q.items = splitItems(content)
	case queueMatching:
		q.items = splitItems(content)
		if len(q.items) == 0 {
			return nil, 0, malformed("\"matching\" needs at least one pattern")
		}
	case queueFrom:
		switch {
		case strings.HasPrefix(right, "("):
			q.inline, q.items = true, content
		case right == "":
			return nil, 0, malformed("\"from\" needs a file name or a parenthesised list")
		case strings.HasSuffix(right, "|"):
			q.command, q.file = true, strings.TrimSpace(strings.TrimRight(right, "| \t"))
			if q.file == "" {
				return nil, 0, malformed("\"from\" needs a command before \"|\"")
			}
		default:
			q.file = right
		}
	}
	return q, used, nil
}

// findQueueKeyword finds the first word "in", "matching" or "from" of a queue
// statement's arguments, before any parenthesis.
func findQueueKeyword(s string) (int, string) {
	for i := 0; i < len(s); i++ {
		if s[i] == '(' {
			break
		}
		if i > 0 && s[i-1] != ' ' && s[i-1] != '\t' && s[i-1] != ',' {
			continue
		}
		w, _ := firstWord(s[i:])
		if _, ok := queueKeywords[strings.ToLower(w)]; ok {
			if j := i + len(w); j == len(s) || strings.ContainsRune(" \t([", rune(s[j])) {
				return i, s[i : i+len(w)]
			}
		}
	}
	return -1, ""
}

// parenList collects the contents of a parenthesised list whose "(" has just
// been consumed; first is the rest of the queue line. A list left open on the
// queue line continues until a line ending in ")".
func parenList(first string, lines []srcLine) ([]string, int, error) {
	if end := strings.LastIndexByte(first, ')'); end >= 0 {
		if after := strings.TrimSpace(first[end+1:]); after != "" {
			return nil, 0, malformed("unexpected %q after the list", after)
		}
		return []string{first[:end]}, 1, nil
	}
	var content []string
	if t := strings.TrimSpace(first); t != "" {
		content = append(content, t)
	}
	for i := 1; i < len(lines); i++ {
		t := lines[i].text
		if before, ok := strings.CutSuffix(t, ")"); ok {
			if t := strings.TrimSpace(before); t != "" {
				content = append(content, t)
			}
			return content, i + 1, nil
		}
		content = append(content, t)
	}
	return nil, 0, malformed("unbalanced parentheses: the list is never closed with \")\"")
}

// splitItems splits list lines into items separated by commas or white space.
func splitItems(content []string) []string {
	var items []string
	for _, c := range content {
		items = append(items, strings.FieldsFunc(c, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })...)
	}
	return items
}

// refs adds the macros the statement refers to.
func (q *queueSpec) refs(refs map[string]bool) {
	macroRefs(q.count, refs)
	macroRefs(q.file, refs)
	for _, it := range q.items {
		macroRefs(it, refs)
	}
}

// check checks what can be checked before macros are expanded.
func (q *queueSpec) check() error {
	if q.count == "" || strings.Contains(q.count, "$") {
		return nil
	}
	_, err := parseCount(q.count)
	return err
}

func parseCount(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		e, perr := classad.ParseExpr(s)
		if perr != nil {
			return 0, malformed("bad count %q", s)
		}
		v, ok := classad.New().EvalExpr(e, nil).IntValue()
		if !ok {
			return 0, malformed("count %q is not an integer", s)
		}
		n = int(v)
	}
	if n < 0 {
		return 0, malformed("negative count %d", n)
	}
	return n, nil
}

// rows returns the values of the statement's variables for each item, and
// the number of jobs to queue per item. Macros are expanded by x; files are
// found relative to dir, and an items command is run with run.
func (q *queueSpec) rows(x *expander, dir string, run func(string, []string) ([]byte, error)) (rows [][]string, count int, err error) {
	count = 1
	if q.count != "" {
		s, err := x.expand(q.count)
		if err != nil {
			return nil, 0, err
		}
		if count, err = parseCount(strings.TrimSpace(s)); err != nil {
			return nil, 0, err
		}
	}
	var lines []string
	switch q.mode {
	case queueCount:
		return [][]string{nil}, count, nil
	case queueIn:
		lines = q.items
	case queueMatching:
		if lines, err = q.glob(x, dir); err != nil {
			return nil, 0, err
		}
	case queueFrom:
		if lines, err = q.fromLines(x, dir, run); err != nil {
			return nil, 0, err
		}
	}
	if q.slice != nil {
		lines = q.slice.apply(lines)
	}
	rows = make([][]string, len(lines))
	for i, l := range lines {
		rows[i] = splitRow(l, len(q.vars))
	}
	return rows, count, nil
}

func (q *queueSpec) glob(x *expander, dir string) ([]string, error) {
	var out []string
	seen := make(map[string]bool)
	for _, p := range q.items {
		p, err := x.expand(p)
		if err != nil {
			return nil, err
		}
		full := p
		if !filepath.IsAbs(p) {
			full = filepath.Join(dir, p)
		}
		matches, err := filepath.Glob(full)
		if err != nil {
			return nil, malformed("bad pattern %q: %v", p, err)
		}
		for _, m := range matches {
			if q.match != matchAny {
				fi, err := os.Stat(m)
				if err != nil || fi.IsDir() != (q.match == matchDirs) {
					continue
				}
			}
			if !filepath.IsAbs(p) {
				if m, err = filepath.Rel(dir, m); err != nil {
					return nil, fmt.Errorf("matching %q: %w", p, err)
				}
			}
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	return out, nil
}

// fromLines returns the rows of "from", skipping blank and comment lines.
func (q *queueSpec) fromLines(x *expander, dir string, run func(string, []string) ([]byte, error)) ([]string, error) {
	lines := q.items
	if q.command {
		cmdline, err := x.expand(q.file)
		if err != nil {
			return nil, err
		}
		out, err := runCommand(run, dir, cmdline)
		if err != nil {
			return nil, fmt.Errorf("queue from %s |: %w", cmdline, err)
		}
		lines = strings.Split(string(out), "\n")
	} else if !q.inline {
		name, err := x.expand(q.file)
		if err != nil {
			return nil, err
		}
		if !filepath.IsAbs(name) {
			name = filepath.Join(dir, name)
		}
		data, err := os.ReadFile(name)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("queue from %s: no such file", name)
		}
		if err != nil {
			return nil, fmt.Errorf("queue from: %w", err)
		}
		lines = strings.Split(string(data), "\n")
	}
	var out []string
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" && l[0] != '#' {
			out = append(out, l)
		}
	}
	return out, nil
}

// splitRow splits a row into n values: each but the last ends at a comma or
// white space, and the last takes the rest of the row.
func splitRow(row string, n int) []string {
	out := make([]string, n)
	rest := strings.TrimSpace(row)
	for i := 0; i < n-1; i++ {
		k := strings.IndexFunc(rest, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
		if k < 0 {
			out[i], rest = rest, ""
			continue
		}
		out[i] = rest[:k]
		rest = strings.TrimSpace(rest[k:])
		rest = strings.TrimSpace(strings.TrimPrefix(rest, ","))
	}
	out[n-1] = rest
	return out
}
