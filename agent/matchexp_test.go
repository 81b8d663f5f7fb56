package agent

import (
	"strings"
	"testing"
)

func TestExpandMatchRefs(t *testing.T) {
	machine := ad(t, `[ Name = "slot1@vm-1"; OpSys = "LINUX"; Cpus = 4; Memory = 2048; Site = "here" ]`)
	for _, tc := range []struct {
		in, want, err string
	}{
		{"plain", "plain", ""},
		{"prog.$$(OpSys)", "prog.LINUX", ""},
		{"-n $$(Cpus) -m $$([Memory * 0.5]) at $$(Site)", "-n 4 -m 1024.0 at here", ""},
		{"$$(GLIDEIN_Site:Unknown) $$(input_file_path:/usr/foo)", "Unknown /usr/foo", ""},
		{"$$([TARGET.RequestCpus * Cpus])", "8", ""},
		{"$$(DOLLARDOLLAR)(x)", "$$(x)", ""},
		{"$$(CondorScratchDir)/in", "$$(CondorScratchDir)/in", ""}, // the starter's
		// What only looks like a reference stays as written.
		{"echo $$(date +%s) $$(x", "echo $$(date +%s) $$(x", ""},
		{"$$() $$([no end", "$$() $$([no end", ""},
		{"$(DOLLAR) $5 $$", "$(DOLLAR) $5 $$", ""},
		{"$$(NoSuchAttr)", "", "has no NoSuchAttr"},
		{"$$([NoSuchAttr + 1])", "", "undefined"},
	} {
		job := ad(t, `[ RequestCpus = 2; Arguments = "" ]`)
		job.SetString("Arguments", tc.in)
		out, set, err := expandMatchRefs(job, machine)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want an error saying %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if got, _ := out.EvalString("Arguments"); got != tc.want {
			t.Errorf("%q expands to %q, want %q", tc.in, got, tc.want)
		}
		if in, _ := job.EvalString("Arguments"); in != tc.in {
			t.Errorf("%q: the job's own ad was changed to %q", tc.in, in)
		}
		exp, recorded := set["MATCH_EXP_Arguments"]
		if changed := tc.want != tc.in || strings.Contains(tc.in, "DOLLARDOLLAR"); recorded != changed {
			t.Errorf("%q: MATCH_EXP_Arguments recorded %v, want %v", tc.in, recorded, changed)
		} else if s, _ := exp.StringValue(); recorded && s != tc.want {
			t.Errorf("%q: MATCH_EXP_Arguments = %q, want %q", tc.in, s, tc.want)
		}
	}
	// The machine attributes read are recorded as they were.
	job := ad(t, `[ Cmd = "prog.$$(OpSys)"; Env = "N=$$(Cpus)" ]`)
	_, set, err := expandMatchRefs(job, machine)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := set["MATCH_OpSys"].StringValue(); s != "LINUX" {
		t.Errorf("MATCH_OpSys = %v", set["MATCH_OpSys"])
	}
	if n, _ := set["MATCH_Cpus"].IntValue(); n != 4 {
		t.Errorf("MATCH_Cpus = %v", set["MATCH_Cpus"])
	}
}
