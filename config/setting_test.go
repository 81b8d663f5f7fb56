package config

import (
	"strings"
	"testing"
	"time"
)

// A setting says where its value comes from: a line of the file, a line
// of a template, or the program's default; Used lists what the program
// asked for, and Values and Setting do not count as asking.
func TestSettingOrigins(t *testing.T) {
	var o Options
	o.RegisterTemplate("POLICY", "Test", "\nSTART = $(IDLE) > 5\n")
	src := "# pool\nIDLE = KeyboardIdle\nuse POLICY : Test\nINTERVAL = \\\n  30\nUNUSED = 1\n"
	c, err := Parse(strings.NewReader(src), "pool.conf", &o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Duration("INTERVAL", time.Minute); err != nil {
		t.Fatal(err)
	}
	c.String("NAME", "exec1")
	c.Expand("start")
	c.Values()
	c.Setting("UNUSED")

	got := map[string]Setting{}
	for _, s := range c.Used() {
		got[s.Key] = s
	}
	if len(got) != 3 {
		t.Errorf("used %v, want INTERVAL, NAME and START", got)
	}
	want := map[string]Setting{
		"INTERVAL": {Key: "INTERVAL", Value: "30", Defined: true, Origin: "pool.conf:4", HasDefault: true, Default: "60"},
		"NAME":     {Key: "NAME", Value: "exec1", HasDefault: true, Default: "exec1"},
		"START":    {Key: "START", Value: "KeyboardIdle > 5", Defined: true, Origin: "pool.conf:3: use POLICY:Test:2"},
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %+v, want %+v", k, got[k], w)
		}
	}
	if s := c.Setting("unused"); !s.Defined || s.Origin != "pool.conf:6" || s.Value != "1" {
		t.Errorf("UNUSED: %+v", s)
	}
}

// BenchmarkUseTracking measures what recording each lookup costs: String
// (which records the key and its default) against the expansion alone,
// on a value with one macro reference.
func BenchmarkUseTracking(b *testing.B) {
	c, err := Parse(strings.NewReader("POOL_DIR = /var/lib/harrier\nSPOOL = $(POOL_DIR)/spool\n"), "pool.conf", nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("expand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.expand("SPOOL"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("String", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if c.String("SPOOL", "") == "" {
				b.Fatal("no SPOOL")
			}
		}
	})
}
