package cformat

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestFormats(t *testing.T) {
	for _, tc := range []struct {
		format, verbs string
		value         any
		want          string
	}{
		{"%05d!", IntVerbs, int64(42), "00042!"},
		{"%i", IntVerbs, int64(-7), "-7"},
		{"[%-6s]", StringVerbs, "ab", "[ab    ]"},
		{"%08s", StringVerbs, "ab", "      ab"},
		{"%g", RealVerbs, 1.0 / 3, "0.333333"},
		{"%+.1f", RealVerbs, math.Inf(1), "+inf"},
		{"%E", RealVerbs, math.NaN(), "NAN"},
		{"<%4v>", "v", "x", "<   x>"},
		{"100%% %s", StringVerbs, "done", "100% done"},
	} {
		f, err := Parse(tc.format, tc.verbs)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.format, err)
		}
		var got string
		switch v := tc.value.(type) {
		case int64:
			got = f.Int(v)
		case float64:
			got = f.Real(v)
		case string:
			got = f.Str(v)
		}
		if got != tc.want {
			t.Errorf("%q with %v: %q, want %q", tc.format, tc.value, got, tc.want)
		}
	}
	f, err := Parse("plain 100%%", StringVerbs)
	if !errors.Is(err, ErrNoConversion) || f.Str("ignored") != "plain 100%" {
		t.Errorf("a format without a conversion: %v, %q", err, f.Str("ignored"))
	}
	for _, bad := range []string{"%d %d", "%*d", "%q", "%"} {
		if _, err := Parse(bad, IntVerbs); err == nil || errors.Is(err, ErrNoConversion) {
			t.Errorf("Parse(%q) = %v, want an error", bad, err)
		}
	}
}

// FuzzParse: any format either parses, and then formats every kind of
// value without panicking, or is refused with an error.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"%d", "%-08.3f", "%s%%", "x", "%*d", "%lld", "%", "%5.2G and", "%v"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fm, err := Parse(s, IntVerbs+RealVerbs+StringVerbs+"v")
		if err != nil && !errors.Is(err, ErrNoConversion) {
			return
		}
		switch v := fm.Verb(); {
		case v == 0:
			_ = fm.Str("x")
		case strings.IndexByte(IntVerbs, v) >= 0:
			_ = fm.Int(-12345)
		case strings.IndexByte(RealVerbs, v) >= 0:
			_, _ = fm.Real(math.Pi), fm.Real(math.Inf(-1))
		default:
			_ = fm.Str("text")
		}
	})
}
