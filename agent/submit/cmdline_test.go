package submit

import (
	"strings"
	"testing"
)

// TestCommandLineDefinesAndAppend: condor_submit's VAR=VALUE arguments are
// read before the file (so the file's if statements and later definitions
// see them), and -append lines just before the first queue statement (so
// they override the file's commands); an appended queue statement stands
// for a missing one and is refused beside the file's own.
func TestCommandLineDefinesAndAppend(t *testing.T) {
	env := testEnv(t, nil)
	env.Defines = []string{"n=3", "big=false", "mem=64"}
	env.Append = []string{"arguments = appended", "+Tag = \"late\""}
	src := "executable = job.sh\nif $(big)\n  request_memory = 1000\nelse\n  request_memory = $(mem)\nendif\narguments = from-file\nqueue $(n)\n"
	ads := jobsOf(t, src, env)
	if len(ads) != 3 {
		t.Fatalf("%d jobs, want 3 (n=3 from the command line)", len(ads))
	}
	for _, ad := range ads {
		checkAttrs(t, ad, env.Dir, map[string]string{"RequestMemory": "64", "Arguments": `"appended"`, "Tag": `"late"`})
	}

	env.Defines, env.Append = nil, []string{"queue 2"}
	if ads := jobsOf(t, "executable = job.sh\n", env); len(ads) != 2 {
		t.Errorf("appended queue statement made %d jobs, want 2", len(ads))
	}
	_, err := Parse([]byte("executable = job.sh\nqueue\n"), "job.sub", env)
	if err == nil || !strings.Contains(err.Error(), "-append:1:") || !strings.Contains(err.Error(), "job.sub") {
		t.Errorf("queue in -append beside the file's own: %v", err)
	}
	env.Append = nil
	env.Defines = []string{"executible = x"}
	if _, err := Parse([]byte("executable = job.sh\nqueue\n"), "job.sub", env); err == nil || !strings.Contains(err.Error(), "command line:1:") {
		t.Errorf("a misspelt command on the command line: %v", err)
	}
}
