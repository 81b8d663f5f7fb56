package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func mustParse(t *testing.T, src string, opts *Options) *Config {
	t.Helper()
	c, err := Parse(strings.NewReader(src), "pool.conf", opts)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return c
}

func noEnv(string) (string, bool) { return "", false }

func TestLookup(t *testing.T) {
	env := func(k string) (string, bool) {
		if k == "HOME" {
			return "/home/u", true
		}
		return "", false
	}
	src := `# Harrier pool configuration
CONDOR_HOST = cm.example.org
  collector_host   =   $(CONDOR_HOST):9618  

LONG = one \
       two \
# a comment inside a continued line is skipped
       three
LATER = $(DEFINED_BELOW)
DEFINED_BELOW = below
OVERRIDE = first
override = second
WITH_DEFAULT = $(NOPE:fallback $(CONDOR_HOST))
UNDEFINED = [$(NOPE)]
HOMEDIR = $ENV(HOME)/jobs
NOENV = $ENV(NO_SUCH_VAR:none)
LIST = a
LIST = $(LIST), b
LIST = $(LIST), c
SELF_NEW = $(SELF_NEW:start) end
MATCHTIME = $$(Memory) and $5
START = KeyboardIdle > 15 * $(MINUTE) && LoadAvg < 0.3
MINUTE = 60
EMPTY =
`
	c := mustParse(t, src, &Options{Env: env})
	tests := []struct{ key, want string }{
		{"COLLECTOR_HOST", "cm.example.org:9618"},
		{"LONG", "one        two        three"},
		{"LATER", "below"},
		{"OVERRIDE", "second"},
		{"WITH_DEFAULT", "fallback cm.example.org"},
		{"UNDEFINED", "[]"},
		{"HOMEDIR", "/home/u/jobs"},
		{"NOENV", "none"},
		{"LIST", "a, b, c"},
		{"SELF_NEW", "start end"},
		{"MATCHTIME", "$$(Memory) and $5"},
		{"START", "KeyboardIdle > 15 * 60 && LoadAvg < 0.3"},
		{"EMPTY", ""},
	}
	for _, tt := range tests {
		got, ok := c.Lookup(tt.key)
		if !ok || got != tt.want {
			t.Errorf("Lookup(%q) = %q, %v; want %q", tt.key, got, ok, tt.want)
		}
	}
	if _, ok := c.Lookup("NOT_THERE"); ok {
		t.Errorf("Lookup of undefined key reported ok")
	}
	if got := c.String("EMPTY", "dflt"); got != "dflt" {
		t.Errorf("String(EMPTY) = %q, want default", got)
	}
	if got := c.Keys(); !slices.Contains(got, "override") || slices.Contains(got, "OVERRIDE") {
		t.Errorf("Keys() = %v, want the latest spelling of OVERRIDE", got)
	}
}

func TestSelfReferenceKeepsOtherMacrosLazy(t *testing.T) {
	c := New()
	c.Set("X", "$(A)")
	c.Set("X", "$(X) $(B)")
	c.Set("A", "a")
	c.Set("B", "b")
	if got, _ := c.Lookup("X"); got != "a b" {
		t.Errorf("X = %q, want %q", got, "a b")
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"missing equals", "A = 1\n\nFOO bar\n", `pool.conf:3: expected "=" after key "FOO"`},
		{"no key", "= 3\n", `pool.conf:1: expected a key`},
		{"cycle", "A = $(B)\nB = $(C)\nC = $(A)\n", "pool.conf:1: A: macro reference cycle"},
		{"unterminated", "A = 1\nB = $(A\n", `pool.conf:2: B: unterminated macro reference`},
		{"bad name", "B = $(A B)\n", `pool.conf:1: B: invalid character`},
		{"unknown template", "use POLICY : Nope\n", "pool.conf:1: unknown template POLICY:Nope"},
		{"bad use", "use POLICY\n", `pool.conf:1: expected "use CATEGORY : TEMPLATE"`},
		{"bad include", "include foo\n", `pool.conf:1: expected "include [ifexist] : PATH"`},
		{"continued error line", "A = 1\nB \\\n  C\n", `pool.conf:2: expected "=" after key "B"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tt.src), "pool.conf", &Options{ReadFile: noFiles})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func noFiles(string) ([]byte, error) { return nil, fs.ErrNotExist }

func TestCycleFromSet(t *testing.T) {
	c := New()
	c.Set("A", "$(B)")
	c.Set("B", "x $(A)")
	if _, ok := c.Lookup("A"); ok {
		t.Errorf("Lookup of a cyclic key reported ok")
	}
	if _, err := c.Expand("A"); !errors.Is(err, ErrCycle) {
		t.Errorf("Expand error = %v, want ErrCycle", err)
	}
	if _, err := c.Int("B", 0); !errors.Is(err, ErrCycle) {
		t.Errorf("Int error = %v, want ErrCycle", err)
	}
	if err := c.Check(); !errors.Is(err, ErrCycle) {
		t.Errorf("Check error = %v, want ErrCycle", err)
	}
}

func TestExponentialExpansionIsBounded(t *testing.T) {
	var b strings.Builder
	for i := range 40 {
		fmt.Fprintf(&b, "K%d = $(K%d)$(K%d)\n", i, i+1, i+1)
	}
	b.WriteString("K40 = leaf\n")
	_, err := Parse(strings.NewReader(b.String()), "pool.conf", nil)
	if err == nil || !strings.Contains(err.Error(), "longer than 1 MiB") {
		t.Fatalf("Parse error = %v, want the expansion limit", err)
	}
}

func TestTemplates(t *testing.T) {
	var opts Options
	opts.RegisterTemplate("POLICY", "Desktop", `
START = KeyboardIdle > $(IDLE_TIME:900)
SUSPEND = KeyboardIdle < 60
`)
	opts.RegisterTemplate("ROLE", "Execute", "DAEMON_LIST = $(DAEMON_LIST) STARTD\n")
	opts.RegisterTemplate("ROLE", "Submit", "DAEMON_LIST = $(DAEMON_LIST) AGENT\n")
	opts.RegisterTemplate("BROKEN", "Bad", "A = 1\nNOPE\n")
	c := mustParse(t, `IDLE_TIME = 300
DAEMON_LIST = MASTER
use policy : desktop
use ROLE : Execute, Submit
SUSPEND = False
`, &opts)
	want := map[string]string{
		"START":       "KeyboardIdle > 300",
		"SUSPEND":     "False",
		"DAEMON_LIST": "MASTER STARTD AGENT",
	}
	for k, w := range want {
		if got, _ := c.Lookup(k); got != w {
			t.Errorf("%s = %q, want %q", k, got, w)
		}
	}
	_, err := Parse(strings.NewReader("X = 1\nuse BROKEN : Bad\n"), "pool.conf", &opts)
	if err == nil || !strings.Contains(err.Error(), `pool.conf:2: use BROKEN:Bad:2: expected "=" after key "NOPE"`) {
		t.Errorf("error in template = %v", err)
	}
}

func TestLoadInclude(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("pool.conf", "A = 1\ninclude : local.conf\ninclude ifexist : missing.conf\nC = $(B)!\n")
	write("local.conf", "B = from local\nA = 2\n")
	c, err := Load(filepath.Join(dir, "pool.conf"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Lookup("A"); got != "2" {
		t.Errorf("A = %q, want 2", got)
	}
	if got, _ := c.Lookup("C"); got != "from local!" {
		t.Errorf("C = %q", got)
	}

	write("loop.conf", "include : loop.conf\n")
	if _, err := Load(filepath.Join(dir, "loop.conf"), nil); err == nil || !strings.Contains(err.Error(), "nested more than") {
		t.Errorf("self-include error = %v", err)
	}
	write("bad.conf", "include : missing.conf\n")
	if _, err := Load(filepath.Join(dir, "bad.conf"), nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing include error = %v, want ErrNotExist", err)
	}
	if _, err := Load(filepath.Join(dir, "nope.conf"), nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load of missing file error = %v", err)
	}
}

func TestTypedGetters(t *testing.T) {
	c := mustParse(t, `
N = 42
NEG = -7
BADN = 4x
T1 = TRUE
T2 = yes
T3 = 1
F1 = False
F2 = NO
F3 = 0
BADB = maybe
D1 = 300
D2 = 1.5
D3 = 5m
D4 = 1h30m
BADD = soon
INDIRECT = $(N)
BLANK =
`, nil)
	ints := []struct {
		key  string
		want int64
	}{{"N", 42}, {"NEG", -7}, {"INDIRECT", 42}, {"MISSING", 9}, {"BLANK", 9}}
	for _, tt := range ints {
		if got, err := c.Int(tt.key, 9); err != nil || got != tt.want {
			t.Errorf("Int(%s) = %d, %v; want %d", tt.key, got, err, tt.want)
		}
	}
	for _, k := range []string{"T1", "T2", "T3"} {
		if got, err := c.Bool(k, false); err != nil || !got {
			t.Errorf("Bool(%s) = %v, %v", k, got, err)
		}
	}
	for _, k := range []string{"F1", "F2", "F3"} {
		if got, err := c.Bool(k, true); err != nil || got {
			t.Errorf("Bool(%s) = %v, %v", k, got, err)
		}
	}
	if got, err := c.Bool("MISSING", true); err != nil || !got {
		t.Errorf("Bool(MISSING) = %v, %v", got, err)
	}
	durs := []struct {
		key  string
		want time.Duration
	}{{"D1", 300 * time.Second}, {"D2", 1500 * time.Millisecond}, {"D3", 5 * time.Minute}, {"D4", 90 * time.Minute}, {"MISSING", time.Second}}
	for _, tt := range durs {
		if got, err := c.Duration(tt.key, time.Second); err != nil || got != tt.want {
			t.Errorf("Duration(%s) = %v, %v; want %v", tt.key, got, err, tt.want)
		}
	}
	if _, err := c.Int("BADN", 0); err == nil || !strings.Contains(err.Error(), `pool.conf:4: BADN: invalid integer "4x"`) {
		t.Errorf("Int(BADN) error = %v", err)
	}
	if _, err := c.Bool("BADB", false); err == nil || !strings.Contains(err.Error(), "invalid boolean") {
		t.Errorf("Bool(BADB) error = %v", err)
	}
	if _, err := c.Duration("BADD", 0); err == nil || !strings.Contains(err.Error(), "invalid duration") {
		t.Errorf("Duration(BADD) error = %v", err)
	}
}

func TestWriteRoundTrip(t *testing.T) {
	c := mustParse(t, "B = $(A) two\nA = one \\\n  more\nuse = x\nEMPTY =\n", &Options{Env: noEnv})
	var buf bytes.Buffer
	if err := c.Write(&buf); err != nil {
		t.Fatal(err)
	}
	want := "A = one   more\nB = $(A) two\nEMPTY =\nuse = x\n"
	if buf.String() != want {
		t.Errorf("Write = %q, want %q", buf.String(), want)
	}
	c2 := mustParse(t, buf.String(), nil)
	if got, _ := c2.Lookup("B"); got != "one   more two" {
		t.Errorf("B after round trip = %q", got)
	}

	bad := New()
	bad.Set("X", "line\nbreak")
	if err := bad.Write(&buf); err == nil {
		t.Errorf("Write of a value with a newline succeeded")
	}
	bad = New()
	bad.Set("bad key", "v")
	if err := bad.Write(&buf); err == nil {
		t.Errorf("Write of an invalid key succeeded")
	}
}

func TestList(t *testing.T) {
	c := mustParse(t, "L = a, b  c\t,d\nE =\nM = $(L), e\n", nil)
	for _, tc := range []struct {
		key, def string
		want     []string
	}{
		{"L", "", []string{"a", "b", "c", "d"}},
		{"M", "", []string{"a", "b", "c", "d", "e"}},
		{"E", "x y", []string{"x", "y"}},
		{"UNDEFINED", "", nil},
	} {
		if got := c.List(tc.key, tc.def); !slices.Equal(got, tc.want) {
			t.Errorf("List(%s, %q) = %q, want %q", tc.key, tc.def, got, tc.want)
		}
	}
}
