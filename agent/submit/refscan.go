package submit

import "strings"

// refKind says which form a macro reference takes.
type refKind uint8

const (
	refNone          refKind = iota
	refMacro                 // $(name) or $(name:default)
	refEnv                   // $ENV(name) or $ENV(name:default)
	refRandomChoice          // $RANDOM_CHOICE(a,b,...) or $RANDOM_CHOICE(list)
	refRandomInteger         // $RANDOM_INTEGER(min,max[,step])
	refChoice                // $CHOICE(index,a,b,...) or $CHOICE(index,list)
	refSubstr                // $SUBSTR(name,start[,length])
	refInt                   // $INT(name[,format])
	refReal                  // $REAL(name[,format])
	refString                // $STRING(name[,format])
	refEval                  // $EVAL(name)
	refBasename              // $BASENAME(name), the same as $Fnx
	refDirname               // $DIRNAME(name), the same as $Fp
	refFile                  // $F<letters>(name)
)

// functions are the names of the macro functions. As in condor_submit they
// are case-sensitive: $env(HOME) is not a reference.
var functions = map[string]refKind{
	"ENV": refEnv, "RANDOM_CHOICE": refRandomChoice, "RANDOM_INTEGER": refRandomInteger,
	"CHOICE": refChoice, "SUBSTR": refSubstr, "INT": refInt, "REAL": refReal,
	"STRING": refString, "EVAL": refEval, "BASENAME": refBasename, "DIRNAME": refDirname,
}

// fileLetters are the letters a $F function name may be made of, in either
// case.
const fileLetters = "pnxdqabfwu"

// A ref is one macro reference found in a value.
type ref struct {
	kind       refKind
	start, end int    // the reference is s[start:end], from "$" to ")"
	fn         string // the letters after $F, for refFile
	body       string // what is between the parentheses
	colon      int    // index in body of the ":" that starts a default, or -1
}

// name and def split the body of a $(name:default) or $ENV(name:default).
func (r *ref) name() string {
	if r.colon < 0 {
		return r.body
	}
	return r.body[:r.colon]
}

func (r *ref) def() (string, bool) {
	if r.colon < 0 {
		return "", false
	}
	return r.body[r.colon+1:], true
}

// A refFilter says which references nextRef reports; the others are left
// in the text.
type refFilter struct {
	mode filterMode
	self string // for keepSelf: the lower-case name being defined
}

type filterMode uint8

const (
	keepAll    filterMode = iota
	skipDollar            // all but $(DOLLAR), which stays until the end
	onlyDollar            // only $(DOLLAR)
	onlySelf              // $(self), $(self:default) and $F...(self)
)

// keeps reports whether f accepts a reference of kind with body.
func keeps[T text](f refFilter, kind refKind, body T) bool {
	switch f.mode {
	case skipDollar:
		return !isDollarRef(kind, body)
	case onlyDollar:
		return isDollarRef(kind, body)
	case onlySelf:
		if kind != refMacro && kind != refFile {
			return false
		}
		n := len(f.self)
		return (len(body) == n || len(body) > n && body[n] == ':') && equalFold(body[:n], f.self)
	}
	return true
}

// text is what nextRef searches: a value, or the buffer of one being
// rewritten.
type text interface{ ~string | ~[]byte }

// nextRef finds the first macro reference in s at or after from, with
// condor_submit's rules:
//
//   - a reference is "$", an optional function name of letters, digits and
//     "_", and a parenthesised body; "$$(" is never one, it is left for
//     match time;
//   - the body of $(...) and $ENV(...) is a name of letters, digits, "_",
//     "." and "/", optionally followed by ":" and a default of those
//     characters, spaces, "$", ",", "\" and ":", in which a parenthesis
//     skips to the next ")" (so "$(A:$(B))" works); anything else, such as
//     the shell's $(id -u) or $((i+1)), is not a reference and is left as
//     written;
//   - the body of the other functions is everything up to the first ")";
//   - a name that is not a known function ($FOO(x)) is not a reference.
//
// Text after a declined or malformed reference is still searched, so
// "$(id -u $(X))" holds the reference $(X).
func nextRef[T text](s T, from int, f refFilter) (ref, bool) {
	i := from
	for {
		dollar := indexByte(s, i, '$')
		if dollar < 0 {
			return ref{}, false
		}
		p := dollar + 1
		double := p < len(s) && s[p] == '$'
		if double {
			p++
		}
		q := p
		for q < len(s) && isWordByte(s[q]) {
			q++
		}
		i = q
		if q >= len(s) || s[q] != '(' || double {
			continue
		}
		kind := refKindOf(s[dollar+1 : q])
		if kind == refNone {
			continue
		}
		open := q + 1
		end, colon, ok := scanBody(s, open, kind)
		if !ok {
			i = open
			continue
		}
		if !keeps(f, kind, s[open:end]) {
			i = end
			continue
		}
		r := ref{kind: kind, start: dollar, end: end + 1, body: string(s[open:end]), colon: colon}
		if kind == refFile {
			r.fn = string(s[dollar+2 : q])
		}
		return r, true
	}
}

func indexByte[T text](s T, from int, c byte) int {
	for k := from; k < len(s); k++ {
		if s[k] == c {
			return k
		}
	}
	return -1
}

// equalFold compares ASCII text ignoring case.
func equalFold[T text](a T, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(b); i++ {
		if a[i]|0x20 != b[i]|0x20 {
			return false
		}
	}
	return true
}

// refKindOf classifies the function name between "$" and "(".
func refKindOf[T text](name T) refKind {
	if len(name) == 0 {
		return refMacro
	}
	if name[0] == 'F' {
		file := true
		for i := 1; i < len(name); i++ {
			if strings.IndexByte(fileLetters, name[i]|0x20) < 0 {
				file = false
				break
			}
		}
		if file {
			return refFile
		}
	}
	return functions[string(name)]
}

// scanBody finds the ")" closing the body that starts at s[open], and the
// index in the body of the ":" starting a default; ok is false if the body
// is not one kind allows.
func scanBody[T text](s T, open int, kind refKind) (end, colon int, ok bool) {
	colon = -1
	if kind != refMacro && kind != refEnv {
		k := indexByte(s, open, ')')
		if k < 0 {
			return 0, -1, false
		}
		return k, -1, true
	}
	k := open
	for k < len(s) && s[k] != ')' {
		c := s[k]
		k++
		if c == ':' && colon < 0 {
			colon = k - 1 - open
			continue
		}
		if colon >= 0 {
			if c == '(' {
				if e := indexByte(s, k, ')'); e >= 0 {
					k = e + 1
					continue
				}
			} else if strings.IndexByte("$ ,\\:", c) >= 0 {
				continue
			}
		}
		if !isNameByte(c) {
			return 0, -1, false
		}
	}
	if k >= len(s) {
		return 0, -1, false
	}
	return k, colon, true
}

// isWordByte reports whether c may be part of a function name.
func isWordByte(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// isNameByte reports whether c may be part of a macro name: condor_submit
// allows letters, digits, "_", "." and "/".
func isNameByte(c byte) bool {
	return isWordByte(c) || c == '.' || c == '/'
}

// isMacroName reports whether s is a name a definition may give.
func isMacroName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i]) {
			return false
		}
	}
	return true
}

// isDollarRef reports whether a reference is $(DOLLAR), which stands for a
// dollar sign once everything else is expanded.
func isDollarRef[T text](kind refKind, body T) bool {
	return kind == refMacro && equalFold(body, "dollar")
}
