package main

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/tabwriter"

	"harrier.dev/harrier/classad"
)

// autoformatFlag matches HTCondor's -af and -autoformat with their
// options after a colon (-af:jh).
var autoformatFlag = regexp.MustCompile(`^--?(?:af|autoformat)(?::(.*))?$`)

// takeAutoformat finds -af[:OPTS] in args and returns args with it made a
// plain -af (the flag package knows no colons), its options, and whether it
// was there.
func takeAutoformat(args []string) (out []string, opts string, found bool) {
	out = make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...), opts, found
		}
		if m := autoformatFlag.FindStringSubmatch(a); m != nil {
			out = append(out, "-af")
			opts, found = opts+m[1], true
			continue
		}
		out = append(out, a)
	}
	return out, opts, found
}

// autoformatter prints the values of expressions in each ad, one ad per
// line, as HTCondor's -autoformat does: separated by spaces, strings
// without quotes. Its options are HTCondor's letters:
//
//	j  the job id first         h  a heading of the names, columns aligned
//	t  tabs between values      ,  commas between values
//	l  each value as "Name = value"
//	n  a newline after each value
//	g  a newline between ads, and no space between values
//	V  strings quoted, as ClassAd values
//	r  the expressions as written, not evaluated
//
// so that -af:lrng prints what -long does.
type autoformatter struct {
	w       io.Writer
	tw      *tabwriter.Writer // for h: the columns are aligned when all are read
	names   []string
	exprs   []classad.Expr
	jobID   bool
	sep     string // between values
	label   bool
	newline bool
	between bool // g
	quoted  bool
	raw     bool
}

// newAutoformatter parses -af's options and the expressions it prints;
// jobs says whether the ads are jobs (the j option needs a job id).
func newAutoformatter(w io.Writer, opts string, srcs []string, jobs bool) (*autoformatter, error) {
	a := &autoformatter{w: w, names: srcs}
	header, tab, comma := false, false, false
	for _, c := range opts {
		switch c {
		case 'j':
			if !jobs {
				return nil, usagef("-af:j: these ads have no job id")
			}
			a.jobID = true
		case 'h':
			header = true
		case 't':
			tab = true
		case ',':
			comma = true
		case 'l':
			a.label = true
		case 'n':
			a.newline = true
		case 'g':
			a.between = true
		case 'V':
			a.quoted = true
		case 'r':
			a.raw = true
		default:
			return nil, usagef("-af:%c: not an option Harrier knows (j h t , l n g V r)", c)
		}
	}
	switch {
	case header && a.label:
		return nil, usagef("-af: l and h may not be used together")
	case comma && a.newline:
		return nil, usagef("-af: n and , may not be used together")
	case tab:
		a.sep = "\t"
	case comma:
		a.sep = ","
	case !a.between:
		a.sep = " "
	}
	if len(srcs) == 0 {
		return nil, usagef("-af wants attribute names")
	}
	a.exprs = make([]classad.Expr, len(srcs))
	for i, src := range srcs {
		e, err := classad.ParseExpr(src)
		if err != nil {
			return nil, usagef("-af %s: %v", src, err)
		}
		a.exprs[i] = e
	}
	if header && a.sep == " " && !a.newline {
		a.tw = tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
		a.w, a.sep = a.tw, "\t"
	}
	if header {
		heads := srcs
		if a.jobID {
			heads = append([]string{"ID"}, srcs...)
		}
		a.line(heads)
	}
	return a, nil
}

// line prints one ad's fields, or the heading.
func (a *autoformatter) line(fields []string) error {
	var b strings.Builder
	for i, f := range fields {
		if i > 0 && !a.newline {
			b.WriteString(a.sep)
		}
		b.WriteString(f)
		if a.newline {
			b.WriteByte('\n')
		}
	}
	if !a.newline {
		b.WriteByte('\n')
	}
	if a.between {
		b.WriteByte('\n')
	}
	_, err := io.WriteString(a.w, b.String())
	return err
}

// add prints one ad, given as text.
func (a *autoformatter) add(text string) error {
	ad, err := classad.Parse(text)
	if err != nil {
		return fmt.Errorf("bad ad from the pool: %w", err)
	}
	fields := make([]string, 0, len(a.exprs)+1)
	field := func(name, value string) {
		if a.label {
			value = name + " = " + value
		}
		fields = append(fields, value)
	}
	if a.jobID {
		field("ID", jobIDOf(ad))
	}
	for i, e := range a.exprs {
		if a.raw {
			// An attribute's own expression, else the one given.
			if x, ok := ad.Lookup(a.names[i]); ok {
				e = x
			}
			field(a.names[i], e.String())
			continue
		}
		v := ad.EvalExpr(e, nil)
		if s, ok := v.StringValue(); ok && !a.quoted {
			field(a.names[i], s)
		} else {
			field(a.names[i], v.OldString())
		}
	}
	return a.line(fields)
}

// finish prints the aligned columns, if any.
func (a *autoformatter) finish() error {
	if a.tw != nil {
		return a.tw.Flush()
	}
	return nil
}

// jobIDOf is a job ad's id, "cluster.proc".
func jobIDOf(ad *classad.ClassAd) string {
	c, _ := ad.EvalInt("ClusterId")
	p, _ := ad.EvalInt("ProcId")
	return fmt.Sprintf("%d.%d", c, p)
}
