package reservation

import (
	"cmp"
	"slices"
	"time"

	"harrier.dev/harrier/classad"
)

// The functions PluS adds to the policy's language (the paper's Section
// 5), bound in the policy's evaluation context only.

// rsvutil is plus_rsvutil(user, from, to) over history: the list {number
// of the user's reservations overlapping [from, to], their total time
// inside it as a relative time, and the sum of nodes × hours inside it}.
func rsvutil(history []Reservation) classad.Func {
	return func(k classad.Call) classad.Value {
		if k.Len() != 3 {
			return classad.Error()
		}
		user, ok := k.Arg(0).StringValue()
		from, ok1 := timeOf(k.Arg(1))
		to, ok2 := timeOf(k.Arg(2))
		if !ok || !ok1 || !ok2 {
			return classad.Error()
		}
		var count int64
		var total time.Duration
		var nodeHours float64
		for _, r := range history {
			if r.Owner != user || !r.overlaps(from, to) {
				continue
			}
			end, start := r.End, r.Start
			if to.Before(end) {
				end = to
			}
			if from.After(start) {
				start = from
			}
			d := end.Sub(start)
			count++
			total += d
			nodeHours += float64(len(r.Nodes)) * d.Hours()
		}
		return classad.List(classad.Int(count), classad.RelTime(total.Seconds()), classad.Real(nodeHours))
	}
}

// timeOf reads an absolute time, or seconds since the epoch.
func timeOf(v classad.Value) (time.Time, bool) {
	if s, _, ok := v.AbsTimeValue(); ok {
		return time.Unix(s, 0), true
	}
	if s, ok := v.RealValue(); ok {
		return time.Unix(int64(s), 0), true
	}
	return time.Time{}, false
}

// evaluateList is evaluateList(list, "var", "attr"), the paper's map:
// the list of attr's values with var bound to each element of list.
func evaluateList(k classad.Call) classad.Value {
	if k.Len() != 3 {
		return classad.Error()
	}
	list, ok := k.Arg(0).ListValue()
	name, ok1 := k.Arg(1).StringValue()
	attr, ok2 := k.Arg(2).StringValue()
	if !ok || !ok1 || !ok2 {
		return classad.Error()
	}
	out := make([]classad.Value, len(list))
	for i, v := range list {
		out[i] = k.EvalBound(attr, name, v)
	}
	return classad.ListOf(out)
}

// linear is linear(x, x1, y1, x2, y2): y on the line through (x1, y1)
// and (x2, y2) at x, a real. Times count in seconds.
func linear(k classad.Call) classad.Value {
	if k.Len() != 5 {
		return classad.Error()
	}
	var f [5]float64
	for i := range f {
		v := k.Arg(i)
		if v.IsUndefined() {
			return v
		}
		x, ok := number(v)
		if !ok {
			return classad.Error()
		}
		f[i] = x
	}
	x, x1, y1, x2, y2 := f[0], f[1], f[2], f[3], f[4]
	if x1 == x2 {
		return classad.Error()
	}
	return classad.Real(y1 + (x-x1)*(y2-y1)/(x2-x1))
}

// number reads an integer, real, relative time or absolute time (in
// seconds) as a real.
func number(v classad.Value) (float64, bool) {
	switch v.Kind() {
	case classad.RelTimeKind:
		return v.RelTimeValue()
	case classad.AbsTimeKind:
		s, _, ok := v.AbsTimeValue()
		return float64(s), ok
	case classad.IntKind, classad.RealKind:
		return v.RealValue()
	}
	return 0, false
}

// reverseSort is reverseSort(list): the list sorted largest first, so
// that [0] is its maximum. Its elements must be all numbers (integers,
// reals), all absolute times, all relative times, or all strings.
func reverseSort(k classad.Call) classad.Value {
	if k.Len() != 1 {
		return classad.Error()
	}
	v := k.Arg(0)
	list, ok := v.ListValue()
	if !ok {
		if v.IsUndefined() {
			return v
		}
		return classad.Error()
	}
	if len(list) == 0 {
		return classad.List()
	}
	sorted := slices.Clone(list)
	kind := sortKind(sorted[0])
	for _, e := range sorted {
		if sortKind(e) != kind || kind == classad.ErrorKind {
			return classad.Error()
		}
	}
	if kind == classad.StringKind {
		slices.SortStableFunc(sorted, func(a, b classad.Value) int {
			sa, _ := a.StringValue()
			sb, _ := b.StringValue()
			return cmp.Compare(sb, sa)
		})
	} else {
		slices.SortStableFunc(sorted, func(a, b classad.Value) int {
			fa, _ := number(a)
			fb, _ := number(b)
			return cmp.Compare(fb, fa)
		})
	}
	return classad.ListOf(sorted)
}

// sortKind is the class of values reverseSort compares with each other.
func sortKind(v classad.Value) classad.Kind {
	switch k := v.Kind(); k {
	case classad.IntKind, classad.RealKind:
		return classad.RealKind
	case classad.AbsTimeKind, classad.RelTimeKind, classad.StringKind:
		return k
	}
	return classad.ErrorKind
}
