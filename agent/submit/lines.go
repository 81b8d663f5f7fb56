package submit

import "strings"

// A srcLine is one logical line of a description: continuation lines are
// joined and comment and blank lines dropped.
type srcLine struct {
	num  int // line number of its first physical line
	text string
}

// splitLines returns the logical lines of src. White space around each
// physical line is dropped. A line ending in a backslash continues on the
// next line; a comment line inside a continued line is skipped and the
// line goes on, and a comment line never continues. A blank line ends a
// continued line.
func splitLines(src []byte) []srcLine {
	var (
		out    []srcLine
		cont   strings.Builder
		inCont bool
		from   int
	)
	for i, raw := range strings.Split(string(src), "\n") {
		t := strings.Trim(raw, " \t\r\v\f")
		if !inCont {
			from = i + 1
			if t == "" || t[0] == '#' {
				continue
			}
		} else if t != "" && t[0] == '#' {
			continue
		}
		if strings.HasSuffix(t, `\`) {
			cont.WriteString(t[:len(t)-1])
			inCont = true
			continue
		}
		cont.WriteString(t)
		out = append(out, srcLine{num: from, text: strings.TrimSpace(cont.String())})
		cont.Reset()
		inCont = false
	}
	if inCont {
		if t := strings.TrimSpace(cont.String()); t != "" {
			out = append(out, srcLine{num: from, text: t})
		}
	}
	return out
}
