package submit

import "strings"

// A srcLine is one logical line of a description: continuation lines are
// joined and comment and blank lines dropped.
type srcLine struct {
	num  int // line number of its first physical line
	text string
}

// splitLines returns the logical lines of src. A line ending in a backslash
// continues on the next line, which is appended without the backslash.
func splitLines(src []byte) []srcLine {
	var (
		out  []srcLine
		cont strings.Builder
		from int
	)
	for i, raw := range strings.Split(string(src), "\n") {
		raw = strings.TrimRight(raw, " \t\r")
		if cont.Len() == 0 {
			from = i + 1
			if t := strings.TrimSpace(raw); t == "" || t[0] == '#' {
				continue
			}
		}
		if strings.HasSuffix(raw, `\`) {
			cont.WriteString(raw[:len(raw)-1])
			continue
		}
		cont.WriteString(raw)
		out = append(out, srcLine{num: from, text: strings.TrimSpace(cont.String())})
		cont.Reset()
	}
	if cont.Len() > 0 {
		out = append(out, srcLine{num: from, text: strings.TrimSpace(cont.String())})
	}
	return out
}
