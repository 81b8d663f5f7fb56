// Package cformat formats values as C's printf does with a format that
// holds one conversion, as HTCondor's tools and submit language take
// them ($INT, $REAL and $STRING in a submit file, condor_q -format).
package cformat

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// The C conversions of each kind of value. Parse also takes conversion
// characters of the caller's own (condor_q's %v, say), which format
// strings as %s does.
const (
	IntVerbs    = "diouxXc"
	RealVerbs   = "eEfFgG"
	StringVerbs = "s"
)

// ErrNoConversion reports a format without a conversion; the Format
// Parse returns with it prints the format's text.
var ErrNoConversion = errors.New("format holds no conversion")

// A Format is a C printf format holding exactly one conversion,
// rewritten for Go's fmt.
type Format struct {
	before, after string // literal text around the conversion, "%%" already turned into "%"
	spec          string // the conversion in Go's syntax
	verb          byte   // the C conversion character
	left          bool   // the - flag
	plus          bool   // the + flag
	width         string
}

// Parse reads a C format whose conversion must be one of verbs. Flags,
// width, precision and length modifiers (which Go does not need) are
// accepted; "*" widths, a second conversion and conversions of another
// type are refused.
func Parse(f, verbs string) (Format, error) {
	var out Format
	var lit strings.Builder
	found := false
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			lit.WriteByte(f[i])
			continue
		}
		if i+1 < len(f) && f[i+1] == '%' {
			lit.WriteByte('%')
			i++
			continue
		}
		if found {
			return Format{}, fmt.Errorf("format %q holds more than one conversion", f)
		}
		found = true
		out.before = lit.String()
		lit.Reset()
		j := i + 1
		flags := j
		for j < len(f) && strings.IndexByte("-+ #0", f[j]) >= 0 {
			j++
		}
		flagText := f[flags:j]
		w := j
		for j < len(f) && '0' <= f[j] && f[j] <= '9' {
			j++
		}
		out.width = f[w:j]
		p := j
		if j < len(f) && f[j] == '.' {
			j++
			for j < len(f) && '0' <= f[j] && f[j] <= '9' {
				j++
			}
		}
		prec := f[p:j]
		for j < len(f) && strings.IndexByte("hlLqjzt", f[j]) >= 0 {
			j++
		}
		if j >= len(f) {
			return Format{}, fmt.Errorf("format %q ends inside a conversion", f)
		}
		if f[j] == '*' {
			return Format{}, fmt.Errorf("format %q: a * width or precision is not allowed", f)
		}
		out.verb = f[j]
		if strings.IndexByte(verbs, out.verb) < 0 {
			return Format{}, fmt.Errorf("%%%c is not a valid conversion here (want one of %s)", out.verb, strings.Join(strings.Split(verbs, ""), " "))
		}
		goVerb := out.verb
		switch goVerb {
		case 'i', 'u':
			goVerb = 'd'
		case 'g', 'G':
			if prec == "" {
				prec = ".6" // C's default; Go's %g would print the shortest form
			}
		case 's':
			flagText = strings.ReplaceAll(flagText, "0", "") // C pads strings with spaces
		default:
			if strings.IndexByte(IntVerbs+RealVerbs, goVerb) < 0 {
				// The caller's own: a string.
				goVerb = 's'
				flagText = strings.ReplaceAll(flagText, "0", "")
			}
		}
		out.left = strings.Contains(flagText, "-")
		out.plus = strings.Contains(flagText, "+")
		out.spec = "%" + flagText + out.width + prec + string(goVerb)
		i = j
	}
	if !found {
		return Format{before: lit.String()}, ErrNoConversion
	}
	out.after = lit.String()
	return out, nil
}

// Verb is the format's conversion character, as written (0 for none).
func (f *Format) Verb() byte { return f.verb }

// Int formats an integer.
func (f *Format) Int(n int64) string {
	return f.before + fmt.Sprintf(f.spec, n) + f.after
}

// Str formats a string; with no conversion, it is the format's text.
func (f *Format) Str(s string) string {
	if f.verb == 0 {
		return f.before
	}
	return f.before + fmt.Sprintf(f.spec, s) + f.after
}

// Real formats as C does, which spells infinities and NaN inf and nan
// (INF and NAN for upper-case conversions).
func (f *Format) Real(g float64) string {
	if !math.IsInf(g, 0) && !math.IsNaN(g) {
		return f.before + fmt.Sprintf(f.spec, g) + f.after
	}
	s := "nan"
	switch {
	case math.IsInf(g, 1) && f.plus:
		s = "+inf"
	case math.IsInf(g, 1):
		s = "inf"
	case math.IsInf(g, -1):
		s = "-inf"
	}
	if 'A' <= f.verb && f.verb <= 'Z' {
		s = strings.ToUpper(s)
	}
	pad := "%" + f.width + "s"
	if f.left {
		pad = "%-" + f.width + "s"
	}
	return f.before + fmt.Sprintf(pad, s) + f.after
}
