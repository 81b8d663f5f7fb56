package classad

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

type tokKind uint8

const (
	tEOF tokKind = iota
	tIdent
	tInt
	tReal
	tString
	tName  // 'quoted attribute name'
	tPunct // operators and delimiters; text in tok.text
)

type token struct {
	text string  // identifier, string contents, punctuation or number
	num  uint64  // tInt: int64 bits; tReal: float64 bits
	pos  int32   // byte offset of the first character
	kind tokKind // kept last, with pos, so that a token is four words
}

func (t token) i() int64   { return int64(t.num) }
func (t token) f() float64 { return math.Float64frombits(t.num) }

func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "end of input"
	case tIdent:
		return "'" + t.text + "'"
	case tInt, tReal:
		return "number"
	case tString:
		return "string"
	case tName:
		return "quoted name"
	}
	return "'" + t.text + "'"
}

// SyntaxError reports malformed input: where it is and what was expected.
type SyntaxError struct {
	Offset int // byte offset in the input
	Line   int // 1-based
	Column int // 1-based, in bytes
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

// lexer turns source into tokens. In old mode a backslash in a string only
// escapes a double quote, as in HTCondor's old ClassAd syntax.
type lexer struct {
	src string
	pos int
	old bool
	err *SyntaxError
}

func (lx *lexer) errorf(pos int, format string, args ...any) {
	if lx.err != nil {
		return
	}
	line, col := 1, 1
	for i := 0; i < pos && i < len(lx.src); i++ {
		if lx.src[i] == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	lx.err = &SyntaxError{Offset: pos, Line: line, Column: col, Msg: fmt.Sprintf(format, args...)}
}

// skip passes over white space and comments.
func (lx *lexer) skip() {
	for lx.pos < len(lx.src) {
		c := lx.src[lx.pos]
		switch {
		case charClass[c]&classSpace != 0:
			lx.pos++
		case c == '/' && strings.HasPrefix(lx.src[lx.pos:], "//"):
			if i := strings.IndexByte(lx.src[lx.pos:], '\n'); i >= 0 {
				lx.pos += i + 1
			} else {
				lx.pos = len(lx.src)
			}
		case c == '/' && strings.HasPrefix(lx.src[lx.pos:], "/*"):
			if i := strings.Index(lx.src[lx.pos+2:], "*/"); i >= 0 {
				lx.pos += i + 4
			} else {
				lx.errorf(lx.pos, "unterminated comment")
				lx.pos = len(lx.src)
			}
		default:
			return
		}
	}
}

// Character classes, looked up rather than compared in the lexer's loops.
const (
	classIdentStart = 1 << iota
	classDigit
	classSpace
)

var charClass = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
			t[c] = classIdentStart
		case '0' <= c && c <= '9':
			t[c] = classDigit
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			t[c] = classSpace
		}
	}
	return t
}()

func isIdentStart(c byte) bool { return charClass[c]&classIdentStart != 0 }

func isIdentChar(c byte) bool { return charClass[c]&(classIdentStart|classDigit) != 0 }

func isDigit(c byte) bool { return charClass[c]&classDigit != 0 }

// punctLen returns the length of the operator or delimiter at the start
// of s, longest match first, or 0.
func punctLen(s string) int {
	at := func(i int) byte {
		if i < len(s) {
			return s[i]
		}
		return 0
	}
	switch s[0] {
	case '>':
		switch at(1) {
		case '>':
			if at(2) == '>' {
				return 3
			}
			return 2
		case '=':
			return 2
		}
		return 1
	case '<':
		if at(1) == '<' || at(1) == '=' {
			return 2
		}
		return 1
	case '=':
		switch at(1) {
		case '=':
			return 2
		case '?', '!':
			if at(2) == '=' {
				return 3
			}
		}
		return 1
	case '!':
		if at(1) == '=' {
			return 2
		}
		return 1
	case '&', '|':
		if at(1) == s[0] {
			return 2
		}
		return 1
	case '(', ')', '[', ']', '{', '}', ',', ';', '.', '+', '-', '*', '/', '%', '~', '^', '?', ':':
		return 1
	}
	return 0
}

func (lx *lexer) next() token {
	lx.skip()
	if lx.pos >= len(lx.src) {
		return token{kind: tEOF, pos: int32(len(lx.src))}
	}
	start := lx.pos
	c := lx.src[start]
	switch {
	case isIdentStart(c):
		for lx.pos < len(lx.src) && isIdentChar(lx.src[lx.pos]) {
			lx.pos++
		}
		return token{kind: tIdent, pos: int32(start), text: lx.src[start:lx.pos]}
	case isDigit(c) || c == '.' && lx.pos+1 < len(lx.src) && isDigit(lx.src[lx.pos+1]):
		return lx.number()
	case c == '"':
		s, ok := lx.quoted('"')
		if !ok {
			return token{kind: tEOF, pos: int32(start)}
		}
		return token{kind: tString, pos: int32(start), text: s}
	case c == '\'':
		s, ok := lx.quoted('\'')
		if !ok {
			return token{kind: tEOF, pos: int32(start)}
		}
		return token{kind: tName, pos: int32(start), text: s}
	}
	if c == '?' {
		// ?: is one token even with white space inside, as in libclassad.
		lx.pos++
		lx.skip()
		if lx.pos < len(lx.src) && lx.src[lx.pos] == ':' {
			lx.pos++
			return token{kind: tPunct, pos: int32(start), text: "?:"}
		}
		lx.pos = start + 1
		return token{kind: tPunct, pos: int32(start), text: "?"}
	}
	if n := punctLen(lx.src[start:]); n > 0 {
		lx.pos += n
		return token{kind: tPunct, pos: int32(start), text: lx.src[start:lx.pos]}
	}
	lx.errorf(start, "unexpected character %q", c)
	lx.pos = len(lx.src)
	return token{kind: tEOF, pos: int32(start)}
}

// number scans a number as libclassad's lexer does. An integer token is
// spelled as in C (decimal, 0x hexadecimal, 0-prefixed octal) but its
// value is read as decimal, so 010 is 10 and 0x10 is 0; a decimal integer
// past the int64 range is 0. A real needs digits after its decimal point
// and in its exponent. No letter may follow a number.
func (lx *lexer) number() token {
	start := lx.pos
	src := lx.src
	digits := func(ok func(byte) bool) int {
		n := 0
		for lx.pos < len(src) && ok(src[lx.pos]) {
			lx.pos++
			n++
		}
		return n
	}
	bad := func() token {
		end := min(lx.pos+1, len(src))
		lx.errorf(start, "malformed number %q", src[start:end])
		return token{kind: tEOF, pos: int32(start)}
	}
	isReal := false
	if strings.HasPrefix(src[start:], "0x") || strings.HasPrefix(src[start:], "0X") {
		lx.pos += 2
		if digits(isHexDigit) == 0 {
			return bad()
		}
	} else {
		digits(isDigit)
		if lx.pos < len(src) && src[lx.pos] == '.' {
			isReal = true
			lx.pos++
			if digits(isDigit) == 0 {
				return bad()
			}
		}
		if lx.pos < len(src) && (src[lx.pos] == 'e' || src[lx.pos] == 'E') {
			isReal = true
			lx.pos++
			if lx.pos < len(src) && (src[lx.pos] == '+' || src[lx.pos] == '-') {
				lx.pos++
			}
			if digits(isDigit) == 0 {
				return bad()
			}
		}
	}
	text := src[start:lx.pos]
	if lx.pos < len(src) && (isIdentChar(src[lx.pos]) || src[lx.pos] == '.' && !isReal) {
		return bad()
	}
	if isReal {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil && !math.IsInf(f, 0) && f != 0 {
			return bad()
		}
		return token{kind: tReal, pos: int32(start), num: math.Float64bits(f), text: text}
	}
	if len(text) > 1 && text[0] == '0' && text[1] != 'x' && text[1] != 'X' && strings.Trim(text, "01234567") != "" {
		return bad() // 08 is two tokens to libclassad, so never an expression
	}
	return token{kind: tInt, pos: int32(start), num: uint64(decimalValue(text, false)), text: text}
}

func isHexDigit(c byte) bool {
	return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// decimalValue reads the leading decimal digits of text, negated if neg,
// as strtoll does; a value out of range is 0.
func decimalValue(text string, neg bool) int64 {
	var u uint64
	for i := 0; i < len(text) && isDigit(text[i]); i++ {
		d := uint64(text[i] - '0')
		if u > (math.MaxUint64-d)/10 {
			return 0
		}
		u = u*10 + d
	}
	switch {
	case neg && u <= 1<<63:
		return int64(-u)
	case !neg && u < 1<<63:
		return int64(u)
	}
	return 0
}

// quoted scans a string delimited by q, handling C escapes (or, in old mode,
// only \").
func (lx *lexer) quoted(q byte) (string, bool) {
	start := lx.pos
	lx.pos++
	// Most strings have no escapes: return a slice of the source.
	for i := lx.pos; i < len(lx.src); i++ {
		if lx.src[i] == q {
			lx.pos = i + 1
			return lx.src[start+1 : i], true
		}
		if lx.src[i] == '\\' {
			break
		}
	}
	var b strings.Builder
	for {
		if lx.pos >= len(lx.src) {
			what := "string"
			if q == '\'' {
				what = "quoted name"
			}
			lx.errorf(start, "unterminated %s", what)
			return "", false
		}
		c := lx.src[lx.pos]
		if c == q {
			lx.pos++
			return b.String(), true
		}
		if c != '\\' || lx.pos+1 >= len(lx.src) {
			b.WriteByte(c)
			lx.pos++
			continue
		}
		e := lx.src[lx.pos+1]
		if lx.old {
			if e == '"' {
				b.WriteByte('"')
				lx.pos += 2
			} else {
				b.WriteByte('\\')
				lx.pos++
			}
			continue
		}
		lx.pos += 2
		switch e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case 'a':
			b.WriteByte('\a')
		case '0', '1', '2', '3', '4', '5', '6', '7':
			n := int(e - '0')
			max := 3
			if e > '3' {
				max = 2
			}
			for k := 1; k < max && lx.pos < len(lx.src) && '0' <= lx.src[lx.pos] && lx.src[lx.pos] <= '7'; k++ {
				n = n*8 + int(lx.src[lx.pos]-'0')
				lx.pos++
			}
			b.WriteByte(byte(n))
		default: // \\ \" \' \? and anything else stand for themselves
			b.WriteByte(e)
		}
	}
}
