package classad

import (
	"math"
	"strings"
	"time"
)

func registerTime(m map[string]builtin) {
	m["time"] = strict(0, 0, func(*evalCtx, []Value) Value { return Int(time.Now().Unix()) })
	m["splittime"] = strict(0, 1, splitTime)
	m["formattime"] = errorStrict(0, 2, formatTime)
	m["interval"] = errorStrict(1, 1, func(_ *evalCtx, a []Value) Value {
		i := toInt(a[0])
		if i.kind != IntKind {
			return i
		}
		return String(formatInterval(int64(int32(i.i())))) // a C int, as in libclassad
	})
	fields := map[string]func(t time.Time) int{
		"getyear":       func(t time.Time) int { return t.Year() },
		"getmonth":      func(t time.Time) int { return int(t.Month()) },
		"getdayofyear":  func(t time.Time) int { return t.YearDay() - 1 },
		"getdayofmonth": func(t time.Time) int { return t.Day() },
		"getdayofweek":  func(t time.Time) int { return int(t.Weekday()) },
		"gethours":      func(t time.Time) int { return t.Hour() },
		"getminutes":    func(t time.Time) int { return t.Minute() },
		"getseconds":    func(t time.Time) int { return t.Second() },
	}
	relFields := map[string]func(sec int64) int64{
		"getdays":    func(s int64) int64 { return s / 86400 },
		"gethours":   func(s int64) int64 { return s / 3600 % 24 },
		"getminutes": func(s int64) int64 { return s / 60 % 60 },
		"getseconds": func(s int64) int64 { return s % 60 },
	}
	for _, name := range []string{"getyear", "getmonth", "getdayofyear", "getdayofmonth", "getdayofweek", "gethours", "getminutes", "getseconds", "getdays"} {
		abs, rel := fields[name], relFields[name]
		m[name] = errorStrict(1, 1, func(_ *evalCtx, a []Value) Value {
			switch v := a[0]; {
			case v.kind == AbsTimeKind && abs != nil:
				return Int(int64(abs(time.Unix(v.i(), 0).UTC()))) // in UTC, as libclassad
			case v.kind == RelTimeKind && rel != nil:
				return Int(rel(cInt32(v.f())))
			}
			return Value{kind: ErrorKind}
		})
	}
}

// timeOf converts an absolute time to a time.Time in its own zone.
func timeOf(v Value) time.Time {
	return time.Unix(v.i(), 0).In(time.FixedZone("", int(v.off)))
}

// asAbsTime accepts an absolute time or seconds since the epoch.
//
// An integer is taken whole, a real as a C int (see absTimeFn).
func asAbsTime(v Value) (Value, bool) {
	var sec int64
	switch v.kind {
	case AbsTimeKind:
		return v, true
	case IntKind:
		sec = v.i()
	case RealKind:
		sec = cInt32(v.f())
	default:
		return v, false
	}
	return AbsTime(sec, localOffset(sec)), true
}

// splitTime returns the parts of a time as a ClassAd.
func splitTime(_ *evalCtx, a []Value) Value {
	var v Value
	if len(a) == 0 {
		v = absTimeFn(nil, nil)
	} else if a[0].kind == RelTimeKind {
		s := a[0].f()
		neg := s < 0
		s = math.Abs(s)
		whole := int64(s)
		days, hours, mins, secs := whole/86400, whole/3600%24, whole/60%60, s-float64(whole/60*60)
		// A negative time carries its sign on its first unit that is not
		// zero, as libclassad writes it.
		switch {
		case !neg:
		case days != 0:
			days = -days
		case hours != 0:
			hours = -hours
		case mins != 0:
			mins = -mins
		default:
			secs = -secs
		}
		// In the order libclassad prints them.
		ad := New()
		ad.SetInt("Days", days)
		ad.SetString("Type", "RelativeTime")
		ad.SetInt("Hours", hours)
		ad.SetInt("Minutes", mins)
		ad.SetReal("Seconds", secs)
		return AdValue(ad)
	} else {
		var ok bool
		if v, ok = asAbsTime(a[0]); !ok {
			return Value{kind: ErrorKind}
		}
	}
	t := timeOf(v)
	ad := New()
	ad.SetInt("Day", int64(t.Day()))
	ad.SetString("Type", "AbsoluteTime")
	ad.SetInt("Year", int64(t.Year()))
	ad.SetInt("Hours", int64(t.Hour()))
	ad.SetInt("Month", int64(t.Month()))
	ad.SetInt("Offset", int64(v.off))
	ad.SetInt("Minutes", int64(t.Minute()))
	ad.SetInt("Seconds", int64(t.Second()))
	return AdValue(ad)
}

// formatTime([t [, format]]) formats like strftime; the default is "%c".
func formatTime(_ *evalCtx, a []Value) Value {
	v := absTimeFn(nil, nil)
	format := "%c"
	if len(a) > 0 {
		var ok bool
		if v, ok = asAbsTime(a[0]); !ok {
			return Value{kind: ErrorKind}
		}
	}
	if len(a) > 1 {
		if a[1].kind != StringKind {
			return Value{kind: ErrorKind}
		}
		format = a[1].s()
	}
	// libclassad formats the time's clock reading as if it were UTC.
	return String(strftime(time.Unix(v.i()+int64(v.off), 0).UTC(), format))
}

// strftime implements the C conversions HTCondor users rely on.
func strftime(t time.Time, f string) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 == len(f) {
			b.WriteByte(f[i])
			continue
		}
		i++
		var layout string
		switch f[i] {
		case 'a':
			layout = "Mon"
		case 'A':
			layout = "Monday"
		case 'b', 'h':
			layout = "Jan"
		case 'B':
			layout = "January"
		case 'c':
			layout = "Mon Jan _2 15:04:05 2006"
		case 'd':
			layout = "02"
		case 'e':
			layout = "_2"
		case 'D':
			layout = "01/02/06"
		case 'F':
			layout = "2006-01-02"
		case 'H':
			layout = "15"
		case 'I':
			layout = "03"
		case 'j':
			layout = "002"
		case 'm':
			layout = "01"
		case 'M':
			layout = "04"
		case 'p':
			layout = "PM"
		case 'S':
			layout = "05"
		case 'T':
			layout = "15:04:05"
		case 'R':
			layout = "15:04"
		case 'x':
			layout = "01/02/06"
		case 'X':
			layout = "15:04:05"
		case 'y':
			layout = "06"
		case 'Y':
			layout = "2006"
		case 'z':
			layout = "-0700"
		case 'Z':
			layout = "MST"
		case 'n':
			b.WriteByte('\n')
			continue
		case 't':
			b.WriteByte('\t')
			continue
		case 'u':
			wd := int(t.Weekday())
			if wd == 0 {
				wd = 7
			}
			b.WriteByte(byte('0' + wd))
			continue
		case 'w':
			b.WriteByte(byte('0' + int(t.Weekday())))
			continue
		case 's':
			b.WriteString(Int(t.Unix()).String())
			continue
		case '%':
			b.WriteByte('%')
			continue
		default:
			b.WriteByte('%')
			b.WriteByte(f[i])
			continue
		}
		b.WriteString(t.Format(layout))
	}
	return b.String()
}
