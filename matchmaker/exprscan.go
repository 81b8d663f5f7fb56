package matchmaker

import (
	"strings"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/classad/exprtext"
)

// This file finds which attributes a printed expression refers to, and in
// which ad (package exprtext scans the text). Wherever it is unsure it
// answers with more references, the safe side for autoclusters and
// machine classes.

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
func (r refs) addRefs(ad *classad.ClassAd, toks []exprtext.Token) {
	for i, t := range toks {
		if t.Kind != exprtext.Ident || exprtext.Keyword(t.Text) {
			continue
		}
		if i > 0 && toks[i-1].Kind == exprtext.Punct && toks[i-1].Text == "." {
			if i < 2 || toks[i-2].Kind != exprtext.Ident {
				continue
			}
			switch scopeOf(toks[i-2].Text) {
			case 'm':
				r.internal[strings.ToLower(t.Text)] = true
			case 't':
				r.external[strings.ToLower(t.Text)] = true
			}
			continue
		}
		if i+1 < len(toks) && toks[i+1].Kind == exprtext.Punct {
			switch toks[i+1].Text {
			case "(": // a function call
				continue
			case ".":
				if scopeOf(t.Text) != 0 {
					continue
				}
			}
		}
		name := strings.ToLower(t.Text)
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
				r.addRefs(ad, exprtext.Scan(e.String()))
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
			r.addRefs(ad, exprtext.Scan(e.String()))
		}
	}
	r.closure(ad)
	return r
}
