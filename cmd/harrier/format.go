package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"harrier.dev/harrier/classad"
)

// adPrinter prints ads one by one as the user asked (-af, -format).
type adPrinter interface {
	add(text string) error
	finish() error
}

// takeFormats finds HTCondor's -format FMT EXPR pairs in args (the flag
// package takes one value a flag) and returns args without them.
func takeFormats(args []string) (out []string, pairs [][2]string, err error) {
	out = make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...), pairs, nil
		}
		if a != "-format" && a != "--format" {
			out = append(out, a)
			continue
		}
		if i+2 >= len(args) {
			return nil, nil, usagef("-format wants a format and an attribute: -format '%%d\\n' ClusterId")
		}
		pairs = append(pairs, [2]string{args[i+1], args[i+2]})
		i += 2
	}
	return out, pairs, nil
}

// formatter prints each ad as HTCondor's -format does: for each pair, the
// format with its one conversion filled with the expression's value
// (escapes \n and \t in the format become a newline and a tab), nothing
// between pairs or ads but what the formats print. A pair whose
// attribute the ad lacks, and whose expression comes to undefined, is
// skipped. The conversions: %d %i %u %x %X %o %c (an integer: a real is
// truncated, a boolean is 1 or 0), %f %F %e %E %g %G (a number), %s (a
// string as it is, another value as ClassAd text), %v (as -af prints),
// %V (as -long prints), %r and %R (the expression as written).
type formatter struct {
	w     io.Writer
	pairs []formatPair
}

type formatPair struct {
	before, spec, after string // spec: "%5.2f", say, or "" for none
	verb                byte
	name                string // the expression as given
	expr                classad.Expr
}

func newFormatter(w io.Writer, pairs [][2]string) (*formatter, error) {
	f := &formatter{w: w}
	for _, p := range pairs {
		fp, err := parseFormat(p[0])
		if err != nil {
			return nil, usagef("-format %q: %v", p[0], err)
		}
		if fp.expr, err = classad.ParseExpr(p[1]); err != nil {
			return nil, usagef("-format %q %s: %v", p[0], p[1], err)
		}
		fp.name = p[1]
		f.pairs = append(f.pairs, fp)
	}
	return f, nil
}

// parseFormat splits a format around its one conversion.
func parseFormat(s string) (formatPair, error) {
	s = strings.NewReplacer(`\n`, "\n", `\t`, "\t").Replace(s)
	var p formatPair
	var text strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			text.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '%' {
			text.WriteByte('%')
			i++
			continue
		}
		if p.verb != 0 {
			return p, fmt.Errorf("more than one conversion")
		}
		j := i + 1
		for j < len(s) && strings.IndexByte("-+ #0123456789.l", s[j]) >= 0 {
			j++
		}
		if j == len(s) || strings.IndexByte("diuxXocfFeEgGsvVrR", s[j]) < 0 {
			return p, fmt.Errorf("no conversion Harrier knows at %q", s[i:])
		}
		p.before, p.verb = text.String(), s[j]
		p.spec = strings.ReplaceAll(s[i:j], "l", "")
		text.Reset()
		i = j
	}
	if p.verb == 0 {
		p.before = text.String()
	} else {
		p.after = text.String()
	}
	return p, nil
}

// add prints one ad, given as text.
func (f *formatter) add(text string) error {
	ad, err := classad.Parse(text)
	if err != nil {
		return fmt.Errorf("bad ad from the pool: %w", err)
	}
	var b strings.Builder
	for _, p := range f.pairs {
		e, own := ad.Lookup(p.name)
		if !own {
			e = p.expr
		}
		v := ad.EvalExpr(e, nil)
		if !own && v.IsUndefined() {
			continue
		}
		b.WriteString(p.before)
		if p.verb != 0 {
			b.WriteString(p.convert(e, v))
		}
		b.WriteString(p.after)
	}
	_, err = io.WriteString(f.w, b.String())
	return err
}

// convert fills p's conversion with v, the value of e.
func (p formatPair) convert(e classad.Expr, v classad.Value) string {
	spec := p.spec
	switch p.verb {
	case 'd', 'i', 'u', 'x', 'X', 'o', 'c':
		verb := map[byte]byte{'i': 'd', 'u': 'd'}[p.verb]
		if verb == 0 {
			verb = p.verb
		}
		return fmt.Sprintf(spec+string(verb), integerOf(v))
	case 'f', 'F', 'e', 'E', 'g', 'G':
		x, ok := v.RealValue()
		if !ok {
			n, isInt := v.IntValue()
			x = float64(n)
			if !isInt {
				x = math.NaN()
			}
		}
		return fmt.Sprintf(spec+string(p.verb), x)
	case 's', 'v':
		if s, ok := v.StringValue(); ok {
			return fmt.Sprintf(spec+"s", s)
		}
		return fmt.Sprintf(spec+"s", v.OldString())
	case 'V':
		return fmt.Sprintf(spec+"s", v.OldString())
	default: // r, R
		return fmt.Sprintf(spec+"s", e.String())
	}
}

// integerOf is v as an integer: a real truncated, a boolean 1 or 0, a
// string of digits read, anything else 0.
func integerOf(v classad.Value) int64 {
	if n, ok := v.IntValue(); ok {
		return n
	}
	if x, ok := v.RealValue(); ok {
		return int64(x)
	}
	if b, ok := v.BoolValue(); ok && b {
		return 1
	}
	if s, ok := v.StringValue(); ok {
		n, _ := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		return n
	}
	return 0
}

func (f *formatter) finish() error { return nil }
