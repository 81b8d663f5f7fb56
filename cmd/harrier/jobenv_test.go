package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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

// TestJobResourceLimits: coresize and stack_size become the limits a
// job's processes run under, in a container and as plain processes;
// another user's job without them runs under the machine's.
func TestJobResourceLimits(t *testing.T) {
	bin := publicBinary(t)
	var stack unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_STACK, &stack); err != nil {
		t.Fatal(err)
	}
	machineStack := "unlimited"
	if stack.Cur != unix.RLIM_INFINITY {
		machineStack = strconv.FormatUint(stack.Cur/1024, 10)
	}
	for _, sandbox := range []string{"container", "process"} {
		t.Run(sandbox, func(t *testing.T) {
			p := startPoolFrom(t, bin, 1, "SANDBOX = "+sandbox)
			alice, bob := newUser(t), newUser(t)
			outs := map[string]string{}
			for _, u := range []struct {
				name, home, limits string
			}{{alice.Username, alice.HomeDir, "coresize = 0\nstack_size = 16777216\n"}, {bob.Username, bob.HomeDir, ""}} {
				uid, gid := lookupIDs(t, u.name)
				dir := filepath.Join(u.home, "limits")
				writeFile(t, filepath.Join(dir, "limits.sh"), "#!/bin/sh\necho \"core=$(ulimit -c) stack=$(ulimit -s)\"\n", 0o755)
				chownAll(t, dir, uid, gid)
				c := p.submitAs(t, u.name, dir, "limits.sub", "executable = limits.sh\noutput = limits.out\nlog = limits.log\n"+u.limits+"queue\n")
				if out, code := p.harrier(t, "wait", "--timeout", "60", strconv.Itoa(c)+".0"); code != 0 {
					t.Fatalf("wait %d.0: exit %d: %s", c, code, out)
				}
				out, _ := os.ReadFile(filepath.Join(dir, "limits.out"))
				outs[u.name] = strings.TrimSpace(string(out))
			}
			if want := "core=0 stack=16384"; outs[alice.Username] != want {
				t.Errorf("the job with coresize and stack_size ran under %q, want %q", outs[alice.Username], want)
			}
			if want := " stack=" + machineStack; !strings.HasSuffix(outs[bob.Username], want) {
				t.Errorf("the job without them ran under %q, want the machine's stack limit (%q)", outs[bob.Username], want)
			}
		})
	}
}

// exec-with-limits refuses what is not RESOURCE=LIMIT ... -- PATH ARGV0,
// and sets the limits before it becomes the program.
func TestExecWithLimits(t *testing.T) {
	for _, args := range [][]string{
		{"4=x", "--", "/bin/true", "true"},
		{"core=0", "--", "/bin/true", "true"},
		{"4=0", "/bin/true", "true"},
		{"4=0", "--", "/bin/true"},
	} {
		if out, code := harrier(t, nil, append([]string{"exec-with-limits"}, args...)...); code != 2 {
			t.Errorf("exec-with-limits %v: exit %d, want 2: %s", args, code, out)
		}
	}
	out, code := harrier(t, nil, "exec-with-limits", "4=0", "3=16777216", "--", "/bin/sh", "job", "-c", `echo "$0 $(ulimit -c) $(ulimit -s)"`)
	if code != 0 || out != "job 0 16384\n" {
		t.Errorf("exec-with-limits: exit %d, output %q, want %q", code, out, "job 0 16384\n")
	}
}
