package main

import (
	"encoding/json"
	"fmt"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// groupPool starts a pool of config for two users' jobs of sleepJob.
func groupPool(t *testing.T, config string) (p *testPool, alice, bob *user.User) {
	t.Helper()
	return startPoolFrom(t, publicBinary(t), 1, config+"\nNEGOTIATOR_INTERVAL = 1"), newUser(t), newUser(t)
}

// sleepJob is a job that sleeps a few seconds where it is submitted.
const sleepJob = "executable = /bin/sleep\narguments = 3\nshould_transfer_files = NO\n"

// TestAccountingGroups: with GROUP_NAMES = group_physics, alice's job in
// that group is charged to group_physics.alice (its ad, its slot's while
// it runs, the accountant's usage), while bob's job naming a group the
// pool does not have is charged to bob; bob cannot charge his job to
// alice, nor edit his job into the group.
func TestAccountingGroups(t *testing.T) {
	p, alice, bob := groupPool(t, "NUM_SLOTS = 2\nGROUP_NAMES = group_physics")
	const job = sleepJob
	a := p.submitAs(t, alice.Username, alice.HomeDir, "a.sub", job+"accounting_group = group_physics\nqueue\n")
	b := p.submitAs(t, bob.Username, bob.HomeDir, "b.sub", job+"accounting_group = group_madeup\nqueue\n")
	aID, bID := fmt.Sprintf("%d.0", a), fmt.Sprintf("%d.0", b)

	if out := strings.TrimSpace(p.must(t, "q", "-af", "AcctGroup", "AcctGroupUser", "AccountingGroup", aID)); out != "group_physics "+alice.Username+" group_physics."+alice.Username {
		t.Errorf("alice's job: AcctGroup AcctGroupUser AccountingGroup = %q", out)
	}
	if out := strings.TrimSpace(p.must(t, "q", "-af", "AcctGroup", "AccountingGroup", bID)); out != "group_madeup undefined" {
		t.Errorf("bob's job, in no group of the pool's: AcctGroup AccountingGroup = %q", out)
	}
	// As condor_q -format prints them: bob's job has no AccountingGroup.
	out, code := harrierAs(t, p.env, alice.Username, "q", "-allusers", "-format", "%d.", "ClusterId", "-format", `%d `, "ProcId", "-format", `%s`, "AccountingGroup", "-format", `\n`, "Owner")
	if want := fmt.Sprintf("%d.0 group_physics.%s\n%d.0 \n", a, alice.Username, b); code != 0 || out != want {
		t.Errorf("q -format: exit %d, %q, want %q", code, out, want)
	}
	eventually(t, 30*time.Second, "alice's job to run on a slot charged to group_physics."+alice.Username, func() bool {
		for _, ad := range p.poolAds(t, "Machine") {
			if g, _ := ad.EvalString("AccountingGroup"); g == "group_physics."+alice.Username {
				return true
			}
		}
		return false
	})
	eventually(t, 30*time.Second, "the accountant to count group_physics."+alice.Username+" and "+bob.Username, func() bool {
		out, code := p.harrier(t, "userprio", "-json")
		var ads []map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &ads) != nil {
			return false
		}
		seen := map[string]bool{}
		for _, ad := range ads {
			if u, _ := ad["AccumulatedUsage"].(float64); u > 0 {
				name, _ := ad["Name"].(string)
				seen[name] = true
			}
		}
		return seen["group_physics."+alice.Username] && seen[bob.Username] && !seen[alice.Username]
	})
	// bob may neither charge a job to alice nor edit his into the group.
	sub := filepath.Join(bob.HomeDir, "c.sub")
	writeFile(t, sub, job+"accounting_group = group_physics\naccounting_group_user = "+alice.Username+"\nqueue\n", 0o644)
	if out, code := harrierAs(t, p.env, bob.Username, "submit", sub); code == 0 || !strings.Contains(out, "charged to its owner") {
		t.Errorf("bob submitted a job charged to alice: exit %d: %s", code, out)
	}
	if out, code := harrierAs(t, p.env, bob.Username, "qedit", bID, "AccountingGroup", `"group_physics.`+alice.Username+`"`); code == 0 || !strings.Contains(out, "may not be changed") {
		t.Errorf("bob edited his job's AccountingGroup: exit %d: %s", code, out)
	}
	for _, id := range []string{aID, bID} {
		p.completed(t, id)
	}
}

// TestGroupQuota: with GROUP_QUOTA_group_a = 1 on a pool of four slots,
// alice's three jobs in group_a run one after another while bob's three,
// in no group, run together; the negotiator publishes the group's quota
// and use, and alice's waiting job's -better-analyze says why it waits.
func TestGroupQuota(t *testing.T) {
	p, alice, bob := groupPool(t, "NUM_SLOTS = 4\nGROUP_NAMES = group_a\nGROUP_QUOTA_group_a = 1")
	const job = sleepJob
	a := p.submitAs(t, alice.Username, alice.HomeDir, "a.sub", job+"accounting_group = group_a\nqueue 3\n")
	b := p.submitAs(t, bob.Username, bob.HomeDir, "b.sub", job+"queue 3\n")
	var waiting string
	eventually(t, 30*time.Second, "one of alice's jobs to run and another to wait for the group's quota", func() bool {
		for _, id := range []string{"0", "1", "2"} {
			id = fmt.Sprintf("%d.%s", a, id)
			out, _ := harrierAs(t, p.env, alice.Username, "q", "-better-analyze", id)
			if strings.Contains(out, "charged to accounting group group_a: 1 of its quota of 1 CPUs in use: the job, of 1, waits") {
				waiting = out
				return true
			}
		}
		return false
	})
	t.Logf("a waiting job's analysis ends:\n%s", waiting[max(0, len(waiting)-400):])
	negotiator := p.poolAds(t, "Negotiator")
	if len(negotiator) == 0 {
		t.Fatal("no negotiator ad")
	}
	if q, _ := negotiator[0].EvalReal("GroupQuota_group_a"); q != 1 {
		t.Errorf("GroupQuota_group_a = %v, want 1", q)
	}
	type span struct{ start, end int64 }
	runs := func(cluster int) []span {
		var out []span
		for proc := range 3 {
			ad := p.completed(t, fmt.Sprintf("%d.%d", cluster, proc))
			start, _ := ad["JobCurrentStartDate"].(float64)
			end, _ := ad["CompletionDate"].(float64)
			out = append(out, span{int64(start), int64(end)})
		}
		return out
	}
	overlaps := func(s []span) bool {
		for i := range s {
			for j := i + 1; j < len(s); j++ {
				if s[i].start < s[j].end && s[j].start < s[i].end {
					return true
				}
			}
		}
		return false
	}
	if s := runs(a); overlaps(s) {
		t.Errorf("alice's jobs in group_a, of quota 1, ran together: %v", s)
	}
	if s := runs(b); !overlaps(s) {
		t.Errorf("bob's jobs, in no group, ran one after another: %v", s)
	}
}

// TestNiceUser: on a pool of one slot, bob's nice_user job, released
// with alice's, runs only once hers is done, charged to nice-user.bob,
// whose priority factor is the worst.
func TestNiceUser(t *testing.T) {
	p, alice, bob := groupPool(t, "NUM_SLOTS = 1")
	b := p.submitAs(t, bob.Username, bob.HomeDir, "nice.sub", sleepJob+"nice_user = true\nhold = true\nqueue\n")
	a := p.submitAs(t, alice.Username, alice.HomeDir, "a.sub", sleepJob+"hold = true\nqueue\n")
	// Both at once, so that one cycle sees both: bob's would win a tie of
	// equal priorities half the time.
	p.must(t, "release", "-all")
	if g := strings.TrimSpace(p.must(t, "q", "-af", "AccountingGroup", fmt.Sprintf("%d.0", b))); g != "nice-user."+bob.Username {
		t.Errorf("bob's nice job is charged to %q", g)
	}
	first, second := p.completed(t, fmt.Sprintf("%d.0", a)), p.completed(t, fmt.Sprintf("%d.0", b))
	end, _ := first["CompletionDate"].(float64)
	start, _ := second["JobCurrentStartDate"].(float64)
	if start < end {
		t.Errorf("bob's nice job started at %v, before alice's ended at %v", start, end)
	}
	out, _ := p.harrier(t, "userprio", "-json")
	var ads []map[string]any
	_ = json.Unmarshal([]byte(out), &ads)
	for _, ad := range ads {
		if ad["Name"] == "nice-user."+bob.Username {
			if f, _ := ad["PriorityFactor"].(float64); f != 1e10 {
				t.Errorf("nice-user.%s's factor %v, want 1e10", bob.Username, f)
			}
			return
		}
	}
	t.Errorf("userprio does not list nice-user.%s:\n%s", bob.Username, out)
}
