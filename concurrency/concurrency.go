// Package concurrency reads the concurrency limits a job names: the
// pool-wide resources (software licenses, database connections) it
// uses while it runs, which the matchmaker counts against the limits
// the pool's administrator sets, as HTCondor's concurrency_limits.
package concurrency

import (
	"fmt"
	"strconv"
	"strings"
)

// Use is a job's use of one concurrency limit.
type Use struct {
	Name string // lower case
	Use  float64
}

// maxUse bounds a job's use of one limit.
const maxUse = 1e9

// Parse reads a ConcurrencyLimits value: names separated by commas (or
// blanks), each with an optional ":USE", a positive number.
// Names are returned in lower case, each once (the uses of a name given
// twice add up).
func Parse(s string) ([]Use, error) {
	var uses []Use
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		name, num, hasUse := strings.Cut(f, ":")
		name = strings.ToLower(name)
		if !validName(name) {
			return nil, fmt.Errorf("concurrency limit %q: a name is letters, digits and underscores, with dots between them", f)
		}
		use := 1.0
		if hasUse {
			x, err := strconv.ParseFloat(num, 64)
			if err != nil || !(x > 0) || x > maxUse {
				return nil, fmt.Errorf("concurrency limit %q: the use after the colon must be a positive number", f)
			}
			use = x
		}
		i := 0
		for i < len(uses) && uses[i].Name != name {
			i++
		}
		if i == len(uses) {
			uses = append(uses, Use{Name: name})
		}
		if uses[i].Use += use; uses[i].Use > maxUse {
			return nil, fmt.Errorf("concurrency limit %q: a use of more than %g", name, float64(maxUse))
		}
	}
	return uses, nil
}

// validName reports whether name is a concurrency limit's: letters,
// digits and underscores, with dots between them (SET.NAME).
func validName(name string) bool {
	if name == "" || name[0] == '.' || name[len(name)-1] == '.' || strings.Contains(name, "..") {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// Format writes uses as a ConcurrencyLimits value, "name" for a use of
// 1 and "name:use" otherwise, separated by commas: how submit stores
// what a submit file names.
func Format(uses []Use) string {
	var b strings.Builder
	for i, u := range uses {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(u.Name)
		if u.Use != 1 {
			b.WriteByte(':')
			b.WriteString(strconv.FormatFloat(u.Use, 'g', -1, 64))
		}
	}
	return b.String()
}
