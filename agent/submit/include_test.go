package submit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// withCommands lets env run commands, as harrier submit does.
func withCommands(t *testing.T, env Env) Env {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	env.Command = Exec(ctx)
	return env
}

func writeExec(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestInclude(t *testing.T) {
	env := withCommands(t, testEnv(t, map[string]string{
		"common.sub":     "# shared settings\nrequest_memory = 1G\nif defined Mode\narguments = $(Mode)\nendif\n",
		"sub/nested.sub": "include : sub/leaf.sub\n",
		"sub/leaf.sub":   "arguments = leaf\n",
	}))
	writeExec(t, filepath.Join(env.Dir, "gen.sh"), "#!/bin/sh\necho \"arguments = generated $1\"\necho 'request_cpus = 2'\n")
	for _, tc := range []struct {
		name, src string
		want      map[string]string
	}{
		{"file", "Mode = fast\ninclude : common.sub\nexecutable = job.sh\nqueue",
			map[string]string{"RequestMemory": "1024", "Arguments": `"fast"`}},
		{"name from a macro", "which = common\ninclude : $(which).sub\nexecutable = job.sh\nqueue",
			map[string]string{"RequestMemory": "1024", "Arguments": `""`}},
		{"nested, relative to the submit directory", "include : sub/nested.sub\nexecutable = job.sh\nqueue",
			map[string]string{"Arguments": `"leaf"`}},
		{"keyword in any case, and @", "INCLUDE : common.sub\n@include : sub/leaf.sub\nexecutable = job.sh\nqueue",
			map[string]string{"Arguments": `"leaf"`}},
		{"missing with ifexist", "include ifexist : nothere.sub\nexecutable = job.sh\nqueue", map[string]string{}},
		{"command", "include command : ./gen.sh one\nexecutable = job.sh\nqueue",
			map[string]string{"Arguments": `"generated one"`, "RequestCpus": "2"}},
		{"command with a bar", "include : ./gen.sh two |\nexecutable = job.sh\nqueue",
			map[string]string{"Arguments": `"generated two"`}},
		{"command in the new argument syntax", "include command : \"./gen.sh 'x y'\"\nexecutable = job.sh\nqueue",
			map[string]string{"Arguments": `"generated x y"`}},
		{"failing command with ifexist", "include ifexist command : /bin/false\nexecutable = job.sh\nqueue", map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ads := jobsOf(t, tc.src, env)
			checkAttrs(t, ads[0], env.Dir, tc.want)
		})
	}
}

// TestIncludeInto checks that "include command into FILE" keeps the
// command's output in FILE and reads FILE, not the command, once it exists.
func TestIncludeInto(t *testing.T) {
	env := withCommands(t, testEnv(t, nil))
	gen := filepath.Join(env.Dir, "gen.sh")
	writeExec(t, gen, "#!/bin/sh\necho 'arguments = first'\n")
	src := "include command into cache.sub : ./gen.sh\nexecutable = job.sh\nqueue"
	if got := argumentsOf(t, src, env); got[0] != "first" {
		t.Fatalf("first run: arguments %q", got)
	}
	data, err := os.ReadFile(filepath.Join(env.Dir, "cache.sub"))
	if err != nil || string(data) != "arguments = first\n" {
		t.Fatalf("cache.sub = %q, %v", data, err)
	}
	writeExec(t, gen, "#!/bin/sh\necho 'arguments = second'\n")
	if got := argumentsOf(t, src, env); got[0] != "first" {
		t.Errorf("second run: arguments %q, want the cached first", got)
	}
}

func TestIncludeErrors(t *testing.T) {
	base := testEnv(t, map[string]string{
		"bad.sub":   "# line 1\nrequest_memory = 2XB\n",
		"loop.sub":  "include : loop.sub\n",
		"unend.sub": "if true\n",
		"err.sub":   "\nerror : stopped in $(where)\n",
	})
	env := withCommands(t, base)
	writeExec(t, filepath.Join(env.Dir, "fail.sh"), "#!/bin/sh\necho broken >&2\nexit 3\n")
	for _, tc := range []struct {
		name, src, want string
		env             Env
	}{
		{"missing file", "include : nothere.sub\nqueue", "job.sub:1: include: open " + env.Dir + "/nothere.sub: no such file or directory", env},
		{"error names the included file and line", "executable = job.sh\ninclude : bad.sub\nqueue", `bad.sub:2: bad request_memory: bad unit "XB"`, env},
		{"if without endif in an included file", "include : unend.sub\nqueue", "unend.sub:1: if without endif", env},
		{"error statement in an included file", "where = here\ninclude : err.sub\nqueue", "err.sub:2: error: stopped in here", env},
		{"include loop", "include : loop.sub\nqueue", "loop.sub:1: include loop.sub: includes nested more than 20 deep", env},
		{"no target", "include :\nqueue", "job.sub:1: include: no file or command given", env},
		{"bad option", "include sometimes : x.sub\nqueue", `job.sub:1: include: unexpected "sometimes"`, env},
		{"into without command", "include into x : y\nqueue", `job.sub:1: include: unexpected "into x"`, env},
		{"into without file", "include command into : y\nqueue", `job.sub:1: include: expected a file name after "into"`, env},
		{"failing command", "include command : ./fail.sh\nqueue", "job.sub:1: include command ./fail.sh: exit status 3: broken", env},
		{"command not allowed", "include command : ./fail.sh\nqueue", "job.sub:1: include command ./fail.sh: running commands is not allowed here", base},
		{"bar not allowed", "include : date |\nqueue", "job.sub:1: include command date: running commands is not allowed here", base},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.src), "job.sub", tc.env)
			var e *Error
			if err == nil || !errors.As(err, &e) {
				t.Fatalf("Parse: %v, want an *Error %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %q\nwant prefix %q", err, tc.want)
			}
		})
	}
}

func TestErrorAndWarningStatements(t *testing.T) {
	env := testEnv(t, nil)
	d, err := Parse([]byte(`executable = job.sh
who = $ENV(HOME)
warning : check $(who)
if defined never
error : not reached
endif
warning: second
error = err.txt
queue`), "job.sub", env)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	var got []string
	for _, w := range d.Warnings() {
		got = append(got, w.Error())
	}
	want := []string{"job.sub:3: warning: check /home/alice", "job.sub:7: warning: second"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("warnings %q, want %q", got, want)
	}
	ads, err := d.Jobs(1, env)
	if err != nil {
		t.Fatal(err)
	}
	checkAttrs(t, ads[0], env.Dir, map[string]string{"Err": `"$DIR/err.txt"`})

	_, err = Parse([]byte("executable = job.sh\nerror 3 : cannot go on\nqueue"), "job.sub", env)
	if err == nil || err.Error() != "job.sub:2: error: cannot go on" {
		t.Errorf("error statement: %v", err)
	}
}

func TestMultiLineValues(t *testing.T) {
	env := testEnv(t, nil)
	ads := jobsOf(t, `executable = job.sh
requirements @=end
  (TARGET.Memory > 100) &&
  # a comment inside is dropped
  (TARGET.Disk > 100)
@end
args @=x
  -a
  -b
@x
arguments = $(args)
queue`, env)
	checkAttrs(t, ads[0], env.Dir, map[string]string{
		"Arguments":    `"-a -b"`,
		"Requirements": `((TARGET.Memory > 100) && (TARGET.Disk > 100)) && (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Cpus >= RequestCpus)` + ckptReq,
	})
}

// TestContinuationLines checks the manual's rules for continued lines: a
// comment line inside a continued line is skipped, a comment line never
// continues, and continuation lines lose their leading white space.
func TestContinuationLines(t *testing.T) {
	env := testEnv(t, nil)
	for _, tc := range []struct{ src, want string }{
		{"B = b\nD = d\nA = $(B) \\\n# $(C)\n$(D)\n", "b d"},
		{"B = b\nD = d\nA = $(B) \\\n# $(C) \\\n$(D)\n", "b d"},
		{"# comment \\\nA = x\n", "x"},
		{"A = \"one \\\n      two\"\n", "one two"},
	} {
		got := argumentsOf(t, "executable = job.sh\n"+tc.src+"arguments = $(A)\nqueue\n", env)
		if got[0] != tc.want {
			t.Errorf("%q: arguments %q, want %q", tc.src, got[0], tc.want)
		}
	}
}

// TestQueueFromCommand runs the command of "queue ... from cmd |" for its
// items.
func TestQueueFromCommand(t *testing.T) {
	env := withCommands(t, testEnv(t, nil))
	writeExec(t, filepath.Join(env.Dir, "items.sh"), "#!/bin/sh\nprintf 'a 1\\n# skipped\\nb 2\\n'\n")
	got := argumentsOf(t, "executable = job.sh\narguments = $(x)-$(y)\nqueue x, y from ./items.sh |\n", env)
	if strings.Join(got, " ") != "a-1 b-2" {
		t.Errorf("arguments %q, want [a-1 b-2]", got)
	}
}
