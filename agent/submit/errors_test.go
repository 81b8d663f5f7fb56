package submit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseErrors checks that each kind of bad input is refused by Parse with
// an error naming the file, the line and the problem.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"unknown command", "executable = job.sh\n\n# note\nexecutible = job.sh\nqueue", `job.sub:4: unknown command "executible" (did you mean "executable"?)`},
		{"unknown lower-case name", "executable = job.sh\nfrobnicate = yes\nqueue", `job.sub:2: unknown command "frobnicate"`},
		{"misspelt in capitals", "Executable = job.sh\nOuptut = x\nqueue", `job.sub:2: unknown command "Ouptut" (did you mean "output"?)`},
		{"unsupported command", "executable = job.sh\ndocker_network_type = host\nqueue", `job.sub:2: command "docker_network_type" is not supported: Harrier runs container and docker universe jobs in the image alone`},
		{"bad requirements", "executable = job.sh\nrequirements = Memory >\nqueue", "job.sub:2: bad expression for requirements: "},
		{"unbalanced parens in expression", "executable = job.sh\nrank = (Memory * 2\nqueue", "job.sub:2: bad expression for rank: "},
		{"bad custom attribute", "executable = job.sh\n+Project = \"unterminated\nqueue", "job.sub:2: bad expression for +Project: "},
		{"bad custom name", "executable = job.sh\n+Pro-ject = 1\nqueue", `job.sub:2: bad attribute name "+Pro-ject"`},
		{"bad memory unit", "executable = job.sh\nrequest_memory = 2XB\nqueue", `job.sub:2: bad request_memory: bad unit "XB" in "2XB" (want K, M, G or T)`},
		{"bad disk unit", "executable = job.sh\nrequest_disk = 10 parsecs\nqueue", `job.sub:2: bad request_disk: bad unit "parsecs"`},
		{"bad universe", "universe = vm\nexecutable = job.sh\nqueue", `job.sub:1: universe = vm is not supported`},
		{"unknown universe", "universe = vanila\nexecutable = job.sh\nqueue", `job.sub:1: unknown universe "vanila"`},
		{"bad boolean", "executable = job.sh\nhold = maybe\nqueue", `job.sub:2: bad hold: "maybe" is not true or false`},
		{"bad integer", "executable = job.sh\npriority = high\nqueue", `job.sub:2: bad priority: "high" is not an integer`},
		{"bad signal", "executable = job.sh\nkill_sig = SIGFOO\nqueue", `job.sub:2: bad kill_sig: unknown signal "SIGFOO"`},
		{"bad notification", "executable = job.sh\nnotification = sometimes\nqueue", `job.sub:2: bad notification "sometimes"`},
		{"bad arguments quoting", "executable = job.sh\narguments = \"a 'b\"\nqueue", "job.sub:2: bad arguments: unterminated single quote"},
		{"unclosed arguments", "executable = job.sh\narguments = \"a b\nqueue", "job.sub:2: bad arguments: no closing double quote"},
		{"bad environment", "executable = job.sh\nenvironment = A=1;novalue\nqueue", `job.sub:2: bad environment: entry "novalue" is not NAME=value`},
		{"no equals", "executable job.sh\nqueue", `job.sub:1: expected "name = value" or a queue statement`},
		{"if without endif", "executable = job.sh\nif defined X\nqueue", "job.sub:2: if without endif"},
		{"bad name", "executable = job.sh\nout-put = x\nqueue", `job.sub:2: bad command or macro name "out-put"`},
		{"colon for equals", "executable : job.sh\nqueue", `job.sub:1: expected "name = value" or a queue statement, found "executable : job.sh"`},
		{"words before equals", "executable job sh = 1\nqueue", `job.sub:1: expected "name = value" or a queue statement`},
		{"use statement", "use role : submit\nexecutable = job.sh\nqueue", "job.sub:1: use statements are not supported"},
		{"unclosed multi-line value", "executable = job.sh\nargs @=end\n-a\nqueue", `job.sub:2: no line "@end" ends this multi-line value`},
		{"no queue", "executable = job.sh\n", "job.sub: no queue statement"},
		{"queue junk", "executable = job.sh\nqueue lots", `job.sub:2: malformed queue statement: unexpected "lots"`},
		{"queue negative", "executable = job.sh\nqueue -1", `job.sub:2: malformed queue statement: unexpected "-1"`},
		{"queue bad count", "executable = job.sh\nqueue 3x", `job.sub:2: malformed queue statement: bad count "3x"`},
		{"queue unclosed list", "executable = job.sh\nqueue x in (a\nb\n", "job.sub:2: malformed queue statement: unbalanced parentheses"},
		{"queue junk after list", "executable = job.sh\nqueue x in (a) b", `job.sub:2: malformed queue statement: unexpected "b" after the list`},
		{"queue bad slice", "executable = job.sh\nqueue x in [1:2:0] (a)", "job.sub:2: malformed queue statement: bad slice [1:2:0]: step is zero"},
		{"queue unclosed slice", "executable = job.sh\nqueue x in [1: (a)", "job.sub:2: malformed queue statement: unclosed slice"},
		{"queue bad variable", "executable = job.sh\nqueue 2 x-y in (a)", `job.sub:2: malformed queue statement: bad variable name "x-y"`},
		{"queue several variables with in", "executable = job.sh\nqueue a, b in (x y)", `job.sub:2: malformed queue statement: only "from" can set several variables`},
		{"queue from nothing", "executable = job.sh\nqueue from", `job.sub:2: malformed queue statement: "from" needs a file name`},
		{"queue from a bare bar", "executable = job.sh\nqueue from |", `job.sub:2: malformed queue statement: "from" needs a command before "|"`},
		{"queue matching nothing", "executable = job.sh\nqueue matching files", `job.sub:2: malformed queue statement: "matching" needs at least one pattern`},
		{"error after continuation", "executable = \\\n  job.sh\nrank = \\\n  1 +\nqueue", "job.sub:3: bad expression for rank: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Parse([]byte(tc.src), "job.sub", testEnv(t, nil))
			if err == nil {
				t.Fatalf("Parse succeeded, want error %q", tc.want)
			}
			if d != nil {
				t.Error("Parse returned a description with its error")
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %q\nwant prefix %q", err, tc.want)
			}
			var e *Error
			if !errors.As(err, &e) || e.File != "job.sub" {
				t.Errorf("error %#v is not an *Error for job.sub", err)
			}
		})
	}
}

func TestMalformedQueueIsTestable(t *testing.T) {
	_, err := Parse([]byte("executable = x\nqueue 1 2\n"), "a.sub", Env{})
	if !errors.Is(err, errMalformedQueue) {
		t.Fatalf("error %v does not wrap errMalformedQueue", err)
	}
}

// TestJobsErrors checks errors only found when jobs are made: after macro
// expansion, or on disk.
func TestJobsErrors(t *testing.T) {
	env := testEnv(t, map[string]string{"sub/x": ""})
	if err := os.Chmod(filepath.Join(env.Dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, src, want string
	}{
		{"missing executable", "# c\nexecutable = nothere\nqueue", "job.sub:2: executable " + env.Dir + "/nothere does not exist"},
		{"not executable", "executable = data.txt\nqueue", "job.sub:1: executable " + env.Dir + "/data.txt is not executable"},
		{"executable is a directory", "executable = sub\nqueue", "job.sub:1: executable " + env.Dir + "/sub is a directory"},
		{"no executable", "arguments = x\n\nqueue", "job.sub:3: no executable given"},
		{"executable from a queue variable", "queue executable in (job.sh nothere)", "job.sub:1: executable " + env.Dir + "/nothere does not exist"},
		{"bad expression after expansion", "executable = job.sh\nR = Memory >\nrequirements = $(R)\nqueue", "job.sub:3: bad expression for requirements: "},
		{"bad unit after expansion", "executable = job.sh\nrequest_memory = 2$(Item)\nqueue in (GB XB)", `job.sub:2: bad request_memory: bad unit "XB"`},
		{"bad custom after expansion", "executable = job.sh\n+X = $(Item)\nqueue in (1 ==)", "job.sub:2: bad expression for +X: "},
		{"bad count after expansion", "executable = job.sh\nN = lots\nqueue $(N)", `job.sub:3: malformed queue statement: count "lots" is not an integer`},
		{"missing items file", "executable = job.sh\nqueue from nofile", "job.sub:2: queue from " + env.Dir + "/nofile: no such file"},
		{"macro cycle", "executable = job.sh\na = $(b)\nb = $(a)x\narguments = $(a)\nqueue", "job.sub:4: arguments: macro expansion does not end"},
		{"macro cycle without growth", "executable = job.sh\na = $(b)\nb = $(a)\narguments = $(a)\nqueue", "job.sub:4: arguments: macro expansion does not end"},
		{"function cycle", "executable = job.sh\nn = $INT(n)\narguments = $(n)\nqueue", "job.sub:3: arguments: macro expansion does not end"},
		{"macro explosion", "executable = job.sh\na0 = xxxxxxxxxxxxxxxx\na1 = $(a0)$(a0)$(a0)$(a0)\na2 = $(a1)$(a1)$(a1)$(a1)\na3 = $(a2)$(a2)$(a2)$(a2)\na4 = $(a3)$(a3)$(a3)$(a3)\na5 = $(a4)$(a4)$(a4)$(a4)\na6 = $(a5)$(a5)$(a5)$(a5)\na7 = $(a6)$(a6)$(a6)$(a6)\na8 = $(a7)$(a7)$(a7)$(a7)\narguments = $(a8)$(a8)\nqueue", "job.sub:11: arguments: macro expansion longer than 1 MiB"},
		{"bad $INT", "executable = job.sh\narguments = $INT(abc)\nqueue", `job.sub:2: arguments: $INT(abc): "abc" does not evaluate to an integer`},
		{"bad $INT format", "executable = job.sh\narguments = $INT(3,%s)\nqueue", "job.sub:2: arguments: $INT(3,%s): %s is not a valid conversion here (want one of d i o u x X c)"},
		{"two conversions", "executable = job.sh\narguments = $REAL(3,%f %f)\nqueue", `job.sub:2: arguments: $REAL(3,%f %f): format "%f %f" holds more than one conversion`},
		{"queue from a command without commands", "executable = job.sh\nqueue from ls |", "job.sub:2: queue from ls |: running commands is not allowed here"},
		{"refused value after expansion", "executable = job.sh\ng = always\nnotification = $(g)\nqueue", "job.sub:3: notification = always is not supported"},
		{"bad pattern", "executable = job.sh\nqueue matching a[", "job.sub:2: malformed queue statement: bad pattern"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Parse([]byte(tc.src), "job.sub", env)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			ads, err := d.Jobs(1, env)
			if err == nil {
				t.Fatalf("Jobs succeeded, want error %q", tc.want)
			}
			if ads != nil {
				t.Errorf("Jobs returned %d ads with its error", len(ads))
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %q\nwant prefix %q", err, tc.want)
			}
		})
	}
}

// TestMacrosAreNotUnknownCommands checks the rule that reconciles HTCondor's
// macros with refusing unknown commands.
func TestMacrosAreNotUnknownCommands(t *testing.T) {
	env := testEnv(t, nil)
	for _, src := range []string{
		"data_dir = in\ninput = $(data_dir)/x\nexecutable = job.sh\nqueue",
		"executable = job.sh\nMyUnusedMacro = 1\nqueue",
		"executable = job.sh\nnum = 3\nqueue $(num)",
		"executable = job.sh\narguments = $INT(count)\ncount = 7\nqueue",
		"executable = job.sh\nfiles = x\nqueue in ($(files))",
		"executable = nothere\nskip_filechecks = true\nqueue",
		"executable = job.sh\nif defined unused_below\nendif\nunused_below = 1\nqueue",
	} {
		d, err := Parse([]byte(src), "job.sub", env)
		if err != nil {
			t.Errorf("Parse(%q): %v", src, err)
			continue
		}
		if _, err := d.Jobs(1, env); err != nil {
			t.Errorf("Jobs(%q): %v", src, err)
		}
	}
}
