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
	return time.Unix(sec, 0).In(time.FixedZone("", off)).Format("2006-01-02T15:04:05-07:00")
}

// parseAbsTime reads ISO 8601 date-times as absTime() accepts them: with a
// zone offset ("Z", "+hh:mm", "+hhmm"), or without one meaning local time.
func parseAbsTime(s string, local *time.Location) (sec int64, off int, ok bool) {
	s = strings.TrimSpace(s)
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

// formatRelTime prints seconds as [-][D+]HH:MM:SS[.fff], libclassad's form.
func formatRelTime(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	var b strings.Builder
	if f < 0 {
		b.WriteByte('-')
		f = -f
	}
	whole := math.Floor(f)
	frac := f - whole
	secs := uint64(math.Min(whole, 1<<62))
	days := secs / 86400
	secs %= 86400
	if days > 0 {
		fmt.Fprintf(&b, "%d+", days)
	}
	fmt.Fprintf(&b, "%02d:%02d:%02d", secs/3600, secs/60%60, secs%60)
	if frac > 0 {
		ms := int(math.Round(frac * 1000))
		if ms > 0 && ms < 1000 {
			fmt.Fprintf(&b, ".%03d", ms)
		}
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
