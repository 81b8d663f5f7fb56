package submit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzExpand expands values against a few definitions, looking for panics,
// expansions that do not end, and results beyond the size bound. Values
// without a "$" must come back unchanged.
func FuzzExpand(f *testing.F) {
	for _, s := range []string{
		"$(a) $(b:x) $(c:$(a)) $(id -u) $((i+1)) $(a",
		"$$(OpSys) $$([TARGET.Memory * $(a)]) $(DOLLAR)$(DOLLAR)(a) $$$(a)",
		"$ENV(HOME) $ENV(NOPE:none) $ENV(NOPE) $env(HOME)",
		"$INT(n) $INT(n,%04d) $INT(6*7,x=%+5d%%) $REAL(n,%.3e) $REAL(1.0/3) $INT(n,%s)",
		"$STRING(s,[%-8s]) $EVAL(list) $SUBSTR(s,1,-1) $SUBSTR(s,-3)",
		"$CHOICE(1,a,b,c) $CHOICE(n,list) $CHOICE(9,list) $RANDOM_CHOICE(a,b) $RANDOM_CHOICE(list)",
		"$RANDOM_INTEGER(0,8,2) $RANDOM_INTEGER(5,1) $RANDOM_INTEGER(-9223372036854775808,9223372036854775807)",
		"$Fpdnxqabfwu(p) $Fdd(p) $Fqa(p) $Fxb(p) $BASENAME(p) $DIRNAME(p) $Fz(p) $F(p)",
		"$(loop) $(grow)",
		"no dollar at all",
	} {
		f.Add(s)
	}
	defs := map[string]macro{
		"a": {value: "1"}, "b": {value: ""}, "n": {value: "6"}, "s": {value: `toLower("ABC")`},
		"list": {value: "x, y ,z"}, "p": {value: `"/data/set1/file.tar.gz"`},
		"loop": {value: "$(loop2)"}, "loop2": {value: "$(loop)"}, "grow": {value: "$(grow)$(grow)x"},
	}
	f.Fuzz(func(t *testing.T, s string) {
		x := &expander{defs: defs, getenv: func(k string) (string, bool) { return "/home/" + k, k == "HOME" },
			rand: func(n int) int { return n - 1 }, dir: "/submit"}
		out, err := x.expand(s)
		if err != nil {
			if !errors.Is(err, errMacroLoop) && !errors.Is(err, errMacroSize) && !strings.Contains(err.Error(), "$") {
				t.Fatalf("expand(%q): error %v names no function", s, err)
			}
			return
		}
		if len(out) > maxExpansion {
			t.Fatalf("expand(%q) is %d bytes", s, len(out))
		}
		if !strings.Contains(s, "$") && out != s {
			t.Fatalf("expand(%q) = %q, want it unchanged", s, out)
		}
		if _, err := x.expandSelf(s, "a"); err != nil && !errors.Is(err, errMacroLoop) && !errors.Is(err, errMacroSize) &&
			!strings.Contains(err.Error(), "$") {
			t.Fatalf("expandSelf(%q): %v", s, err)
		}
	})
}

// FuzzParse reads descriptions with every statement form. Commands are
// never run: Env.Command is nil.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"executable = job.sh\narguments = \"a 'b c'\"\nqueue 2\n",
		"executable = job.sh\nqueue x in (\n a\n b\n)\n",
		"+A = 1 + $(Process)\nMY.B = \"x\"\nqueue from [1::2] (\n r1 x\n)\n",
		"request_memory = 2GB\nrequest_disk = $(d:10)M\nqueue matching files *.dat\n",
		"x = $(x) $$(y) $ENV(HOME) $Fnx(x) $INT(x,%d)\\\n more\nqueue",
		"queue 1 a,b from file\n",
		"if defined x\nqueue (\nelif version >= 8.1\nexecutable = a\nelse\nx = 1\nendif\nqueue",
		"if $(x)\n:if true\n:endif\nendif\nqueue",
		"if !defined use role:x\nerror : no $(x)\nendif\nwarning : careful\nqueue",
		"include : inc.sub\ninclude ifexist : missing.sub\ninclude command : ls |\nqueue",
		"include : self.sub\nqueue",
		"args @=end\n-a\n-b\n@end\nexecutable = job.sh\narguments = $(args)\nqueue",
		"else\nqueue", "endif", "elif 1", "if 1\nelse\nelse\nendif",
		"executable : x\nqueue", "use a : b", "error 3 : stop", "@include : inc.sub\nqueue",
	} {
		f.Add(s)
	}
	dir := f.TempDir()
	for name, content := range map[string]string{
		"inc.sub":  "executable = job.sh\nif defined y\narguments = $(y)\nendif\n",
		"self.sub": "include : self.sub\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	env := Env{Dir: dir, Owner: "fuzz"}
	f.Fuzz(func(t *testing.T, src string) {
		d, err := Parse([]byte(src), "fuzz.sub", env)
		if err != nil {
			var e *Error
			if d != nil || !errors.As(err, &e) {
				t.Fatalf("Parse(%q) = %v, %v", src, d, err)
			}
			return
		}
		if len(d.stmts) == 0 {
			t.Fatalf("Parse(%q) succeeded without statements", src)
		}
	})
}

// FuzzJobs expands descriptions that parse, with small literal counts so
// that each input stays quick; it looks for panics in macro expansion, queue
// items and commands.
func FuzzJobs(f *testing.F) {
	for _, s := range []string{
		"executable = job.sh\narguments = $(Item) $Fnx(Item) $INT(Step,%03d)\nqueue 2 in (a.b c/d.e)\n",
		"executable = $(x:job.sh)\nx = $(y)\ny = $(x)\nqueue\n",
		"executable = job.sh\nenvironment = \"A=$(Row) B='$(Item)'\"\nqueue a, b from (\n1 2\n3\n)\n",
		"executable = job.sh\nrequest_memory = $(Item)\nqueue in [::-1] (1G 2 3MB)\n",
		"executable = job.sh\ngetenv = $ENV(HOME)\n+A = $REAL(Process)\nqueue matching *\n",
		"executable = job.sh\narguments = $RANDOM_CHOICE(a,b) $RANDOM_INTEGER(1,9) $CHOICE(Process,x,y)\nqueue 2\n",
		"executable = job.sh\nshould_transfer_files = $(Item)\nqueue in (NO YES)\n",
		"executable = job.sh\narguments = $$([$(Item)])\nqueue in (1)\n",
	} {
		f.Add(s)
	}
	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "job.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		f.Fatal(err)
	}
	env := Env{Dir: dir, Owner: "fuzz", Rand: func(n int) int { return 0 }}
	f.Fuzz(func(t *testing.T, src string) {
		d, err := Parse([]byte(src), "fuzz.sub", env)
		if err != nil {
			return
		}
		for _, st := range d.stmts {
			if st.kind == queueStmt && (len(st.queue.count) > 2 || strings.Contains(st.queue.count, "$")) {
				return
			}
		}
		ads, err := d.Jobs(1, env)
		if err != nil {
			var e *Error
			if ads != nil || !errors.As(err, &e) {
				t.Fatalf("Jobs(%q) = %d ads, %v", src, len(ads), err)
			}
		}
	})
}
