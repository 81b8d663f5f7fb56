package submit

import (
	"fmt"
	"strconv"
	"strings"
)

// A pySlice is a Python slice [start:end:step] selecting queue items.
type pySlice struct {
	v   [3]int
	set [3]bool
}

func parseSlice(s string) (*pySlice, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return nil, fmt.Errorf("bad slice [%s] (want [start:end:step])", s)
	}
	var sl pySlice
	for i, p := range parts {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil, fmt.Errorf("bad slice [%s]: %q is not an integer", s, p)
		}
		sl.v[i], sl.set[i] = n, true
	}
	if sl.set[2] && sl.v[2] == 0 {
		return nil, fmt.Errorf("bad slice [%s]: step is zero", s)
	}
	return &sl, nil
}

// apply returns the items the slice selects, with Python's rules for
// defaults, negative indices and clamping.
func (s *pySlice) apply(items []string) []string {
	n := len(items)
	step := 1
	if s.set[2] {
		step = s.v[2]
	}
	bound := func(i int) int {
		lo, hi := 0, n
		if step < 0 {
			lo, hi = -1, n-1
		}
		if i < 0 {
			i += n
		}
		return min(max(i, lo), hi)
	}
	start, end := 0, n
	if step < 0 {
		start, end = n-1, -1
	}
	if s.set[0] {
		start = bound(s.v[0])
	}
	if s.set[1] {
		end = bound(s.v[1])
	}
	var out []string
	for i := start; (step > 0 && i < end) || (step < 0 && i > end); i += step {
		out = append(out, items[i])
	}
	return out
}
