package config

import (
	"errors"
	"fmt"
	"strings"
)

// maxExpansion bounds the length of one expanded value, so that a file like
// "A = $(B)$(B)", "B = $(C)$(C)", ... cannot exhaust memory.
const maxExpansion = 1 << 20

// ref is one macro reference inside a value: $(NAME), $(NAME:default),
// $ENV(VAR) or $ENV(VAR:default).
type ref struct {
	env    bool
	name   string
	def    string
	hasDef bool
	raw    string // the reference exactly as written
}

// render writes the reference back with a (possibly rewritten) default.
func (r ref) render(def string) string {
	if !r.hasDef || def == r.def {
		return r.raw
	}
	prefix := "$("
	if r.env {
		prefix = r.raw[:len("$ENV(")]
	}
	return prefix + r.name + ":" + def + ")"
}

// scan copies s, replacing each macro reference by what fn returns for it.
// "$$" is copied literally (it marks match-time references), as is a "$"
// that does not start a reference.
func scan(s string, fn func(r ref) (string, error)) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		s = s[i:]
		var open int // length of "$(" or "$ENV("
		env := false
		switch {
		case strings.HasPrefix(s, "$$"):
			b.WriteString("$$")
			s = s[2:]
			continue
		case strings.HasPrefix(s, "$("):
			open = 2
		case len(s) >= 5 && strings.EqualFold(s[1:4], "ENV") && s[4] == '(':
			open, env = 5, true
		default:
			b.WriteByte('$')
			s = s[1:]
			continue
		}
		r, n, err := parseRef(s, open, env)
		if err != nil {
			return "", err
		}
		v, err := fn(r)
		if err != nil {
			return "", err
		}
		if b.Len()+len(v) > maxExpansion {
			return "", errors.New("expansion longer than 1 MiB")
		}
		b.WriteString(v)
		s = s[n:]
	}
}

// parseRef parses the reference at the start of s, whose opening ("$(" or
// "$ENV(") is open bytes long, and returns it with its length in s.
func parseRef(s string, open int, env bool) (ref, int, error) {
	r := ref{env: env}
	i := open
	for i < len(s) && isKeyByte(s[i]) {
		i++
	}
	r.name = s[open:i]
	if r.name == "" {
		return ref{}, 0, fmt.Errorf("empty macro name in %q", clip(s))
	}
	if i == len(s) {
		return ref{}, 0, fmt.Errorf("unterminated macro reference %q", clip(s))
	}
	switch s[i] {
	case ')':
		r.raw = s[:i+1]
		return r, i + 1, nil
	case ':':
		// The default runs to the matching parenthesis, so that it may
		// itself contain references.
		depth := 1
		for j := i + 1; j < len(s); j++ {
			switch s[j] {
			case '(':
				depth++
			case ')':
				depth--
				if depth == 0 {
					r.def, r.hasDef, r.raw = s[i+1:j], true, s[:j+1]
					return r, j + 1, nil
				}
			}
		}
		return ref{}, 0, fmt.Errorf("unterminated macro reference %q", clip(s))
	}
	return ref{}, 0, fmt.Errorf("invalid character %q in macro name in %q", s[i], clip(s))
}

// clip shortens s for use in an error message.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// substituteSelf replaces references to key (lower case) in value by prev,
// the key's previous raw value, or if it had none by the reference's default
// or nothing. A value that does not scan is kept as it is; its error will be
// reported when it is expanded.
func substituteSelf(value, key, prev string, had bool) string {
	var fn func(r ref) (string, error)
	fn = func(r ref) (string, error) {
		if !r.env && strings.EqualFold(r.name, key) {
			if had {
				return prev, nil
			}
			if r.hasDef {
				return scan(r.def, fn)
			}
			return "", nil
		}
		if !r.hasDef {
			return r.raw, nil
		}
		def, err := scan(r.def, fn)
		if err != nil {
			return "", err
		}
		return r.render(def), nil
	}
	out, err := scan(value, fn)
	if err != nil {
		return value
	}
	return out
}

// expander expands the values of one set of definitions. It remembers each
// key's expansion, so that expanding all keys costs time linear in the size
// of the definitions however often they refer to each other.
type expander struct {
	defs   map[string]def
	env    func(string) (string, bool)
	done   map[string]string
	active map[string]bool
}

func newExpander(defs map[string]def, env func(string) (string, bool)) *expander {
	return &expander{defs: defs, env: env, done: make(map[string]string), active: make(map[string]bool)}
}

// key returns the expansion of the lower-case key lk; an undefined key
// expands to "".
func (e *expander) key(lk string) (string, error) {
	if v, ok := e.done[lk]; ok {
		return v, nil
	}
	d, ok := e.defs[lk]
	if !ok {
		return "", nil
	}
	if e.active[lk] {
		return "", fmt.Errorf("%w through %s", ErrCycle, d.key)
	}
	e.active[lk] = true
	v, err := scan(d.value, e.ref)
	delete(e.active, lk)
	if err != nil {
		return "", err
	}
	e.done[lk] = v
	return v, nil
}

// ref expands one reference.
func (e *expander) ref(r ref) (string, error) {
	if r.env {
		if v, ok := e.env(r.name); ok {
			return v, nil
		}
	} else if _, ok := e.defs[strings.ToLower(r.name)]; ok {
		return e.key(strings.ToLower(r.name))
	}
	if r.hasDef {
		return scan(r.def, e.ref)
	}
	return "", nil
}
