package matchmaker

import (
	"strings"

	"harrier.dev/harrier/classad"
)

// This file reads the structure of printed ClassAd expressions: which
// attributes they refer to, and in which ad, and the conjuncts of a
// Requirements expression. The negotiator needs both for autoclustering,
// machine classes and indexing, and the classad package does not expose its
// syntax tree. Expressions are read from their canonical printed form
// (classad.Expr.String), which the classad package guarantees parses back
// to the same expression, so a small scanner is enough. Wherever the scan
// is unsure, callers fall back to the safe answer: more references, or a
// conjunct that is not indexable.

// tokKind classifies a scanned token.
type tokKind uint8

const (
	tokIdent  tokKind = iota // a name, possibly quoted ('odd name')
	tokNumber                // a numeric literal
	tokString                // a string literal
	tokPunct                 // an operator or delimiter
)

// tok is one token of a printed expression: its kind, its text (the name
// for identifiers, the operator for punctuation) and its byte span.
type tok struct {
	kind       tokKind
	text       string
	start, end int
}

// scanExpr splits printed expression text into tokens. It does not
// validate: a malformed text yields some tokens, and callers treat what
// they cannot recognise as opaque.
func scanExpr(s string) []tok {
	var toks []tok
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(s) && s[j] != c {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, len(s))
			kind := tokString
			text := s[i:j]
			if c == '\'' {
				kind, text = tokIdent, strings.Trim(text, "'")
			}
			toks = append(toks, tok{kind, text, i, j})
			i = j
		case isDigit(c) || (c == '.' && i+1 < len(s) && isDigit(s[i+1])):
			j := i + 1
			for j < len(s) && (isIdentChar(s[j]) || s[j] == '.' ||
				((s[j] == '+' || s[j] == '-') && (s[j-1] == 'e' || s[j-1] == 'E') && !strings.HasPrefix(s[i:], "0x"))) {
				j++
			}
			toks = append(toks, tok{tokNumber, s[i:j], i, j})
			i = j
		case isIdentStart(c):
			j := i + 1
			for j < len(s) && isIdentChar(s[j]) {
				j++
			}
			toks = append(toks, tok{tokIdent, s[i:j], i, j})
			i = j
		default:
			j := i + 1
			for _, op := range punct3 {
				if strings.HasPrefix(s[i:], op) {
					j = i + len(op)
					break
				}
			}
			toks = append(toks, tok{tokPunct, s[i:j], i, j})
			i = j
		}
	}
	return toks
}

// punct3 lists multi-character operators, longest first.
var punct3 = []string{">>>", "=?=", "=!=", "&&", "||", "==", "!=", "<=", ">=", "<<", ">>", "?:"}

func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isIdentChar(c byte) bool  { return isIdentStart(c) || isDigit(c) }

// keywords are identifiers that are not attribute references.
var keywords = map[string]bool{"true": true, "false": true, "undefined": true, "error": true, "is": true, "isnt": true}

// scopeOf classifies a scope prefix: 'm' for the ad itself, 't' for the
// match partner, 0 for no scope keyword.
func scopeOf(name string) byte {
	switch strings.ToLower(name) {
	case "my", "self", "parent", "root":
		return 'm'
	case "target", "other":
		return 't'
	}
	return 0
}

// refs are the attribute names an expression refers to, split by the ad
// they resolve in. Names are lower-cased, as ClassAd names are
// case-insensitive.
type refs struct {
	internal map[string]bool // defined in the ad itself
	external map[string]bool // looked up in the match partner
}

func newRefs() refs { return refs{internal: map[string]bool{}, external: map[string]bool{}} }

// addRefs adds the references of tokens toks, read as an expression of ad:
// TARGET.x and other.x are external; MY.x and self.x internal; a bare
// name is internal if ad defines it and external otherwise, as the
// matching scope rules look it up. Names after a selection dot on
// anything else are fields of a nested value, not references.
func (r refs) addRefs(ad *classad.ClassAd, toks []tok) {
	for i, t := range toks {
		if t.kind != tokIdent || keywords[strings.ToLower(t.text)] {
			continue
		}
		if i > 0 && toks[i-1].kind == tokPunct && toks[i-1].text == "." {
			if i < 2 || toks[i-2].kind != tokIdent {
				continue
			}
			switch scopeOf(toks[i-2].text) {
			case 'm':
				r.internal[strings.ToLower(t.text)] = true
			case 't':
				r.external[strings.ToLower(t.text)] = true
			}
			continue
		}
		if i+1 < len(toks) && toks[i+1].kind == tokPunct {
			switch toks[i+1].text {
			case "(": // a function call
				continue
			case ".":
				if scopeOf(t.text) != 0 {
					continue
				}
			}
		}
		name := strings.ToLower(t.text)
		if _, ok := ad.Lookup(name); ok {
			r.internal[name] = true
		} else {
			r.external[name] = true
		}
	}
}

// closure adds, for every internal reference, the references of the
// referenced attribute's expression, until nothing new appears; then r
// holds every attribute the original expressions can reach in ad and every
// partner attribute they can read.
func (r refs) closure(ad *classad.ClassAd) {
	done := map[string]bool{}
	for {
		var next []string
		for name := range r.internal {
			if !done[name] {
				next = append(next, name)
			}
		}
		if len(next) == 0 {
			return
		}
		for _, name := range next {
			done[name] = true
			if e, ok := ad.Lookup(name); ok {
				r.addRefs(ad, scanExpr(e.String()))
			}
		}
	}
}

// exprRefs returns the closed references of ad's attributes names.
func exprRefs(ad *classad.ClassAd, names ...string) refs {
	r := newRefs()
	for _, n := range names {
		if e, ok := ad.Lookup(n); ok {
			r.internal[strings.ToLower(n)] = true
			r.addRefs(ad, scanExpr(e.String()))
		}
	}
	r.closure(ad)
	return r
}

// conjuncts splits tokens at the && operators outside parentheses,
// brackets and braces, looking through parentheses that enclose a whole
// conjunct. An expression without && is one conjunct.
func conjuncts(toks []tok) [][]tok {
	var out [][]tok
	var split func(ts []tok)
	split = func(ts []tok) {
		for len(ts) >= 2 && enclosed(ts) {
			ts = ts[1 : len(ts)-1]
		}
		depth, from := 0, 0
		var parts [][]tok
		for i, t := range ts {
			if t.kind != tokPunct {
				continue
			}
			switch t.text {
			case "(", "[", "{":
				depth++
			case ")", "]", "}":
				depth--
			case "&&":
				if depth == 0 {
					parts = append(parts, ts[from:i])
					from = i + 1
				}
			case "||", "?", ":", "?:":
				// A && b || c is (a && b) || c: not a conjunction.
				if depth == 0 {
					out = append(out, ts)
					return
				}
			}
		}
		if len(parts) == 0 {
			out = append(out, ts)
			return
		}
		parts = append(parts, ts[from:])
		for _, p := range parts {
			split(p)
		}
	}
	split(toks)
	return out
}

// enclosed reports whether ts is one parenthesised group.
func enclosed(ts []tok) bool {
	if ts[0].text != "(" || ts[0].kind != tokPunct || ts[len(ts)-1].text != ")" {
		return false
	}
	depth := 0
	for i, t := range ts {
		if t.kind != tokPunct {
			continue
		}
		switch t.text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
			if depth == 0 && i != len(ts)-1 {
				return false
			}
		}
	}
	return true
}

// source returns the text the tokens ts span in s.
func source(s string, ts []tok) string {
	if len(ts) == 0 {
		return ""
	}
	return s[ts[0].start:ts[len(ts)-1].end]
}
