// Package config reads Harrier's pool configuration, which follows the
// HTCondor configuration language so that Condor administrators feel at home.
//
// A configuration file is a sequence of lines:
//
//	# a comment
//	KEY = value
//	LONG = first part \
//	       second part
//	NAME = $(OTHER) and $(MISSING:a default) and $ENV(HOME)
//	LIST = $(LIST) appended
//	use POLICY : Desktop
//	include : /etc/harrier/local.conf
//
// Keys are case-insensitive and later definitions override earlier ones.
// Values are stored raw and macros are expanded when a value is looked up,
// so a definition may refer to a key that is defined further down the file.
// The one exception, as in HTCondor, is a self-reference: in "X = $(X) more"
// the $(X) is replaced by the previous value of X when the line is read,
// which is how lists are extended. An undefined macro without a default
// expands to the empty string; a reference cycle is an error.
//
// Policy values such as START or PREEMPT are ClassAd expressions; this
// package does not parse them, it only hands back their text. References
// written $$(NAME) are left for match-time substitution and are not expanded.
//
// Every definition remembers where it was read ("pool.conf:12", or the
// use line and the template's line), and the Config remembers which keys
// the program looked up and with what default, so that a daemon can say
// what configuration it uses and where each value comes from (Setting,
// Used).
//
// Not supported: HTCondor's if/else/endif blocks, "@=" multi-line values,
// "include command" and the $INT(), $REAL(), $RANDOM_CHOICE() family of
// macro functions (they are returned literally).
package config

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrCycle reports a macro that refers back to itself through other macros.
var ErrCycle = errors.New("macro reference cycle")

// A Config is a set of configuration definitions. It is safe for
// concurrent use.
type Config struct {
	env func(string) (string, bool)

	mu   sync.RWMutex
	defs map[string]def // keyed by lower-case key

	// used records the keys the program looked up (see Used).
	usedMu sync.Mutex
	used   map[string]use // keyed by lower-case key
}

// def is one definition: the key as last spelled, its raw value and where it
// came from ("" for values set in code).
type def struct {
	key   string
	value string
	pos   string
}

// New returns an empty Config whose $ENV() macros read the process
// environment.
func New() *Config {
	return newConfig(nil)
}

func newConfig(env func(string) (string, bool)) *Config {
	if env == nil {
		env = os.LookupEnv
	}
	return &Config{env: env, defs: make(map[string]def), used: make(map[string]use)}
}

// Set defines key with the raw, unexpanded value, replacing any earlier
// definition. Surrounding white space is trimmed from the value, as the
// parser does. References in value to key itself are replaced by the
// previous raw value (or by the reference's default, or by nothing), so
// that Set("X", "$(X) more") extends X.
func (c *Config) Set(key, value string) {
	c.set(key, value, "")
}

func (c *Config) set(key, value, pos string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	lk := strings.ToLower(key)
	prev, had := c.defs[lk]
	value = strings.TrimSpace(substituteSelf(strings.TrimSpace(value), lk, prev.value, had))
	c.defs[lk] = def{key: key, value: value, pos: pos}
}

// Lookup returns the expanded value of key and whether key is defined.
// A value whose expansion fails (a reference cycle, an unterminated
// reference) is reported as undefined; use Expand to see the error.
func (c *Config) Lookup(key string) (string, bool) {
	v, err := c.expand(key)
	c.noteUse(key, "", false)
	if err != nil {
		return "", false
	}
	return v, true
}

// ErrNotDefined is returned by Expand for a key with no definition.
var ErrNotDefined = errors.New("not defined")

// Expand returns the expanded value of key. It returns an error wrapping
// ErrNotDefined if key has no definition and ErrCycle if its expansion
// refers back to itself.
func (c *Config) Expand(key string) (string, error) {
	c.noteUse(key, "", false)
	return c.expand(key)
}

func (c *Config) expand(key string) (string, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	d, ok := c.defs[strings.ToLower(key)]
	if !ok {
		return "", fmt.Errorf("%s: %w", key, ErrNotDefined)
	}
	e := newExpander(c.defs, c.env)
	v, err := e.key(strings.ToLower(key))
	if err != nil {
		return "", d.wrap(err)
	}
	return v, nil
}

// wrap prefixes err with the definition's position and key.
func (d def) wrap(err error) error {
	if d.pos == "" {
		return fmt.Errorf("%s: %w", d.key, err)
	}
	return fmt.Errorf("%s: %s: %w", d.pos, d.key, err)
}

// Check expands every definition and returns the first error found, in key
// order. Parse and Load call it so that a broken file is refused at start-up
// rather than when a value is first needed.
func (c *Config) Check() error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e := newExpander(c.defs, c.env)
	for _, lk := range slices.Sorted(mapKeys(c.defs)) {
		if _, err := e.key(lk); err != nil {
			return c.defs[lk].wrap(err)
		}
	}
	return nil
}

func mapKeys(m map[string]def) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// String returns the expanded value of key, or def if key is undefined,
// empty or fails to expand.
func (c *Config) String(key, def string) string {
	v, err := c.expand(key)
	ok := err == nil
	c.noteUse(key, def, true)
	if !ok || v == "" {
		return def
	}
	return v
}

// List returns key's value as HTCondor reads a list: items separated by
// commas, spaces or tabs; def's items if key is undefined or empty.
func (c *Config) List(key, def string) []string {
	return strings.FieldsFunc(c.String(key, def), func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
}

// value is the common front half of the typed getters: it returns the
// expanded value, whether it is usable, and the definition for errors.
func (c *Config) value(key, def string) (string, bool, error) {
	v, err := c.expand(key)
	c.noteUse(key, def, true)
	if errors.Is(err, ErrNotDefined) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return v, v != "", nil
}

// badValue builds the error for a value that does not parse as the wanted
// type, naming where it was defined.
func (c *Config) badValue(key, kind, v string) error {
	c.mu.RLock()
	d := c.defs[strings.ToLower(key)]
	c.mu.RUnlock()
	return d.wrap(fmt.Errorf("invalid %s %q", kind, v))
}

// Int returns the expanded value of key as a decimal integer, or def if key
// is undefined or empty.
func (c *Config) Int(key string, def int64) (int64, error) {
	v, ok, err := c.value(key, strconv.FormatInt(def, 10))
	if err != nil || !ok {
		return def, err
	}
	n, perr := strconv.ParseInt(v, 10, 64)
	if perr != nil {
		return def, c.badValue(key, "integer", v)
	}
	return n, nil
}

// Bool returns the expanded value of key as a boolean, or def if key is
// undefined or empty. It accepts true/false, yes/no and 1/0 in any case.
func (c *Config) Bool(key string, def bool) (bool, error) {
	v, ok, err := c.value(key, strconv.FormatBool(def))
	if err != nil || !ok {
		return def, err
	}
	switch strings.ToLower(v) {
	case "true", "yes", "1":
		return true, nil
	case "false", "no", "0":
		return false, nil
	}
	return def, c.badValue(key, "boolean", v)
}

// Duration returns the expanded value of key as a duration, or def if key
// is undefined or empty. A plain number is a count of seconds (HTCondor's
// convention, fractions allowed); otherwise the value is parsed by
// time.ParseDuration, e.g. "90s" or "5m".
func (c *Config) Duration(key string, def time.Duration) (time.Duration, error) {
	v, ok, err := c.value(key, strconv.FormatFloat(def.Seconds(), 'f', -1, 64))
	if err != nil || !ok {
		return def, err
	}
	if secs, perr := strconv.ParseFloat(v, 64); perr == nil {
		d := secs * float64(time.Second)
		if math.IsNaN(d) || d >= math.MaxInt64 || d < math.MinInt64 {
			return def, c.badValue(key, "duration", v)
		}
		return time.Duration(d), nil
	}
	d, perr := time.ParseDuration(v)
	if perr != nil {
		return def, c.badValue(key, "duration", v)
	}
	return d, nil
}

// Keys returns the defined keys, each as spelled in its latest definition,
// in sorted order.
func (c *Config) Keys() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	keys := make([]string, 0, len(c.defs))
	for _, d := range c.defs {
		keys = append(keys, d.key)
	}
	slices.Sort(keys)
	return keys
}

// Write writes every definition in raw, unexpanded form, one "KEY = value"
// line per key in sorted order, so that Parse reads back the same
// definitions. It fails without writing anything if a key or value cannot be
// represented in the file syntax (a key with characters other than letters,
// digits, '_' and '.', or a value containing a newline or ending in a
// backslash).
func (c *Config) Write(w io.Writer) error {
	c.mu.RLock()
	defs := make([]def, 0, len(c.defs))
	for _, d := range c.defs {
		defs = append(defs, d)
	}
	c.mu.RUnlock()
	slices.SortFunc(defs, func(a, b def) int { return strings.Compare(a.key, b.key) })

	var b strings.Builder
	for _, d := range defs {
		if !validKey(d.key) {
			return fmt.Errorf("write config: invalid key %q", d.key)
		}
		if strings.ContainsAny(d.value, "\r\n") || strings.HasSuffix(d.value, `\`) {
			return fmt.Errorf("write config: value of %s cannot be written on one line", d.key)
		}
		b.WriteString(d.key)
		if d.value == "" {
			b.WriteString(" =\n")
			continue
		}
		b.WriteString(" = ")
		b.WriteString(d.value)
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// validKey reports whether k is a key the parser accepts.
func validKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if !isKeyByte(k[i]) {
			return false
		}
	}
	return true
}

func isKeyByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '.'
}
