// Package exprtext reads the structure of printed ClassAd expressions:
// their tokens, and the conjuncts of a conjunction.
//
// The classad package keeps its syntax tree to itself, and guarantees that
// an expression's canonical printed form (classad.Expr.String) parses back
// to the same expression; so a small scanner over that form is enough for
// the matchmaker's autoclusters, machine classes and indexes, and for its
// gang search's bounds. The scanner does not validate: malformed text
// yields some tokens, and callers treat what they cannot recognise the
// safe way (more references, a conjunct that is not indexable).
package exprtext

import "strings"

// Kind classifies a token.
type Kind uint8

const (
	Ident  Kind = iota // a name, possibly quoted ('odd name'), without its quotes
	Number             // a numeric literal
	String             // a string literal, with its quotes
	Punct              // an operator or delimiter
)

// Token is one token of a printed expression: its kind, its text (the
// name for identifiers, the operator for punctuation) and its byte span.
type Token struct {
	Kind       Kind
	Text       string
	Start, End int
}

// Is reports whether t is the operator or delimiter op.
func (t Token) Is(op string) bool { return t.Kind == Punct && t.Text == op }

// Scan splits printed expression text into tokens.
func Scan(s string) []Token {
	var ts []Token
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
			kind, text := String, s[i:j]
			if c == '\'' {
				kind, text = Ident, strings.Trim(text, "'")
			}
			ts = append(ts, Token{kind, text, i, j})
			i = j
		case isDigit(c) || c == '.' && i+1 < len(s) && isDigit(s[i+1]):
			j := i + 1
			for j < len(s) && (isIdentChar(s[j]) || s[j] == '.' ||
				(s[j] == '+' || s[j] == '-') && (s[j-1] == 'e' || s[j-1] == 'E') && !strings.HasPrefix(s[i:], "0x")) {
				j++
			}
			ts = append(ts, Token{Number, s[i:j], i, j})
			i = j
		case isIdentStart(c):
			j := i + 1
			for j < len(s) && isIdentChar(s[j]) {
				j++
			}
			ts = append(ts, Token{Ident, s[i:j], i, j})
			i = j
		default:
			j := i + 1
			for _, op := range multiCharOps {
				if strings.HasPrefix(s[i:], op) {
					j = i + len(op)
					break
				}
			}
			ts = append(ts, Token{Punct, s[i:j], i, j})
			i = j
		}
	}
	return ts
}

// multiCharOps lists the multi-character operators, longest first.
var multiCharOps = []string{">>>", "=?=", "=!=", "&&", "||", "==", "!=", "<=", ">=", "<<", ">>", "?:"}

func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isIdentChar(c byte) bool  { return isIdentStart(c) || isDigit(c) }

// IsName reports whether s is a plain name: a letter or underscore, then
// letters, digits and underscores.
func IsName(s string) bool {
	if s == "" || !isIdentStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isIdentChar(s[i]) {
			return false
		}
	}
	return true
}

// Keyword reports whether an identifier is a literal or an operator
// (true, false, undefined, error, is, isnt) rather than an attribute
// reference.
func Keyword(name string) bool {
	switch strings.ToLower(name) {
	case "true", "false", "undefined", "error", "is", "isnt":
		return true
	}
	return false
}

// Conjuncts splits tokens at the && operators outside parentheses,
// brackets and braces, looking through parentheses that enclose a whole
// conjunct. An expression whose top is not a conjunction (a || b is not,
// nor a ? b : c) is one conjunct.
func Conjuncts(ts []Token) [][]Token { return appendConjuncts(nil, ts) }

func appendConjuncts(out [][]Token, ts []Token) [][]Token {
	for len(ts) >= 2 && Enclosed(ts) {
		ts = ts[1 : len(ts)-1]
	}
	var buf [16]int
	cuts := buf[:0] // the top-level && operators
	depth := 0
	for i, t := range ts {
		if t.Kind != Punct {
			continue
		}
		switch t.Text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
		case "&&":
			if depth == 0 {
				cuts = append(cuts, i)
			}
		case "||", "?", ":", "?:":
			// a && b || c is (a && b) || c: not a conjunction.
			if depth == 0 {
				return append(out, ts)
			}
		}
	}
	if len(cuts) == 0 {
		return append(out, ts)
	}
	from := 0
	for _, c := range append(cuts, len(ts)) {
		if c > from {
			out = appendConjuncts(out, ts[from:c])
		}
		from = c + 1
	}
	return out
}

// Enclosed reports whether ts is one parenthesised group.
func Enclosed(ts []Token) bool {
	if len(ts) < 2 || !ts[0].Is("(") || !ts[len(ts)-1].Is(")") {
		return false
	}
	depth := 0
	for i, t := range ts {
		if t.Kind != Punct {
			continue
		}
		switch t.Text {
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

// Source returns the text of s that the tokens ts span.
func Source(s string, ts []Token) string {
	if len(ts) == 0 {
		return ""
	}
	return s[ts[0].Start:ts[len(ts)-1].End]
}
