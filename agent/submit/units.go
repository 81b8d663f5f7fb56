package submit

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// sizeUnits are condor_submit's size suffixes; like HTCondor, Harrier reads
// them as powers of 1024 whether or not an "i" is written.
var sizeUnits = map[string]float64{
	"k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
	"t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40,
}

// parseSize reads a size such as "512", "2GB" or "1.5 G". A plain number is
// in units of def bytes; the result is in units of out bytes, rounded up.
// literal is false when s is not a number with an optional unit, so that the
// caller can read it as an expression instead.
func parseSize(s string, def, out float64) (n int64, literal bool, err error) {
	i := 0
	for i < len(s) && (s[i] == '.' || '0' <= s[i] && s[i] <= '9') {
		i++
	}
	num, unit := s[:i], strings.TrimSpace(s[i:])
	if num == "" || strings.ContainsAny(unit, " \t()+-*/") {
		return 0, false, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, true, fmt.Errorf("bad number %q", num)
	}
	scale := def
	if unit != "" {
		u, ok := sizeUnits[strings.ToLower(unit)]
		if !ok {
			return 0, true, fmt.Errorf("bad unit %q in %q (want K, M, G or T)", unit, s)
		}
		scale = u
	}
	v := math.Ceil(f * scale / out)
	if v > math.MaxInt64/2 {
		return 0, true, fmt.Errorf("size %q is too large", s)
	}
	return int64(v), true, nil
}
