package submit

import (
	"fmt"
	"strings"
	"testing"

	"harrier.dev/harrier/platform"
)

// testExpander returns an expander over defs (name = value lines) with the
// environment HOME=/home/alice, EMPTY= and a random source that always
// draws the largest value.
func testExpander(t *testing.T, defs string) *expander {
	t.Helper()
	x := &expander{
		defs: make(map[string]macro),
		getenv: func(k string) (string, bool) {
			v, ok := map[string]string{"HOME": "/home/alice", "EMPTY": ""}[k]
			return v, ok
		},
		rand:   func(n int) int { return n - 1 },
		dir:    "/sub",
		preset: presetMacros("/sub", "job.sub"),
	}
	for _, l := range strings.Split(defs, "\n") {
		if l == "" {
			continue
		}
		name, value, ok := strings.Cut(l, " = ")
		if !ok {
			t.Fatalf("bad definition %q", l)
		}
		v, err := x.expandSelf(value, strings.ToLower(name))
		if err != nil {
			t.Fatalf("definition %q: %v", l, err)
		}
		x.defs[strings.ToLower(name)] = macro{value: v}
	}
	return x
}

// TestExpand checks each form of macro reference against condor_submit's
// rules, one rule per case.
func TestExpand(t *testing.T) {
	for _, tc := range []struct {
		name, defs, in, want string
	}{
		// $(name) and $(name:default)
		{"plain", "base = run", "$(base)", "run"},
		{"names ignore case", "Base = run", "$(BASE)", "run"},
		{"nested", "a = x\nb = $(a)y", "$(b)z", "xyz"},
		{"undefined is empty", "", "<$(missing)>", "<>"},
		{"default", "", "$(missing:fallback)", "fallback"},
		{"default for a value defined empty", "e = ", "$(e:fallback)", "fallback"},
		{"no default for a value that expands to nothing", "e = $(nothing)", "<$(e:fallback)>", "<>"},
		{"default holding a macro", "base = run", "$(missing:$(base))", "run"},
		{"default with spaces, commas and colons", "", "$(missing:a b,c:d)", "a b,c:d"},
		{"names with dots and slashes", "a.b/c = x", "$(a.b/c)", "x"},
		{"self reference", "flags = -a\nflags = $(flags) -b\nflags = -c $(flags)", "$(flags)", "-c -a -b"},
		{"self reference with a default", "flags = $(flags:-x) -y", "$(flags)", "$(flags:-x) -y"},
		{"a replacement is read again", "a = $\nbase = run", "$(a)(base)", "run"},

		// what is not a reference is left as written
		{"shell command substitution", "", "echo $(id -u)", "echo $(id -u)"},
		{"shell arithmetic", "", "$((i+1))", "$((i+1))"},
		{"shell default syntax", "", "${N:-1} $(N:-1)", "${N:-1} $(N:-1)"},
		{"references inside shell text", "base = run", "$(echo $(base))", "$(echo run)"},
		{"unclosed", "base = run", "$(base", "$(base"},
		{"lone dollars", "", "$ $5 a$ $( $)", "$ $5 a$ $( $)"},
		{"unknown function", "", "$FOO(x) $Fz(x)", "$FOO(x) $Fz(x)"},
		{"function names are case-sensitive", "", "$env(HOME) $int(5)", "$env(HOME) $int(5)"},

		// $$() is left for match time, but references inside it are expanded
		{"match-time attribute", "", "$$(OpSys) $$(Memory:512)", "$$(OpSys) $$(Memory:512)"},
		{"match-time expression", "f = 0.9", "$$([TARGET.Memory * $(f)])", "$$([TARGET.Memory * 0.9])"},
		{"dollar", "", "$(DOLLAR)5 $(dollar)(base)", "$5 $(base)"},
		// the dollar pass reads again from each "$" it writes, and "$$(" is
		// never a reference: two $(DOLLAR) in a row leave the second
		{"dollar twice", "", "$(DOLLAR)$(DOLLAR)(X)", "$$(DOLLAR)(X)"},

		// per-submit variables
		{"preset", "", "$(ARCH) $(OPSYS) $(IsLinux) $(IsWindows) $(SUBMIT_FILE)", platformArch() + " LINUX true false /sub/job.sub"},
		{"preset release", "", "$(OPSYSANDVER) $(OPSYSMAJORVER) $(OPSYSVER)", releaseMacros()},
		{"preset overridden", "arch = mine", "$(ARCH)", "mine"},

		// $ENV
		{"environment", "", "$ENV(HOME)", "/home/alice"},
		{"environment default", "", "$ENV(NOPE:none) $ENV(EMPTY:none)", "none none"},
		{"environment unset", "", "<$ENV(NOPE)> <$ENV(EMPTY)>", "<UNDEFINED> <>"},

		// $INT and $REAL
		{"int of a macro", "n = 6", "$INT(n)", "6"},
		{"int of an expression", "", "$INT(6*7) $INT(7/2) $INT(2.9) $INT(true)", "42 3 2 1"},
		{"int of a macro holding an expression", "x = 2\ny = 6\narea = $(x) * $(y)", "$INT(area)", "12"},
		{"int format", "n = 12", "$INT(n,%04d) $INT(n,%x) $INT(n,%+d) $INT(n,%-4d|)", "0012 c +12 12  |"},
		{"int format with text", "n = 12", "$INT(n,Area=%d)", "Area=12"},
		{"int format keeps spaces", "n = 12", "$INT(n, %d%%)", " 12%"},
		{"real", "", "$REAL(1.0/4) $REAL(1.0/3) $REAL(2) $REAL(1e20)", "0.25 0.3333333333333333 2 1E+20"},
		{"real format", "n = 6", "$REAL(n,%.2f) $REAL(n,%e) $REAL(n,%g)", "6.00 6.000000e+00 6.0"},
		{"real format gets a point", "n = 6", "$REAL(n,%.0f)", "6.0"},

		// $STRING and $EVAL
		{"string", `s = toLower("ABC")`, "$STRING(s) $STRING(s,Name: %s) $STRING(s,[%-5s])", "abc Name: abc [abc  ]"},
		{"string of text", "", "$STRING(plain text)", "plain text"},
		{"eval", `slist = "a,B,c"` + "\nlcslist = tolower($(slist))\nlist = split($(slist))",
			"$EVAL(slist) $EVAL(lcslist) $EVAL(list)", `a,B,c a,b,c { "a","B","c" }`},
		{"eval of an expression", "", "$EVAL(6 * 7) $EVAL(undefinedAttr)", "42 undefined"},
		{"eval of text", "", "$EVAL(not ( an expression)", "not ( an expression"},

		// $SUBSTR, as the manual's examples
		{"substr", "Name = abcdef", "$SUBSTR(Name, 2)|$SUBSTR(Name, 0, -2)|$SUBSTR(Name, 1, 3)|$SUBSTR(Name, -1)|$SUBSTR(Name, 4, -3)|",
			"cdef|abcd|bcd|f||"},
		{"substr of text", "", "<$SUBSTR(literal text, 1)>", "<iteral text>"},
		{"substr of empty", "e = ", "<$SUBSTR(e, 1)>", "<>"},

		// $CHOICE, $RANDOM_CHOICE, $RANDOM_INTEGER
		{"choice", "", "$CHOICE(1, a, b, c)", "b"},
		{"choice from a list", "i = 2\nlist = x, y, z", "$CHOICE(i, list)", "z"},
		{"function bodies end at the first parenthesis", "base = run", "$CHOICE(1, a, $(base), c)", "$(base, c)"},
		{"random choice", "", "$RANDOM_CHOICE(a, b, c)", "c"},
		{"random choice from a list", "list = x, y, z", "$RANDOM_CHOICE(list)", "z"},
		{"random choice of one", "", "$RANDOM_CHOICE(only)", "only"},
		{"random integer", "", "$RANDOM_INTEGER(0, 8, 2) $RANDOM_INTEGER(-3, 3) $RANDOM_INTEGER(5,5)", "8 3 5"},

		// $F and its letters, $BASENAME, $DIRNAME
		{"path parts", "f = /data/set1/file.tar.gz", "$Fp(f) $Fd(f) $Fn(f) $Fx(f) $Fnx(f) $Fq(f)",
			`/data/set1/ set1/ file.tar .gz file.tar.gz "/data/set1/file.tar.gz"`},
		{"path parts combined", "f = /data/set1/file.tar.gz", "$Fpn(f) $Fdd(f) $Fdn(f) $Fdnx(f)",
			"/data/set1/file.tar data/set1/ set1/file.tar set1/file.tar.gz"},
		{"bare", "f = /data/set1/file.tar.gz", "$Fpb(f) $Fdb(f) $Fxb(f)", "/data/set1 set1 gz"},
		{"quotes", "f = \"a b/c.d\"", "$F(f) $Fqa(f) $Fnq(f)", `a b/c.d 'a b/c.d' "c"`},
		{"full path", "f = in/x.dat\ng = ./y\nh = /abs", "$Ff(f) $Ff(g) $Ff(h)", "/sub/in/x.dat /sub/y /abs"},
		{"separators", `f = a/b\c`, `$Fw(f) $Fu(f)`, `a\b\c a/b/c`},
		{"no directory", "f = file.txt", "<$Fp(f)> <$Fd(f)> $Fpn(f) $Fdx(f)", "<> <> file .txt"},
		{"letters in any case", "f = /x/y.z", "$FPN(f)", "/x/y"},
		{"basename and dirname", "f = /x/y.z", "$BASENAME(f) $DIRNAME(f)", "y.z /x/"},
		{"literal path", "", "$Fn(/tmp/simulate.exe) $Fx(/tmp/simulate.exe)", "simulate .exe"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := testExpander(t, tc.defs)
			got, err := x.expand(tc.in)
			if err != nil {
				t.Fatalf("expand(%q): %v", tc.in, err)
			}
			if got != tc.want {
				t.Errorf("expand(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func platformArch() string { a, _ := submitPlatform(); return a }

// releaseMacros is what $(OPSYSANDVER) $(OPSYSMAJORVER) $(OPSYSVER) say
// on this machine.
func releaseMacros() string {
	r := platform.ReadRelease("/etc/os-release")
	return fmt.Sprintf("%s %d %d", r.AndVer, r.MajorVer, r.Ver)
}

func TestExpandErrors(t *testing.T) {
	for _, tc := range []struct {
		name, defs, in, want string
	}{
		{"int of text", "", "$INT(abc)", `$INT(abc): "abc" does not evaluate to an integer`},
		{"real of a string", "", `$REAL("x")`, `$REAL("x"): "\"x\"" does not evaluate to a number`},
		{"int with a real format", "", "$INT(1,%f)", "$INT(1,%f): %f is not a valid conversion here"},
		{"real with an int format", "", "$REAL(1,%d)", "$REAL(1,%d): %d is not a valid conversion here"},
		{"string with a number format", "", "$STRING(a,%d)", "$STRING(a,%d): %d is not a valid conversion here (want one of s)"},
		{"format without conversion", "", "$INT(1,none)", "$INT(1,none): format holds no conversion"},
		{"star width", "", "$INT(1,%*d)", "a * width or precision is not allowed"},
		{"choice out of range", "", "$CHOICE(3, a, b)", "$CHOICE(3, a, b): index 3 is out of range (the list has 2 items)"},
		{"choice bad index", "", "$CHOICE(x, a, b)", `$CHOICE(x, a, b): "x" is not a valid index`},
		{"choice negative index", "", "$CHOICE(-1, a, b)", `"-1" is not a valid index`},
		{"choice without list", "", "$CHOICE(1)", "$CHOICE(1): no list to choose from"},
		{"choice of an undefined list", "", "$CHOICE(0, nolist)", `$CHOICE(0, nolist): no list named "nolist"`},
		{"random choice of nothing", "", "$RANDOM_CHOICE()", "$RANDOM_CHOICE(): no list to choose from"},
		{"random integer min above max", "", "$RANDOM_INTEGER(5, 1)", "min is greater than max"},
		{"random integer bad step", "", "$RANDOM_INTEGER(1, 5, 0)", "invalid step"},
		{"random integer bad min", "", "$RANDOM_INTEGER(x, 5)", "invalid min"},
		{"substr without start", "", "$SUBSTR(a)", "want $SUBSTR(name, start[, length])"},
		{"substr bad start", "s = abc", "$SUBSTR(s, x)", `"x" is not a valid start`},
		{"cycle", "a = $(b)\nb = $(a)", "$(a)", "macro expansion does not end"},
		{"growth", "a = $(a:x)$(a:x)", "$(a)", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := testExpander(t, tc.defs)
			got, err := x.expand(tc.in)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("expand(%q): %v", tc.in, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("expand(%q) = %q, want error %q", tc.in, got, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("expand(%q): error %q, want it to contain %q", tc.in, err, tc.want)
			}
		})
	}
}

// TestExpandBounds checks that expansions that would not end, or would
// grow without bound, are errors rather than hangs.
func TestExpandBounds(t *testing.T) {
	defs := "a0 = xxxxxxxxxxxxxxxx"
	for i := 1; i <= 8; i++ {
		defs += "\na" + string(rune('0'+i)) + " = " + strings.Repeat("$(a"+string(rune('0'+i-1))+")", 4)
	}
	x := testExpander(t, defs)
	if _, err := x.expand("$(a8)$(a8)"); err == nil || err != errMacroSize {
		t.Errorf("doubling expansion: %v, want %v", err, errMacroSize)
	}
	x = testExpander(t, "b = $(c)\nc = $(b)")
	if _, err := x.expand("$(b)"); err != errMacroLoop {
		t.Errorf("cycle: %v, want %v", err, errMacroLoop)
	}
	x = testExpander(t, "n = $SUBSTR(n, 0)")
	if _, err := x.expand("$(n)"); err != errMacroLoop {
		t.Errorf("function cycle: %v, want %v", err, errMacroLoop)
	}
}

// TestMacrosInJobs checks the macros that take values per job, and that
// values drawn at random are drawn for each job.
func TestMacrosInJobs(t *testing.T) {
	env := testEnv(t, nil)
	draws := 0
	env.Rand = func(n int) int { draws++; return draws % n }
	ads := jobsOf(t, `executable = job.sh
arguments = $(Cluster) $(ClusterId) $(Process) $(ProcId) $(Step) $(Row) $(ItemIndex) <$(Node)> $(Item) $RANDOM_INTEGER(0,9)
queue 2 in (a, b)
Step = fixed
arguments = $(Step) $(Process)
queue`, env)
	want := []string{
		"42 42 0 0 0 0 0 <> a 1", "42 42 1 1 1 0 0 <> a 2", "42 42 2 2 0 1 1 <> b 3", "42 42 3 3 1 1 1 <> b 4",
		"fixed 4",
	}
	if len(ads) != len(want) {
		t.Fatalf("got %d jobs, want %d", len(ads), len(want))
	}
	for i, ad := range ads {
		if got, _ := ad.EvalString("Arguments"); got != want[i] {
			t.Errorf("job %d: arguments = %q, want %q", i, got, want[i])
		}
	}
}

// TestShellOneLiners checks that shell text in arguments reaches the job
// as written, as under condor_submit.
func TestShellOneLiners(t *testing.T) {
	env := testEnv(t, nil)
	ads := jobsOf(t, `executable = /bin/sh
skip_filechecks = true
arguments = "-c 'echo $(id -u) $((1+2)) ${HOME:-x} $(dir)'"
dir = /tmp
queue`, env)
	got, _ := ads[0].EvalString("Arguments")
	if want := `-c 'echo $(id -u) $((1+2)) ${HOME:-x} /tmp'`; got != want {
		t.Errorf("arguments = %q, want %q", got, want)
	}
}
