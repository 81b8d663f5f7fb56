package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestJobEnvironment: a job finds what HTCondor's starter gives it: its ad
// and its slot's in its scratch directory, named by _CONDOR_JOB_AD and
// _CONDOR_MACHINE_AD, its submit-side directory in _CONDOR_JOB_IWD, and
// the thread variables set to its slot's processors, unless it set one
// itself; the ad files do not come home among its outputs.
func TestJobEnvironment(t *testing.T) {
	bin := publicBinary(t)
	p := startPoolFrom(t, bin, 1, "")
	owner := newUser(t)
	uid, gid := lookupIDs(t, owner.Username)
	dir := filepath.Join(owner.HomeDir, "env")
	writeFile(t, filepath.Join(dir, "env.sh"), `#!/bin/sh
echo "omp=$OMP_NUM_THREADS mkl=$MKL_NUM_THREADS go=$GOMAXPROCS iwd=$_CONDOR_JOB_IWD"
grep -E '^(Owner|ClusterId|RequestCpus) = ' "$_CONDOR_JOB_AD" | sort
grep -E '^(Name|Cpus) = ' "$_CONDOR_MACHINE_AD" | sort
test "$(dirname "$_CONDOR_JOB_AD")" = "$_CONDOR_SCRATCH_DIR" && echo "ads in the scratch directory"
`, 0o755)
	chownAll(t, dir, uid, gid)
	plain := p.submitAs(t, owner.Username, dir, "plain.sub", `executable = env.sh
should_transfer_files = YES
output = plain.out
log = env.log
queue
`)
	own := p.submitAs(t, owner.Username, dir, "own.sub", `executable = env.sh
should_transfer_files = YES
environment = "OMP_NUM_THREADS=7"
output = own.out
log = env.log
queue
`)
	for _, c := range []int{plain, own} {
		if out, code := p.harrier(t, "wait", "--timeout", "60", strconv.Itoa(c)+".0"); code != 0 {
			t.Fatalf("wait %s: exit %d: %s", strconv.Itoa(c)+".0", code, out)
		}
	}
	out, _ := os.ReadFile(filepath.Join(dir, "plain.out"))
	cpus := ""
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus = "); ok {
			cpus = v
		}
	}
	if cpus == "" || cpus == "0" {
		t.Fatalf("no Cpus in the job's machine ad:\n%s", out)
	}
	for _, want := range []string{
		"omp=" + cpus + " mkl=" + cpus + " go=" + cpus + " iwd=" + dir,
		`Owner = "` + owner.Username + `"`, "ClusterId = " + strconv.Itoa(plain), "RequestCpus = ",
		`Name = "slot1@`, "ads in the scratch directory",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the job's environment lacks %q:\n%s", want, out)
		}
	}
	if out, _ := os.ReadFile(filepath.Join(dir, "own.out")); !strings.Contains(string(out), "omp=7 mkl="+cpus) {
		t.Errorf("the job's own OMP_NUM_THREADS=7 did not win:\n%s", out)
	}
	for _, name := range []string{".job.ad", ".machine.ad"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("%s came home among the job's outputs: %v", name, err)
		}
	}
}

// TestMatchTimeSubstitution: $$(Name), $$(Name:default) and $$([expr])
// in a job's string attributes are replaced, when it starts, with the
// values of the machine it runs on, and what they came to is recorded in
// its ad (MATCH_EXP_, MATCH_); a reference the machine cannot answer
// holds the job, saying which.
func TestMatchTimeSubstitution(t *testing.T) {
	p := startPool(t, 1)
	dir := t.TempDir()
	ok := p.submit(t, dir, "match.sub", `executable = /bin/echo
arguments = "slot=$$(Name) cpus=$$([Cpus * 2]) site=$$(GLIDEIN_Site:nowhere) shell=$$(date +%s) scratch=$$(CondorScratchDir)"
+JOB_Machine = "$$(Machine)"
output = match.out
queue
`)
	bad := p.submit(t, dir, "bad.sub", "executable = /bin/echo\narguments = $$(NoSuchAttr)\nqueue\n")
	if out, code := p.harrier(t, "wait", "--timeout", "60", strconv.Itoa(ok)+".0"); code != 0 {
		t.Fatalf("wait: exit %d: %s", code, out)
	}
	out, _ := os.ReadFile(filepath.Join(dir, "match.out"))
	h := p.historyAd(t, strconv.Itoa(ok)+".0")
	slot, _ := h["RemoteHost"].(string)
	machine, _ := h["MATCH_Machine"].(string)
	if slot == "" || machine == "" {
		t.Fatalf("no RemoteHost or MATCH_Machine in the history: %v", h)
	}
	if got, want := strings.TrimSpace(string(out)), "slot="+slot+" cpus="; !strings.HasPrefix(got, want) ||
		!strings.Contains(got, " site=nowhere shell=$$(date +%s) scratch=/") || strings.Contains(got, "CondorScratchDir") {
		t.Errorf("the job's arguments came to %q, want %q… site=nowhere shell=$$(date +%%s) scratch=/…", got, want)
	}
	if h["MATCH_EXP_JOB_Machine"] != machine || h["MATCH_Name"] != slot {
		t.Errorf("MATCH_EXP_JOB_Machine %v, MATCH_Name %v; want %q, %q", h["MATCH_EXP_JOB_Machine"], h["MATCH_Name"], machine, slot)
	}
	if args, _ := h["Arguments"].(string); !strings.Contains(args, "$$(Name)") {
		t.Errorf("the job's own Arguments lost their references: %q", args)
	}
	id := strconv.Itoa(bad) + ".0"
	eventually(t, 60*time.Second, "the job with $$(NoSuchAttr) held", func() bool { return p.jobStatus(t, id) == 5 })
	if r, _ := p.jobs(t, "q", id)[0]["HoldReason"].(string); !strings.Contains(r, "NoSuchAttr") {
		t.Errorf("hold reason %q does not name NoSuchAttr", r)
	}
}
