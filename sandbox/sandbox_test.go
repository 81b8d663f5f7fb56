package sandbox

import (
	"testing"
)

func TestExitCode(t *testing.T) {
	r := testRunner(t, nil)
	res := runJob(t, r, "echo out; echo err >&2; exit 42", nil)
	if res.exit.Code != 42 || res.exit.Signal != 0 {
		t.Errorf("exit = %+v, want code 42", res.exit)
	}
	if res.stdout != "out\n" || res.stderr != "err\n" {
		t.Errorf("stdout %q stderr %q", res.stdout, res.stderr)
	}
}
