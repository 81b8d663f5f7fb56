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
//	n  each value on a line of its own
//	V  strings quoted, as ClassAd values
type autoformatter struct {
	w       io.Writer
	tw      *tabwriter.Writer // for h: the columns are aligned when all are read
	names   []string
	exprs   []classad.Expr
	jobID   bool
	sep     string
	label   bool
	newline bool
	quoted  bool
}

// newAutoformatter parses -af's options and the expressions it prints;
// jobs says whether the ads are jobs (the j option needs a job id).
func newAutoformatter(w io.Writer, opts string, srcs []string, jobs bool) (*autoformatter, error) {
	a := &autoformatter{w: w, names: srcs, sep: " "}
	header := false
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
			a.sep = "\t"
		case ',':
			a.sep = ","
		case 'l':
			a.label = true
		case 'n':
			a.newline = true
		case 'V':
			a.quoted = true
		default:
			return nil, usagef("-af:%c: not an option Harrier knows (j h t , l n V)", c)
		}
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
		a.heads(heads)
	}
	return a, nil
}

func (a *autoformatter) heads(heads []string) {
	if a.newline {
		fmt.Fprintln(a.w, strings.Join(heads, "\n"))
		return
	}
	fmt.Fprintln(a.w, strings.Join(heads, a.sep))
}

// add prints one ad, given as text.
func (a *autoformatter) add(text string) error {
	ad, err := classad.Parse(text)
	if err != nil {
		return fmt.Errorf("bad ad from the pool: %w", err)
	}
	var line strings.Builder
	field := func(name string, v classad.Value) {
		if line.Len() > 0 {
			if a.newline {
				line.WriteByte('\n')
			} else {
				line.WriteString(a.sep)
			}
		}
		if a.label {
			line.WriteString(name + " = ")
		}
		if s, ok := v.StringValue(); ok && !a.quoted {
			line.WriteString(s)
		} else {
			line.WriteString(v.String())
		}
	}
	if a.jobID {
		c, _ := ad.EvalInt("ClusterId")
		p, _ := ad.EvalInt("ProcId")
		field("ID", classad.String(fmt.Sprintf("%d.%d", c, p)))
	}
	for i, e := range a.exprs {
		field(a.names[i], ad.EvalExpr(e, nil))
	}
	line.WriteByte('\n')
	if a.newline {
		line.WriteByte('\n')
	}
	_, err = io.WriteString(a.w, line.String())
	return err
}

// finish prints the aligned columns, if any.
func (a *autoformatter) finish() error {
	if a.tw != nil {
		return a.tw.Flush()
	}
	return nil
}
