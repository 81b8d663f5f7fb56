package config

import (
	"slices"
	"strings"
)

// A Setting is one key as a program sees it: its value and where the
// value comes from.
type Setting struct {
	// Key is spelled as defined, or as asked for if not defined.
	Key string
	// Value is the expanded value, or the program's default.
	Value string
	// Defined: the configuration defines Key. Origin is then where:
	// "FILE:LINE", with the use line's template after it for a value
	// from a template ("pool.conf:3: use POLICY:Desktop:12"), or empty
	// for a value set in code.
	Defined bool
	Origin  string
	// HasDefault: the program asked with a default (String, Int, Bool,
	// Duration), which Default holds as text.
	HasDefault bool
	Default    string
	// Err is why the value does not expand (a reference cycle).
	Err error
}

// use is what a program asked of one key.
type use struct {
	key        string
	def        string
	hasDefault bool
}

// noteUse records that the program looked key up, with its default if
// it gave one.
func (c *Config) noteUse(key, def string, hasDefault bool) {
	lk := strings.ToLower(key)
	c.usedMu.Lock()
	defer c.usedMu.Unlock()
	if u, ok := c.used[lk]; ok && u.hasDefault && !hasDefault {
		return // keep the default a getter gave
	}
	c.used[lk] = use{key: key, def: def, hasDefault: hasDefault}
}

// Setting describes key. It does not count as a use of key.
func (c *Config) Setting(key string) Setting {
	lk := strings.ToLower(key)
	c.usedMu.Lock()
	u, asked := c.used[lk]
	c.usedMu.Unlock()
	s := Setting{Key: key}
	if asked {
		s.HasDefault, s.Default = u.hasDefault, u.def
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	d, ok := c.defs[lk]
	if !ok {
		s.Value = s.Default
		return s
	}
	s.Key, s.Defined, s.Origin = d.key, true, d.pos
	s.Value, s.Err = newExpander(c.defs, c.env).key(lk)
	if s.Err != nil {
		s.Err = d.wrap(s.Err)
	}
	// A getter treats a defined but empty value as its default.
	if s.Value == "" && s.HasDefault {
		s.Value = s.Default
	}
	return s
}

// Used describes every key the program has looked up (with Lookup,
// Expand or a typed getter), defined or not, in key order: the
// configuration the program actually uses.
func (c *Config) Used() []Setting {
	c.usedMu.Lock()
	keys := make([]string, 0, len(c.used))
	for _, u := range c.used {
		keys = append(keys, u.key)
	}
	c.usedMu.Unlock()
	slices.SortFunc(keys, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
	settings := make([]Setting, 0, len(keys))
	for _, k := range keys {
		settings = append(settings, c.Setting(k))
	}
	return settings
}

// Values returns the expanded value of every defined key that expands,
// by key as spelled. It does not count as a use.
func (c *Config) Values() map[string]string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e := newExpander(c.defs, c.env)
	values := make(map[string]string, len(c.defs))
	for lk, d := range c.defs {
		if v, err := e.key(lk); err == nil {
			values[d.key] = v
		}
	}
	return values
}
