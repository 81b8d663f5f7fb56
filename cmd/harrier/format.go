package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"harrier.dev/harrier/cformat"
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
// %V (as -long prints), %r and %R (the expression as written), with C's
// flags, width and precision (see the cformat package).
type formatter struct {
	w     io.Writer
	pairs []formatPair
}

type formatPair struct {
	format cformat.Format
	name   string // the expression as given
	expr   classad.Expr
}

// formatVerbs are -format's conversions: C's, and HTCondor's %v %V %r %R.
const formatVerbs = cformat.IntVerbs + cformat.RealVerbs + cformat.StringVerbs + "vVrR"

func newFormatter(w io.Writer, pairs [][2]string) (*formatter, error) {
	f := &formatter{w: w}
	for _, p := range pairs {
		var fp formatPair
		var err error
		text := strings.NewReplacer(`\n`, "\n", `\t`, "\t").Replace(p[0])
		if fp.format, err = cformat.Parse(text, formatVerbs); err != nil && !errors.Is(err, cformat.ErrNoConversion) {
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
		b.WriteString(p.convert(e, v))
	}
	_, err = io.WriteString(f.w, b.String())
	return err
}

// convert fills p's format with v, the value of e.
func (p formatPair) convert(e classad.Expr, v classad.Value) string {
	verb := p.format.Verb()
	switch {
	case strings.IndexByte(cformat.IntVerbs, verb) >= 0:
		return p.format.Int(integerOf(v))
	case strings.IndexByte(cformat.RealVerbs, verb) >= 0:
		x, ok := v.RealValue()
		if !ok {
			n, isInt := v.IntValue()
			x = float64(n)
			if !isInt {
				x = math.NaN()
			}
		}
		return p.format.Real(x)
	case verb == 's' || verb == 'v':
		if s, ok := v.StringValue(); ok {
			return p.format.Str(s)
		}
		return p.format.Str(v.OldString())
	case verb == 'V':
		return p.format.Str(v.OldString())
	case verb == 'r' || verb == 'R':
		return p.format.Str(e.String())
	}
	return p.format.Str("") // no conversion: the format's text
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
