package concurrency

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []Use
	}{
		{"", nil},
		{"XSW", []Use{{"xsw", 1}}},
		{"xsw, DATABASE, fileserver:3", []Use{{"xsw", 1}, {"database", 1}, {"fileserver", 3}}},
		{"large.swlicense:0.5", []Use{{"large.swlicense", 0.5}}},
		{"a a:2", []Use{{"a", 3}}},
	} {
		got, err := Parse(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Parse(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"a:", "a:0", "a:-1", "a:x", ":2", ".a", "a.", "a..b", "a-b", `"a"`, "a:NaN", "a:1e99", "a:1e9 a:1e9"} {
		if got, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", bad, got)
		}
	}
}

func TestFormat(t *testing.T) {
	if got := Format([]Use{{"xsw", 1}, {"db", 2}, {"large.x", 0.5}}); got != "xsw,db:2,large.x:0.5" {
		t.Errorf("Format = %q", got)
	}
}

// FuzzParse: Parse never panics, gives lower-case names each once with
// positive uses, and reads back what Format writes of them.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"xsw", "a,b:2", "large.x:0.5, y", "a a:3", "", "a:", "..", "a:1e9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		uses, err := Parse(s)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, u := range uses {
			if u.Name != strings.ToLower(u.Name) || seen[u.Name] || !(u.Use > 0) || !validName(u.Name) {
				t.Fatalf("Parse(%q) = %v", s, uses)
			}
			seen[u.Name] = true
		}
		again, err := Parse(Format(uses))
		if err != nil || len(again) != len(uses) {
			t.Fatalf("Parse(Format(%v)) = %v, %v", uses, again, err)
		}
		for i := range uses {
			if again[i].Name != uses[i].Name || again[i].Use != uses[i].Use {
				t.Fatalf("Parse(Format(%v)) = %v", uses, again)
			}
		}
	})
}
