package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAccountingGroups: with GROUP_NAMES = group_physics, alice's job in
// that group is charged to group_physics.alice (its ad, its slot's while
// it runs, the accountant's usage), while bob's job naming a group the
// pool does not have is charged to bob; bob cannot charge his job to
// alice, nor edit his job into the group.
func TestAccountingGroups(t *testing.T) {
	p := startPoolFrom(t, publicBinary(t), 1, "NUM_SLOTS = 2\nNEGOTIATOR_INTERVAL = 1\nGROUP_NAMES = group_physics")
	alice, bob := newUser(t), newUser(t)
	const job = "executable = /bin/sleep\narguments = 4\nshould_transfer_files = NO\n"
	a := p.submitAs(t, alice.Username, alice.HomeDir, "a.sub", job+"accounting_group = group_physics\nqueue\n")
	b := p.submitAs(t, bob.Username, bob.HomeDir, "b.sub", job+"accounting_group = group_madeup\nqueue\n")
	aID, bID := fmt.Sprintf("%d.0", a), fmt.Sprintf("%d.0", b)

	if out := strings.TrimSpace(p.must(t, "q", "-af", "AcctGroup", "AcctGroupUser", "AccountingGroup", aID)); out != "group_physics "+alice.Username+" group_physics."+alice.Username {
		t.Errorf("alice's job: AcctGroup AcctGroupUser AccountingGroup = %q", out)
	}
	if out := strings.TrimSpace(p.must(t, "q", "-af", "AcctGroup", "AccountingGroup", bID)); out != "group_madeup undefined" {
		t.Errorf("bob's job, in no group of the pool's: AcctGroup AccountingGroup = %q", out)
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
		if out, code := p.harrier(t, "wait", "--timeout", "60", id); code != 0 {
			t.Fatalf("wait %s: exit %d: %s", id, code, out)
		}
	}
}
