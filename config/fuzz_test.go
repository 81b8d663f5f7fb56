package config

import (
	"bytes"
	"io/fs"
	"slices"
	"strings"
	"testing"
)

// FuzzParse checks that the parser never panics or hangs, and that whatever
// it accepts survives Write and Parse with the same definitions.
func FuzzParse(f *testing.F) {
	seeds := []string{
		"A = 1\n",
		"A = $(B:x)\nB = $(A:y)\n",
		"X = a\nX = $(X) b\n",
		"LONG = a \\\n# c\n b\n",
		"use POLICY : Desktop\n",
		"include ifexist : nope.conf\n",
		"H = $ENV(HOME:$(A))\n",
		"M = $$(Memory) $(A:$(B:(c)))\n",
		"bad line\n",
		"A = $(A\n",
		"X = $(X:$(X:d))\r\n",
		"use = 3\ninclude = 4\n",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		opts := &Options{Env: noEnv, ReadFile: func(string) ([]byte, error) { return nil, fs.ErrNotExist }}
		opts.RegisterTemplate("POLICY", "Desktop", "START = $(START:true) && KeyboardIdle > 60\n")
		c, err := Parse(strings.NewReader(src), "fuzz.conf", opts)
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := c.Write(&buf); err != nil {
			return // a value that cannot be written on one line
		}
		c2, err := Parse(bytes.NewReader(buf.Bytes()), "written.conf", opts)
		if err != nil {
			t.Fatalf("re-parse of written config failed: %v\n%s", err, buf.String())
		}
		if !slices.Equal(c.Keys(), c2.Keys()) {
			t.Fatalf("keys changed: %v -> %v", c.Keys(), c2.Keys())
		}
		for _, k := range c.Keys() {
			v1, _ := c.Lookup(k)
			v2, _ := c2.Lookup(k)
			if v1 != v2 {
				t.Fatalf("%s changed: %q -> %q", k, v1, v2)
			}
		}
	})
}

func BenchmarkParse(b *testing.B) {
	var src strings.Builder
	for i := range 200 {
		src.WriteString("# setting\n")
		src.WriteString("KEY_" + strings.Repeat("X", i%7) + string(rune('A'+i%26)) + " = $(CONDOR_HOST):9618 \\\n   and more\n")
	}
	src.WriteString("CONDOR_HOST = cm.example.org\n")
	text := src.String()
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := Parse(strings.NewReader(text), "bench.conf", nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLookup(b *testing.B) {
	c := New()
	c.Set("CONDOR_HOST", "cm.example.org")
	c.Set("COLLECTOR_HOST", "$(CONDOR_HOST):$(PORT:9618)")
	c.Set("ADDR", "<$(COLLECTOR_HOST)>")
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := c.Lookup("ADDR"); !ok {
			b.Fatal("ADDR undefined")
		}
	}
}
