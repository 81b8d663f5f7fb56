package classad

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// formatAbsTime prints an absolute time as ISO 8601 with its zone offset,
// the form absTime() reads back.
func formatAbsTime(sec int64, off int) string {
	s := time.Unix(sec, 0).In(time.FixedZone("", off)).Format("2006-01-02T15:04:05-07:00")
	if off > -60 && off <= 0 {
		s = s[:len(s)-6] + "-00:00" // libclassad's sign when there are no minutes
	}
	return s
}

// parseAbsTime reads ISO 8601 date-times as absTime() accepts them: with a
// zone offset ("Z", "+hh:mm", "+hhmm"), or without one meaning local time.
func parseAbsTime(s string, local *time.Location) (sec int64, off int, ok bool) {
	s = strings.ToUpper(strings.TrimSpace(s))
	for _, layout := range []string{"2006-01-02T15:04:05Z07:00", "2006-01-02T15:04:05Z0700", "20060102T150405Z0700", "2006-01-02 15:04:05Z07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			_, off := t.Zone()
			return t.Unix(), off, true
		}
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "20060102T150405", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, local); err == nil {
			_, off := t.Zone()
			return t.Unix(), off, true
		}
	}
	return 0, 0, false
}

// formatRelTime prints seconds as libclassad does: [-][D+][HH:][MM:]SS,
// leading units only when not zero. With frac, fractional seconds print
// in C's %g form (relTime("01:1.5")), as in unparsed values; string()
// drops them. Like libclassad it takes the whole seconds as a C int, so
// durations past 68 years print as that conversion makes them.
func formatRelTime(f float64, frac bool) string {
	var b strings.Builder
	var secs int64
	nanSign := math.IsNaN(f) && math.Signbit(f)
	if frac {
		if f < 0 {
			b.WriteByte('-')
		}
		f = math.Abs(f)
		secs = cInt32(f)
	} else {
		// string() takes the sign of the whole seconds, negated as a C
		// int is (so -2^31 stays negative).
		secs = cInt32(f)
		if secs < 0 {
			b.WriteByte('-')
			secs = int64(-int32(secs))
		}
	}
	days, hours, mins := secs/86400, secs%86400/3600, secs%3600/60
	if days != 0 {
		fmt.Fprintf(&b, "%d+", days)
	}
	if days != 0 || hours != 0 {
		fmt.Fprintf(&b, "%02d:", hours)
	}
	if days != 0 || hours != 0 || mins != 0 {
		fmt.Fprintf(&b, "%02d:", mins)
	}
	if frac && (math.IsInf(f, 0) || nanSign) {
		b.WriteString("-nan") // what C's %g makes of libclassad's arithmetic here
	} else if frac && math.IsNaN(f) {
		b.WriteString("nan")
	} else if fr := f - math.Floor(f); frac && fr > 0 {
		b.WriteString(strconv.FormatFloat(float64(secs%60)+fr, 'g', 6, 64))
	} else {
		fmt.Fprintf(&b, "%02d", secs%60)
	}
	return b.String()
}

// cInt32 converts f to a 32-bit integer as x86's conversion does: NaN and
// values out of range become the most negative int32.
func cInt32(f float64) int64 {
	if math.IsNaN(f) || f >= 1<<31 || f <= -(1<<31)-1 {
		return math.MinInt32
	}
	return int64(int32(f))
}

// cInt64 converts f to an integer as x86's conversion does: NaN and
// values out of range become the most negative integer.
func cInt64(f float64) int64 {
	if math.IsNaN(f) || f >= 1<<63 || f < -(1<<63) {
		return math.MinInt64
	}
	return int64(f)
}

// formatInterval prints whole seconds as interval() does: [-][D+]H:MM:SS
// with the leading unit unpadded and leading zero units left out.
func formatInterval(secs int64) string {
	var b strings.Builder
	if secs < 0 {
		b.WriteByte('-')
		secs = -secs
	}
	days, hours, mins, s := secs/86400, secs%86400/3600, secs%3600/60, secs%60
	switch {
	case days != 0:
		fmt.Fprintf(&b, "%d+%02d:%02d:%02d", days, hours, mins, s)
	case hours != 0:
		fmt.Fprintf(&b, "%d:%02d:%02d", hours, mins, s)
	case mins != 0:
		fmt.Fprintf(&b, "%d:%02d", mins, s)
	default:
		fmt.Fprintf(&b, "%d", s)
	}
	return b.String()
}

// parseRelTime reads [-][D+][HH:]MM:SS[.fff] and also the unit form
// "1d2h3m4s" (any subset, in that order).
func parseRelTime(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	neg := false
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	}
	if s == "" {
		return 0, false
	}
	var total float64
	if strings.ContainsAny(s, "dhmsDHMS") && !strings.Contains(s, ":") {
		rest := s
		for rest != "" {
			i := 0
			for i < len(rest) && (isDigit(rest[i]) || rest[i] == '.') {
				i++
			}
			if i == 0 || i == len(rest) {
				return 0, false
			}
			n, err := strconv.ParseFloat(rest[:i], 64)
			if err != nil {
				return 0, false
			}
			switch rest[i] | 0x20 {
			case 'd':
				total += n * 86400
			case 'h':
				total += n * 3600
			case 'm':
				total += n * 60
			case 's':
				total += n
			default:
				return 0, false
			}
			rest = rest[i+1:]
		}
	} else {
		if d, rest, ok := strings.Cut(s, "+"); ok {
			n, err := strconv.ParseUint(d, 10, 32)
			if err != nil {
				return 0, false
			}
			total, s = float64(n)*86400, rest
		}
		parts := strings.Split(s, ":")
		if len(parts) > 3 {
			return 0, false
		}
		var acc float64
		for i, part := range parts {
			var n float64
			var err error
			if i == len(parts)-1 {
				n, err = strconv.ParseFloat(part, 64)
			} else {
				var u uint64
				u, err = strconv.ParseUint(part, 10, 32)
				n = float64(u)
			}
			if err != nil || part == "" || part[0] == '+' || part[0] == '-' {
				return 0, false
			}
			acc = acc*60 + n
		}
		total += acc
	}
	if math.IsNaN(total) || math.IsInf(total, 0) {
		return 0, false
	}
	if neg {
		total = -total
	}
	return total, true
}
