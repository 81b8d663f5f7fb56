package classad

import (
	"fmt"
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
		if math.IsInf(s, 0) || math.IsNaN(s) {
			// What libclassad's C int conversion makes of it.
			ad := New()
			ad.SetInt("Days", -24855)
			ad.SetString("Type", "RelativeTime")
			ad.SetInt("Hours", -3)
			ad.SetInt("Minutes", -14)
			ad.SetReal("Seconds", math.NaN())
			return AdValue(ad)
		}
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
	var fields *ClassAd
	if len(a) > 0 {
		var ok bool
		if fields, ok = a[0].ClassAdValue(); !ok {
			if v, ok = asAbsTime(a[0]); !ok {
				return Value{kind: ErrorKind}
			}
		}
	}
	if len(a) > 1 {
		if a[1].kind != StringKind {
			return Value{kind: ErrorKind}
		}
		format = a[1].s()
	}
	if fields != nil {
		return String(strftime(clockOfAd(fields), format)) // the fields of a split time
	}
	// libclassad formats the time's clock reading as if it were UTC.
	return String(strftime(clockOf(time.Unix(v.i()+int64(v.off), 0).UTC()), format))
}

// strftime implements the C conversions HTCondor users rely on.
// clock is a broken-down time as C's struct tm holds it, so that
// formatTime can print the fields of a ClassAd as given (day 0 of January
// prints as such) and those of a time.
type clock struct {
	year, mon, mday, hour, min, sec int // mon counts from 0
	wday, yday                      int
	unix                            int64
}

func clockOf(t time.Time) clock {
	return clock{t.Year(), int(t.Month()) - 1, t.Day(), t.Hour(), t.Minute(), t.Second(),
		int(t.Weekday()), t.YearDay() - 1, t.Unix()}
}

// clockOfAd reads the fields splitTime writes; missing ones are zero, the
// year 1900, as in libclassad's struct tm.
func clockOfAd(ad *ClassAd) clock {
	field := func(name string, def int64) int {
		if v := ad.Eval(name); v.kind == IntKind {
			return int(v.i()) // only integers, as libclassad reads them
		}
		return int(def)
	}
	c := clock{year: field("Year", 1900), mon: field("Month", 1) - 1, mday: field("Day", 0),
		hour: field("Hours", 0), min: field("Minutes", 0), sec: field("Seconds", 0)}
	t := time.Date(c.year, time.Month(c.mon+1), c.mday, c.hour, c.min, c.sec, 0, time.UTC)
	c.unix = t.Unix()
	c.wday = int(time.Date(c.year, time.Month(c.mon+1), c.mday, 0, 0, 0, 0, time.UTC).Weekday()) // of the date as given
	c.yday = time.Date(c.year, time.Month(c.mon+1), 1, 0, 0, 0, 0, time.UTC).YearDay() - 1 + c.mday - 1
	return c
}

var (
	dayNames   = [...]string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
	monthNames = [...]string{"January", "February", "March", "April", "May", "June", "July",
		"August", "September", "October", "November", "December"}
)

func name(names []string, i, n int) string {
	if i < 0 || i >= len(names) {
		return "?"
	}
	if n > 0 {
		return names[i][:n]
	}
	return names[i]
}

// strftime formats c as C's strftime does in the C locale and UTC.
func strftime(c clock, f string) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 == len(f) {
			b.WriteByte(f[i])
			continue
		}
		i++
		switch f[i] {
		case 'a':
			b.WriteString(name(dayNames[:], c.wday, 3))
		case 'A':
			b.WriteString(name(dayNames[:], c.wday, 0))
		case 'b', 'h':
			b.WriteString(name(monthNames[:], c.mon, 3))
		case 'B':
			b.WriteString(name(monthNames[:], c.mon, 0))
		case 'c':
			b.WriteString(strftime(c, "%a %b %e %H:%M:%S %Y"))
		case 'd':
			fmt.Fprintf(&b, "%02d", c.mday)
		case 'e':
			fmt.Fprintf(&b, "%2d", c.mday)
		case 'D', 'x':
			b.WriteString(strftime(c, "%m/%d/%y"))
		case 'F':
			b.WriteString(strftime(c, "%Y-%m-%d"))
		case 'H':
			fmt.Fprintf(&b, "%02d", c.hour)
		case 'I':
			h := c.hour % 12
			if h == 0 {
				h = 12
			}
			fmt.Fprintf(&b, "%02d", h)
		case 'j':
			fmt.Fprintf(&b, "%03d", c.yday+1)
		case 'm':
			fmt.Fprintf(&b, "%02d", c.mon+1)
		case 'M':
			fmt.Fprintf(&b, "%02d", c.min)
		case 'p':
			if c.hour < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'S':
			fmt.Fprintf(&b, "%02d", c.sec)
		case 'T', 'X':
			b.WriteString(strftime(c, "%H:%M:%S"))
		case 'R':
			b.WriteString(strftime(c, "%H:%M"))
		case 'y':
			fmt.Fprintf(&b, "%02d", (c.year%100+100)%100)
		case 'Y':
			fmt.Fprintf(&b, "%d", c.year)
		case 'z':
			b.WriteString("+0000")
		case 'Z':
			b.WriteString("UTC")
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'u':
			wd := c.wday
			if wd == 0 {
				wd = 7
			}
			fmt.Fprintf(&b, "%d", wd)
		case 'w':
			fmt.Fprintf(&b, "%d", c.wday)
		case 's':
			fmt.Fprintf(&b, "%d", c.unix)
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(f[i])
		}
	}
	return b.String()
}
