package classad

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

func registerStrings(m map[string]builtin) {
	m["strcat"] = lazy(0, -1, strcat)
	m["join"] = lazy(1, -1, join)
	m["substr"] = undefFirst(2, 3, substr)
	m["strcmp"] = undefFirst(2, 2, func(_ *evalCtx, a []Value) Value { return strcmpFn(a, false) })
	m["stricmp"] = undefFirst(2, 2, func(_ *evalCtx, a []Value) Value { return strcmpFn(a, true) })
	m["toupper"] = strict(1, 1, func(c *evalCtx, a []Value) Value { return charged(c, mapString(a[0], strings.ToUpper)) })
	m["tolower"] = strict(1, 1, func(c *evalCtx, a []Value) Value { return charged(c, mapString(a[0], strings.ToLower)) })
	m["size"] = strict(1, 1, size)
	m["split"] = strict(1, 2, split)
	m["splitusername"] = strict(1, 1, func(_ *evalCtx, a []Value) Value { return splitAt(a[0], false) })
	m["splitslotname"] = strict(1, 1, func(_ *evalCtx, a []Value) Value { return splitAt(a[0], true) })
	m["sprintf"] = strict(1, -1, sprintf)
	m["regexp"] = withPattern(2, 3, 2, false, regexpFn)
	m["regexps"] = withPattern(3, 4, 3, false, func(c *evalCtx, re *regexp.Regexp, a []Value) Value {
		return charged(c, regexpSubst(re, a, substMatch))
	})
	m["replace"] = withPattern(3, 4, 3, false, func(c *evalCtx, re *regexp.Regexp, a []Value) Value {
		return charged(c, regexpSubst(re, a, substFirst))
	})
	m["replaceall"] = withPattern(3, 4, 3, false, func(c *evalCtx, re *regexp.Regexp, a []Value) Value {
		return charged(c, regexpSubst(re, a, substAll))
	})
	m["regexpmember"] = withPattern(2, 3, 2, true, regexpMember)
	m["stringlistsize"] = strict(1, 2, func(_ *evalCtx, a []Value) Value {
		items, ok := stringListArg(a, 1)
		if !ok {
			return Value{kind: ErrorKind}
		}
		return Int(int64(len(items)))
	})
	m["stringlistsum"] = strict(1, 2, func(_ *evalCtx, a []Value) Value { return stringListFold(a, "sum") })
	m["stringlistavg"] = strict(1, 2, func(_ *evalCtx, a []Value) Value { return stringListFold(a, "avg") })
	m["stringlistmin"] = strict(1, 2, func(_ *evalCtx, a []Value) Value { return stringListFold(a, "min") })
	m["stringlistmax"] = strict(1, 2, func(_ *evalCtx, a []Value) Value { return stringListFold(a, "max") })
	m["stringlistmember"] = strict(2, 3, func(_ *evalCtx, a []Value) Value { return stringListMember(a, false) })
	m["stringlistimember"] = strict(2, 3, func(_ *evalCtx, a []Value) Value { return stringListMember(a, true) })
	m["stringlistsintersect"] = strict(2, 3, func(_ *evalCtx, a []Value) Value { return stringListsIntersect(a, false) })
	m["stringlistsubsetmatch"] = strict(2, 3, func(_ *evalCtx, a []Value) Value { return stringListSubset(a, false) })
	m["stringlistisubsetmatch"] = strict(2, 3, func(_ *evalCtx, a []Value) Value { return stringListSubset(a, true) })
	m["stringlistregexpmember"] = withPattern(2, 4, 3, false, stringListRegexpMember)
	m["versioncmp"] = versionFn(2, func(v []string) Value { return Int(int64(versionCompare(v[0], v[1]))) })
	for name, test := range map[string]func(int) bool{
		"versiongt": func(c int) bool { return c > 0 },
		"versionge": func(c int) bool { return c >= 0 },
		"versionlt": func(c int) bool { return c < 0 },
		"versionle": func(c int) bool { return c <= 0 },
		"versioneq": func(c int) bool { return c == 0 },
	} {
		m[name] = versionFn(2, func(v []string) Value { return Bool(test(versionCompare(v[0], v[1]))) })
	}
	m["version_in_range"] = lazy(3, 3, versionInRange)
	m["versioninrange"] = m["version_in_range"]
}

// charged passes v through if the bytes of a string v fit the budget.
func charged(c *evalCtx, v Value) Value {
	if v.kind == StringKind && !c.charge(len(v.s())) {
		return Value{kind: ErrorKind}
	}
	return v
}

// strcat converts each argument with string(); the first argument that
// is undefined or error makes the result so.
func strcat(c *evalCtx, a []Value) Value {
	for _, v := range a {
		if v.kind == ErrorKind || v.kind == UndefinedKind {
			return v // the first of them decides, as in libclassad
		}
	}
	var b strings.Builder
	for _, v := range a {
		s, _ := stringOf(v)
		if b.Len()+len(s) > maxString {
			return Value{kind: ErrorKind}
		}
		b.WriteString(s)
	}
	if !c.charge(b.Len()) {
		return Value{kind: ErrorKind}
	}
	return String(b.String())
}

// join(sep, list), join(sep, a, b, ...) or join(list): the string forms of
// the items separated by sep; undefined items are skipped, an undefined
// separator is empty, and join of a single non-list is "".
func join(c *evalCtx, a []Value) Value {
	var sep string
	var items []Value
	if a[0].kind == ErrorKind {
		return a[0]
	}
	switch {
	case len(a) == 1:
		switch a[0].kind {
		case ListKind:
			items = a[0].elems()
		case UndefinedKind:
			return Value{}
		default:
			return String("")
		}
	default:
		sep, _ = stringOf(a[0])
		switch {
		case len(a) == 2 && a[1].kind == ListKind:
			items = a[1].elems()
		case len(a) == 2 && a[1].kind == UndefinedKind:
			return Value{}
		default:
			items = a[1:]
		}
	}
	var b strings.Builder
	n, skipped := 0, 0
	for _, v := range items {
		if v.kind == UndefinedKind {
			skipped++
			continue
		}
		s, ok := stringOf(v)
		if !ok || b.Len()+len(s)+len(sep) > maxString {
			return Value{kind: ErrorKind}
		}
		if b.Len() > 0 { // as libclassad: empty leading items bring no separator
			b.WriteString(sep)
		}
		b.WriteString(s)
		n++
	}
	if n == 0 && (skipped > 0 || a[0].kind == UndefinedKind) {
		return Value{} // nothing but undefined
	}
	if !c.charge(b.Len()) {
		return Value{kind: ErrorKind}
	}
	return String(b.String())
}

// substr(s, offset [, length]): a negative offset counts from the end; a
// negative length leaves that many characters off the end. Out of range
// parts are clipped.
func substr(_ *evalCtx, a []Value) Value {
	if a[0].kind != StringKind || a[1].kind != IntKind {
		return Value{kind: ErrorKind}
	}
	s := a[0].s()
	n := int64(len(s))
	off := int64(int32(a[1].i())) // C ints, as in libclassad
	if off < 0 {
		off += n
	}
	off = max(0, min(off, n))
	end := n
	if len(a) == 3 {
		if a[2].kind != IntKind {
			return Value{kind: ErrorKind}
		}
		l := int64(int32(a[2].i()))
		if l < 0 {
			end = n + l
		} else if l < n-off {
			end = off + l
		}
	}
	if end <= off {
		return String("")
	}
	return String(s[off:end])
}

// strcmpFn compares the string forms of its arguments; as in libclassad
// an undefined argument makes it undefined even beside an error.
func strcmpFn(a []Value, fold bool) Value {
	x, ok1 := stringOf(a[0])
	y, ok2 := stringOf(a[1])
	if !ok1 || !ok2 {
		return Value{kind: ErrorKind}
	}
	if fold {
		return Int(int64(compareFold(x, y)))
	}
	return Int(int64(strings.Compare(x, y)))
}

func mapString(v Value, f func(string) string) Value {
	s, ok := stringOf(v)
	if !ok {
		return Value{kind: ErrorKind}
	}
	return String(f(s))
}

func size(_ *evalCtx, a []Value) Value {
	switch v := a[0]; v.kind {
	case StringKind:
		return Int(int64(len(v.s())))
	case ListKind:
		return Int(int64(len(v.elems())))
	case AdKind:
		return Int(int64(v.scope().ad.Len()))
	}
	return Value{kind: ErrorKind}
}

const defaultDelims = " ,"

// fields splits s at any of delims, dropping empty items and trimming
// white space, as HTCondor's StringList does.
func fields(s, delims string) []string {
	parts := strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(delims, r) })
	out := parts[:0]
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func split(_ *evalCtx, a []Value) Value {
	if a[0].kind != StringKind {
		return Value{kind: ErrorKind}
	}
	var items []string
	if len(a) == 2 {
		if a[1].kind != StringKind {
			return Value{kind: ErrorKind}
		}
		items = fields(a[0].s(), a[1].s())
	} else {
		items = strings.FieldsFunc(a[0].s(), func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
	}
	out := make([]Value, len(items))
	for i, s := range items {
		out[i] = String(s)
	}
	return listOf(out)
}

// splitAt splits "user@domain" into {"user", "domain"}; for slot names a
// missing @ puts the whole string second, for user names first.
func splitAt(v Value, slot bool) Value {
	if v.kind != StringKind {
		return Value{kind: ErrorKind}
	}
	before, after, ok := strings.Cut(v.s(), "@")
	if !ok {
		if slot {
			return List(String(""), String(v.s()))
		}
		return List(String(v.s()), String(""))
	}
	return List(String(before), String(after))
}

// sprintf formats like C's printf for the conversions d i u o x X e E f g G
// s c and %%; %s accepts any value and prints its string form.
func sprintf(c *evalCtx, a []Value) Value {
	if a[0].kind != StringKind {
		return Value{kind: ErrorKind}
	}
	f := a[0].s()
	args := a[1:]
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			b.WriteByte(f[i])
			continue
		}
		j := i + 1
		for j < len(f) && strings.IndexByte("-+ #0123456789.", f[j]) >= 0 {
			j++
		}
		for j < len(f) && strings.IndexByte("hlLqjzt", f[j]) >= 0 {
			j++ // length modifiers mean nothing here
		}
		if j >= len(f) {
			return Value{kind: ErrorKind}
		}
		spec := "%" + strings.Map(func(r rune) rune {
			if strings.ContainsRune("hlLqjzt", r) {
				return -1
			}
			return r
		}, f[i+1:j])
		verb := f[j]
		i = j
		if verb == '%' {
			b.WriteByte('%')
			continue
		}
		if len(args) == 0 {
			return Value{kind: ErrorKind}
		}
		v := args[0]
		args = args[1:]
		switch verb {
		case 'd', 'i', 'u', 'o', 'x', 'X', 'c':
			n := toInt(v)
			if n.kind != IntKind || v.kind == StringKind {
				return Value{kind: ErrorKind}
			}
			switch verb {
			case 'd', 'i', 'u':
				fmt.Fprintf(&b, spec+"d", n.i())
			case 'c':
				fmt.Fprintf(&b, spec+"c", rune(n.i()))
			default:
				fmt.Fprintf(&b, spec+string(verb), n.i())
			}
		case 'e', 'E', 'f', 'F', 'g', 'G':
			r := toReal(v)
			if r.kind != RealKind || v.kind == StringKind {
				return Value{kind: ErrorKind}
			}
			fmt.Fprintf(&b, spec+string(verb), r.f())
		case 's':
			s, ok := stringOf(v)
			if !ok {
				return Value{kind: ErrorKind}
			}
			fmt.Fprintf(&b, spec+"s", s)
		default:
			return Value{kind: ErrorKind}
		}
		if b.Len() > maxString {
			return Value{kind: ErrorKind}
		}
	}
	if !c.charge(b.Len()) {
		return Value{kind: ErrorKind}
	}
	return String(b.String())
}

// compileRegexp compiles pattern with HTCondor's option letters: i (ignore
// case), m (multi-line), s (dot matches newline); x and f are accepted and
// ignored. Patterns are RE2, not PCRE.
func compileRegexp(pattern Value, opts []Value) (*regexp.Regexp, bool) {
	if pattern.kind != StringKind {
		return nil, false
	}
	flags := ""
	if len(opts) > 0 {
		if opts[0].kind != StringKind {
			return nil, false
		}
		for _, c := range opts[0].s() {
			switch c { // lower case only, as libclassad reads them
			case 'i':
				flags += "i"
			case 'm':
				flags += "m"
			case 's':
				flags += "s"
			}
		}
	}
	src := pattern.s()
	if flags != "" {
		src = "(?" + flags + ")" + src
	}
	re, err := regexp.Compile(src)
	return re, err == nil
}

// patternOpts gives, for each function taking a regular expression as its
// first argument, the index of its options argument.
var patternOpts = map[string]int{
	"regexp": 2, "regexps": 3, "replace": 3, "replaceall": 3,
	"regexpmember": 2, "stringlistregexpmember": 3,
}

// patternNode is a constant pattern argument compiled at parse time, so
// that matching against it does not compile it again.
type patternNode struct {
	*litNode
	re *regexp.Regexp
}

// precompile replaces a constant pattern argument of c (with constant
// options) by a patternNode.
func precompile(c *callNode) {
	optIdx, ok := patternOpts[strings.ToLower(c.name)]
	if !ok || len(c.args) == 0 {
		return
	}
	pat, ok := c.args[0].(*litNode)
	if !ok || pat.v.kind != StringKind {
		return
	}
	var opts []Value
	if len(c.args) > optIdx {
		o, ok := c.args[optIdx].(*litNode)
		if !ok {
			return
		}
		opts = []Value{o.v}
	}
	if re, ok := compileRegexp(pat.v, opts); ok {
		c.args[0] = patternNode{litNode: pat, re: re}
	}
}

// withPattern wraps a strict function whose first argument is a regular
// expression with options at optIdx, compiling the pattern unless it was
// compiled at parse time.
// withPattern wraps f, whose first argument is a regular expression and
// argument optIdx its options. With lazy, f is called with a nil pattern
// when it does not compile, to decide itself.
func withPattern(lo, hi, optIdx int, lazy bool, f func(c *evalCtx, re *regexp.Regexp, a []Value) Value) builtin {
	return func(c *evalCtx, s *adRef, args []node) Value {
		var buf [4]Value
		a, instead, ok := strictArgs(c, s, args, lo, hi, buf[:0])
		if !ok {
			return instead
		}
		var re *regexp.Regexp
		if pn, ok := args[0].(patternNode); ok {
			re = pn.re
		} else {
			var opts []Value
			if len(a) > optIdx {
				opts = a[optIdx : optIdx+1]
			}
			if re, ok = compileRegexp(a[0], opts); !ok && !(lazy && a[0].kind == StringKind && (opts == nil || opts[0].kind == StringKind)) {
				return Value{kind: ErrorKind}
			}
		}
		return f(c, re, a)
	}
}

func regexpFn(_ *evalCtx, re *regexp.Regexp, a []Value) Value {
	if a[1].kind != StringKind {
		return Value{kind: ErrorKind}
	}
	return Bool(re.MatchString(a[1].s()))
}

type substMode uint8

const (
	substMatch substMode = iota // regexps: the substitution alone
	substFirst                  // replace: the target with the first match replaced
	substAll                    // replaceAll
)

// regexpSubst implements regexps, replace and replaceAll. In the
// substitution \0 .. \9 stand for the match and its groups.
func regexpSubst(re *regexp.Regexp, a []Value, mode substMode) Value {
	if a[1].kind != StringKind || a[2].kind != StringKind {
		return Value{kind: ErrorKind}
	}
	target, sub := a[1].s(), a[2].s()
	badGroup := false
	for i := 0; i+1 < len(sub); i++ {
		if sub[i] == '\\' && isDigit(sub[i+1]) && int(sub[i+1]-'0') > re.NumSubexp() {
			badGroup = true // an error once something matches, as in libclassad
		}
	}
	opts := ""
	if len(a) > 3 && a[3].kind == StringKind {
		opts = a[3].s()
	}
	global := strings.Contains(opts, "g")
	if mode == substMatch && strings.Contains(opts, "f") {
		mode = substFirst // regexps with f: the whole target, substituted
	}
	expand := func(m []int) string {
		var b strings.Builder
		for i := 0; i < len(sub); i++ {
			if sub[i] == '\\' && i+1 < len(sub) && isDigit(sub[i+1]) {
				g := int(sub[i+1] - '0')
				if 2*g+1 < len(m) && m[2*g] >= 0 {
					b.WriteString(target[m[2*g]:m[2*g+1]])
				}
				i++
				continue
			}
			b.WriteByte(sub[i])
		}
		return b.String()
	}
	if badGroup && re.MatchString(target) {
		return Value{kind: ErrorKind}
	}
	switch {
	case mode == substMatch && global:
		// regexps with option g: the substitutions of every match.
		if re.MatchString("") {
			return Value{kind: ErrorKind}
		}
		var b strings.Builder
		for _, m := range re.FindAllStringSubmatchIndex(target, -1) {
			b.WriteString(expand(m))
			if b.Len() > maxString {
				return Value{kind: ErrorKind}
			}
		}
		return String(b.String())
	case mode == substMatch:
		m := re.FindStringSubmatchIndex(target)
		if m == nil {
			return String("")
		}
		return String(expand(m))
	case mode == substFirst && !global:
		m := re.FindStringSubmatchIndex(target)
		if m == nil {
			return String(target)
		}
		return String(target[:m[0]] + expand(m) + target[m[1]:])
	}
	if re.MatchString("") {
		return Value{kind: ErrorKind} // libclassad refuses patterns that match nothing here
	}
	var b strings.Builder
	last := 0
	for _, m := range re.FindAllStringSubmatchIndex(target, -1) {
		b.WriteString(target[last:m[0]])
		b.WriteString(expand(m))
		last = m[1]
		if b.Len() > maxString {
			return Value{kind: ErrorKind}
		}
	}
	b.WriteString(target[last:])
	return String(b.String())
}

// regexpMember reports whether any string in the list matches; a non-string
// element is error.
func regexpMember(_ *evalCtx, re *regexp.Regexp, a []Value) Value {
	if a[1].kind != ListKind {
		return Value{kind: ErrorKind}
	}
	// A pattern that does not compile (re == nil) matches nothing, as in
	// libclassad.
	undef := false
	for _, e := range a[1].elems() {
		switch e.kind {
		case StringKind:
			if re != nil && re.MatchString(e.s()) {
				return Bool(true)
			}
		case UndefinedKind:
			undef = true
		default:
			return Value{kind: ErrorKind}
		}
	}
	if undef {
		return Value{}
	}
	return Bool(false)
}

// stringListArg splits a[0] at the delimiters in a[di] (default " ,").
func stringListArg(a []Value, di int) ([]string, bool) {
	if a[0].kind != StringKind {
		return nil, false
	}
	delims := defaultDelims
	if len(a) > di {
		if a[di].kind != StringKind {
			return nil, false
		}
		if a[di].s() != "" {
			delims = a[di].s()
		}
	}
	return fields(a[0].s(), delims), true
}

func stringListFold(a []Value, how string) Value {
	items, ok := stringListArg(a, 1)
	if !ok {
		return Value{kind: ErrorKind}
	}
	if len(items) == 0 {
		if how == "sum" || how == "avg" {
			return Int(0)
		}
		return Value{}
	}
	allInt := true
	var isum int64
	var fsum, best float64
	for i, s := range items {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return Value{kind: ErrorKind}
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			allInt = false
		}
		isum += n
		fsum += f
		if i == 0 || how == "min" && f < best || how == "max" && f > best {
			best = f
		}
	}
	switch how {
	case "sum":
		if allInt {
			return Int(isum)
		}
		return Real(fsum)
	case "avg":
		return Real(fsum / float64(len(items)))
	}
	if allInt {
		return Int(int64(best))
	}
	return Real(best)
}

func stringListMember(a []Value, fold bool) Value {
	if a[0].kind != StringKind {
		return Value{kind: ErrorKind}
	}
	items, ok := stringListArg(a[1:], 1)
	if !ok {
		return Value{kind: ErrorKind}
	}
	for _, s := range items {
		if s == a[0].s() || fold && equalFold(s, a[0].s()) {
			return Bool(true)
		}
	}
	return Bool(false)
}

func twoLists(a []Value) ([]string, []string, bool) {
	var delims []Value
	if len(a) > 2 {
		delims = a[2:3]
	}
	l1, ok1 := stringListArg(append([]Value{a[0]}, delims...), 1)
	l2, ok2 := stringListArg(append([]Value{a[1]}, delims...), 1)
	return l1, l2, ok1 && ok2
}

func contains(items []string, s string, fold bool) bool {
	for _, x := range items {
		if x == s || fold && equalFold(x, s) {
			return true
		}
	}
	return false
}

// stringListsIntersect is libclassad's: its items are split at the
// delimiters and, unlike the stringList functions of HTCondor's daemons,
// not trimmed of white space.
func stringListsIntersect(a []Value, fold bool) Value {
	if a[0].kind != StringKind || a[1].kind != StringKind || len(a) > 2 && a[2].kind != StringKind {
		return Value{kind: ErrorKind}
	}
	delims := defaultDelims
	if len(a) > 2 && a[2].s() != "" {
		delims = a[2].s()
	}
	split := func(s string) []string {
		return strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(delims, r) })
	}
	l1, l2 := split(a[0].s()), split(a[1].s())
	for _, s := range l1 {
		if contains(l2, s, fold) {
			return Bool(true)
		}
	}
	return Bool(false)
}

func stringListSubset(a []Value, fold bool) Value {
	l1, l2, ok := twoLists(a)
	if !ok {
		return Value{kind: ErrorKind}
	}
	for _, s := range l1 {
		if !contains(l2, s, fold) {
			return Bool(false)
		}
	}
	return Bool(true)
}

// stringListRegexpMember(pattern, list [, delims [, options]]).
func stringListRegexpMember(_ *evalCtx, re *regexp.Regexp, a []Value) Value {
	items, ok := stringListArg(a[1:min(len(a), 3)], 1)
	if !ok {
		return Value{kind: ErrorKind}
	}
	for _, s := range items {
		if re.MatchString(s) {
			return Bool(true)
		}
	}
	return Bool(false)
}

// versionCompare orders strings as libclassad's versioncmp does, giving
// a negative number, 0 or a positive one. Bytes compare one by one, the
// difference of the first that differ deciding, except where both strings
// hold a run of digits: then the run with fewer leading zeros is greater
// (by the difference of their counts; a run of zeros alone keeps its last
// zero as its number), runs led by zeros compare byte by byte as
// fractions, and other runs compare as numbers, by length first.
func versionCompare(a, b string) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if !isDigit(a[i]) || !isDigit(b[j]) {
			if a[i] != b[j] {
				return int(a[i]) - int(b[j])
			}
			i++
			j++
			continue
		}
		za, zb := leadingZeros(a[i:]), leadingZeros(b[j:])
		if za != zb {
			return zb - za
		}
		i += za
		j += zb
		if za > 0 {
			for i < len(a) && j < len(b) && isDigit(a[i]) && isDigit(b[j]) {
				if a[i] != b[j] {
					return int(a[i]) - int(b[j])
				}
				i++
				j++
			}
			continue
		}
		la, lb := digitsAt(a[i:]), digitsAt(b[j:])
		if la != lb {
			return la - lb
		}
		for k := range la {
			if a[i+k] != b[j+k] {
				return int(a[i+k]) - int(b[j+k])
			}
		}
		i += la
		j += lb
	}
	var x, y int
	if i < len(a) {
		x = int(a[i])
	}
	if j < len(b) {
		y = int(b[j])
	}
	return x - y
}

// leadingZeros counts the zeros that lead the run of digits s starts
// with, but for the run's last digit.
func leadingZeros(s string) int {
	n := 0
	for n+1 < len(s) && s[n] == '0' && isDigit(s[n+1]) {
		n++
	}
	return n
}

// digitsAt counts the digits s starts with.
func digitsAt(s string) int {
	n := 0
	for n < len(s) && isDigit(s[n]) {
		n++
	}
	return n
}

// versionInRange(v, lo, hi) tells whether lo <= v <= hi as versions. As in
// libclassad it looks at the bounds first: an undefined one makes the
// result undefined, else an error one error; then a v that is undefined or
// error is error. Lists and ads compare by their text.
func versionInRange(_ *evalCtx, a []Value) Value {
	if a[1].kind == UndefinedKind || a[2].kind == UndefinedKind {
		return Value{kind: UndefinedKind}
	}
	for _, x := range a {
		if x.kind == UndefinedKind || x.kind == ErrorKind {
			return Value{kind: ErrorKind}
		}
	}
	v, _ := stringOf(a[0])
	lo, _ := stringOf(a[1])
	hi, _ := stringOf(a[2])
	return Bool(versionCompare(lo, v) <= 0 && versionCompare(v, hi) <= 0)
}

// versionFn wraps a version comparison of n arguments, each converted with
// string(). As in libclassad an undefined argument makes the result
// undefined even beside an error.
func versionFn(n int, f func([]string) Value) builtin {
	return func(c *evalCtx, s *adRef, args []node) Value {
		if len(args) != n {
			return Value{kind: ErrorKind}
		}
		var buf [4]Value
		vs := evalArgs(c, s, args, buf[:0])
		for _, v := range vs {
			if v.kind == UndefinedKind {
				return v
			}
		}
		strs := make([]string, n)
		for i, v := range vs {
			str, ok := stringOf(v)
			if !ok {
				return Value{kind: ErrorKind}
			}
			strs[i] = str
		}
		return f(strs)
	}
}
