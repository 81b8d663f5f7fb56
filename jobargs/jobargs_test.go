package jobargs

import (
	"slices"
	"testing"
)

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"a b  c", []string{"a", "b", "c"}},
		{"'one two' three", []string{"one two", "three"}},
		{"'it''s' x''y", []string{"it's", "xy"}},
		{"''", []string{""}},
		{"a'b c'd", []string{"ab cd"}},
	} {
		got, err := Split(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("Split(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := Split("'open"); err == nil {
		t.Error("Split of an unterminated quote succeeded")
	}
}

func TestJoinRoundTrip(t *testing.T) {
	for _, words := range [][]string{
		{"a", "b"}, {"with space", "it's", ""}, {"tab\there"},
	} {
		got, err := Split(Join(words))
		if err != nil || !slices.Equal(got, words) {
			t.Errorf("Split(Join(%q)) = %q, %v", words, got, err)
		}
	}
}

func TestSplitEnv(t *testing.T) {
	got, err := SplitEnv("A=1 B='x y'")
	if err != nil || !slices.Equal(got, []string{"A=1", "B=x y"}) {
		t.Errorf("SplitEnv = %q, %v", got, err)
	}
	if _, err := SplitEnv("novalue"); err == nil {
		t.Error("SplitEnv accepted an entry without '='")
	}
}

func FuzzSplit(f *testing.F) {
	f.Add("a 'b c' d''e")
	f.Fuzz(func(t *testing.T, s string) {
		words, err := Split(s)
		if err != nil {
			return
		}
		again, err := Split(Join(words))
		if err != nil || !slices.Equal(again, words) {
			t.Fatalf("round trip of %q: %q, %v", words, again, err)
		}
	})
}
