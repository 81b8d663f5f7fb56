package submit

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"harrier.dev/harrier/classad"
)

// maxMacroDepth bounds nested expansion, which catches macros that refer to
// each other in a cycle.
const maxMacroDepth = 32

// maxExpansion bounds the length of an expanded value, which catches macros
// that double at each level of nesting.
const maxExpansion = 1 << 20

var (
	errMacroDepth = errors.New("macro expansion nested too deeply (do macros refer to each other?)")
	errMacroSize  = errors.New("macro expansion longer than 1 MiB")
)

// A macro is a definition in effect: its raw value and where it was made.
type macro struct {
	value string
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

func (m *jobMacros) lookup(name string) (string, bool) {
	if m == nil {
		return "", false
	}
	switch name {
	case "cluster", "clusterid":
		return strconv.Itoa(m.cluster), true
	}
	if !m.hasJob {
		return "", false
	}
	switch name {
	case "process", "procid", "node":
		return strconv.Itoa(m.proc), true
	case "step":
		return strconv.Itoa(m.step), true
	case "row", "itemindex":
		return strconv.Itoa(m.row), true
	}
	return m.varValue(name)
}

// varValue returns the value of the queue variable name for this job.
func (m *jobMacros) varValue(name string) (string, bool) {
	for i, v := range m.vars {
		if v == name {
			return m.values[i], true
		}
	}
	return "", false
}

// An expander expands macro references in command values.
type expander struct {
	defs   map[string]macro
	job    *jobMacros
	getenv func(string) (string, bool)
	// only, when set, restricts expansion to references to this one macro,
	// whose replacement is used as is; everything else is left alone. It
	// implements self-referencing definitions such as "args = $(args) -v".
	only string
}

// expand returns s with its macro references replaced.
func (x *expander) expand(s string) (string, error) { return x.expandDepth(s, 0) }

func (x *expander) expandDepth(s string, depth int) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	if depth > maxMacroDepth {
		return "", errMacroDepth
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		j := strings.IndexByte(s[i:], '$')
		if j < 0 {
			b.WriteString(s[i:])
			break
		}
		b.WriteString(s[i : i+j])
		i += j
		fn, open := macroCall(s, i)
		if open < 0 {
			b.WriteByte('$')
			i++
			continue
		}
		end := closingParen(s, open)
		if end < 0 {
			return "", fmt.Errorf("unbalanced parentheses in %q", s)
		}
		if fn == "$" { // $$(attr): substituted at match time
			b.WriteString(s[i : end+1])
			i = end + 1
			continue
		}
		out, ok, err := x.call(fn, s[open+1:end], depth)
		if err != nil {
			return "", err
		}
		if ok {
			if b.Len()+len(out) > maxExpansion {
				return "", errMacroSize
			}
			b.WriteString(out)
		} else {
			b.WriteString(s[i : end+1])
		}
		i = end + 1
	}
	return b.String(), nil
}

// macroCall recognises a reference starting at s[i] == '$': it returns the
// function name ("" for $(name), "$" for $$(name)) and the index of the
// opening parenthesis, or -1 if s[i] starts no reference.
func macroCall(s string, i int) (fn string, open int) {
	k := i + 1
	if k < len(s) && s[k] == '$' {
		if k+1 < len(s) && s[k+1] == '(' {
			return "$", k + 1
		}
		return "", -1
	}
	for k < len(s) && isIdentByte(s[k], true) {
		k++
	}
	if k >= len(s) || s[k] != '(' {
		return "", -1
	}
	return s[i+1 : k], k
}

// closingParen returns the index of the parenthesis closing s[open], or -1.
func closingParen(s string, open int) int {
	depth := 0
	for k := open; k < len(s); k++ {
		switch s[k] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return k
			}
		}
	}
	return -1
}

// call expands one reference; ok is false for functions it does not know,
// which are left in the text.
func (x *expander) call(fn, body string, depth int) (string, bool, error) {
	if x.only != "" {
		if fn != "" {
			return "", false, nil
		}
		name, def, hasDef := strings.Cut(body, ":")
		if strings.ToLower(strings.TrimSpace(name)) != x.only {
			return "", false, nil
		}
		if v, ok := x.defs[x.only]; ok {
			return v.value, true, nil
		}
		if hasDef {
			return def, true, nil
		}
		return "", true, nil
	}
	switch {
	case fn == "":
		name, def, hasDef := strings.Cut(body, ":")
		name, err := x.expandDepth(strings.TrimSpace(name), depth+1)
		if err != nil {
			return "", false, err
		}
		if v, ok := x.lookup(strings.ToLower(name)); ok {
			out, err := x.expandDepth(v, depth+1)
			return out, true, err
		}
		if hasDef {
			out, err := x.expandDepth(def, depth+1)
			return out, true, err
		}
		return "", true, nil
	case strings.EqualFold(fn, "ENV"):
		name, def, _ := strings.Cut(body, ":")
		if x.getenv != nil {
			if v, ok := x.getenv(strings.TrimSpace(name)); ok {
				return v, true, nil
			}
		}
		return def, true, nil
	case strings.EqualFold(fn, "INT"), strings.EqualFold(fn, "REAL"):
		out, err := x.number(strings.ToUpper(fn), body, depth)
		return out, true, err
	case isPathFunc(fn):
		out, err := x.pathPart(fn[1:], body, depth)
		return out, true, err
	}
	return "", false, nil
}

func (x *expander) lookup(name string) (string, bool) {
	if name == "dollar" {
		return "$", true
	}
	if v, ok := x.job.lookup(name); ok {
		return v, true
	}
	m, ok := x.defs[name]
	return m.value, ok
}

// value expands a macro name or, if it names no macro, the text itself.
func (x *expander) value(arg string, depth int) (string, error) {
	arg = strings.TrimSpace(arg)
	if v, ok := x.lookup(strings.ToLower(arg)); ok {
		return x.expandDepth(v, depth+1)
	}
	return x.expandDepth(arg, depth+1)
}

// number implements $INT(expr[,format]) and $REAL(expr[,format]).
func (x *expander) number(fn, body string, depth int) (string, error) {
	arg, format, hasFormat := strings.Cut(body, ",")
	src, err := x.value(arg, depth)
	if err != nil {
		return "", err
	}
	e, err := classad.ParseExpr(src)
	if err != nil {
		return "", fmt.Errorf("$%s(%s): %w", fn, body, err)
	}
	v := classad.New().EvalExpr(e, nil)
	format = strings.TrimSpace(format)
	if hasFormat && strings.Count(format, "%") != 1 {
		return "", fmt.Errorf("$%s(%s): format must hold one %% verb", fn, body)
	}
	if fn == "INT" {
		n, ok := v.IntValue()
		if !ok {
			return "", fmt.Errorf("$INT(%s): %s is not a number", body, v)
		}
		if !hasFormat {
			format = "%d"
		}
		return fmt.Sprintf(format, n), nil
	}
	f, ok := v.RealValue()
	if !ok {
		return "", fmt.Errorf("$REAL(%s): %s is not a number", body, v)
	}
	if !hasFormat {
		return strconv.FormatFloat(f, 'g', -1, 64), nil
	}
	return fmt.Sprintf(format, f), nil
}

// pathPart implements $F[pdnxq](name): p the directory with its trailing
// slash, d the last directory's name, n the base name without extension, x
// the extension with its dot, q double quotes around the result; no letter
// (or only q) means the whole value.
func (x *expander) pathPart(mods, body string, depth int) (string, error) {
	for _, c := range mods {
		if !strings.ContainsRune("pdnxq", c) {
			return "", fmt.Errorf("$F%s(%s): unknown modifier %q (want p, d, n, x or q)", mods, body, c)
		}
	}
	v, err := x.value(body, depth)
	if err != nil {
		return "", err
	}
	out := v
	if strings.ContainsAny(mods, "pdnx") {
		dir, file := filepath.Split(v)
		ext := filepath.Ext(file)
		var b strings.Builder
		if strings.ContainsRune(mods, 'p') {
			b.WriteString(dir)
		}
		if strings.ContainsRune(mods, 'd') {
			b.WriteString(filepath.Base(filepath.Clean(dir)))
		}
		if strings.ContainsRune(mods, 'n') {
			b.WriteString(strings.TrimSuffix(file, ext))
		}
		if strings.ContainsRune(mods, 'x') {
			b.WriteString(ext)
		}
		out = b.String()
	}
	if strings.ContainsRune(mods, 'q') {
		out = `"` + out + `"`
	}
	return out, nil
}

// macroRefs adds to refs the (lower-case) names of the macros s refers to.
func macroRefs(s string, refs map[string]bool) {
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			continue
		}
		fn, open := macroCall(s, i)
		if open < 0 {
			continue
		}
		end := closingParen(s, open)
		if end < 0 {
			end = len(s)
		}
		body := s[open+1 : end]
		if fn == "" || strings.EqualFold(fn, "INT") || strings.EqualFold(fn, "REAL") || isPathFunc(fn) {
			if name, _ := leadingWord(strings.TrimSpace(body)); name != "" {
				refs[strings.ToLower(name)] = true
			}
		}
		macroRefs(body, refs)
		i = end
	}
}

// isPathFunc reports whether fn is one of the $F functions: F followed by
// lower-case modifier letters.
func isPathFunc(fn string) bool {
	if fn == "" || fn[0] != 'F' {
		return false
	}
	for i := 1; i < len(fn); i++ {
		if fn[i] < 'a' || fn[i] > 'z' {
			return false
		}
	}
	return true
}
