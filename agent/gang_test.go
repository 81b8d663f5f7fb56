package agent_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

// gangMatch tells the agent, as the matchmaker does, that job id matched
// a gang of the fake startd's slots, the first where the job runs.
func (p *pool) gangMatch(id string, slots ...string) error {
	p.t.Helper()
	req := &wire.MatchedRequest{JobId: id, Licenses: []string{"sim"}}
	for i, s := range slots {
		req.Gang = append(req.Gang, &wire.GangMember{Slot: s, StartdAddr: p.startdAddr, ClaimId: "claim-" + s,
			MachineAd: `[ MyType = "Machine"; Name = "` + s + `"; Machine = "` + strings.TrimPrefix(s, "slot1@") + `" ]`,
			Label:     []string{"Host1", "Host2", "Host3"}[i]})
	}
	req.ClaimId, req.Slot, req.StartdAddr, req.MachineAd = req.Gang[0].ClaimId, slots[0], p.startdAddr, req.Gang[0].MachineAd
	_, err := p.matchmaker.Matched(p.t.Context(), req)
	return err
}

const gangPorts = `Ports = { [ Label = Host1; Requirements = true ], [ Label = Host2; Requirements = true ], [ Label = Host3; Requirements = true ] }`

// TestGangClaimedAllOrNone: the agent claims a gang's machines in the
// order of their slot names; one refusal releases every other member and
// leaves the job idle; a gang claimed whole runs its job on its first
// machine, with the gang in its environment, holds the others, and
// releases them all when the job ends.
func TestGangClaimedAllOrNone(t *testing.T) {
	startd := &fakeStartd{refuseSlots: map[string]bool{"slot1@b": true}}
	p := newPool(t, exitingShadow, startd)
	id := p.submit(gangPorts)
	if err := p.gangMatch(id, "slot1@c", "slot1@a", "slot1@b"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(patience)
	for {
		_, rel := startd.seen()
		slices.Sort(rel)
		if slices.Equal(rel, []string{"claim-slot1@a", "claim-slot1@c"}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after slot1@b refused: released %v, want a and c", rel)
		}
		time.Sleep(10 * time.Millisecond)
	}
	startd.mu.Lock()
	var asked []string
	for _, c := range startd.claims {
		asked = append(asked, c.Slot)
	}
	startd.refuseSlots, startd.claims, startd.releases = nil, nil, nil
	startd.mu.Unlock()
	if !slices.Equal(asked, []string{"slot1@a", "slot1@b"}) {
		t.Errorf("claims asked for %v, want slot1@a then slot1@b, and no more", asked)
	}
	if act, _ := startd.seen(); len(act) != 0 {
		t.Errorf("a gang not wholly claimed was activated: %v", act)
	}
	waitFreeGang(t, p, id)

	p.await(id, "JobStatus == 4")
	act, _ := startd.seen()
	if len(act) != 1 || act[0].ClaimId != "claim-slot1@c" {
		t.Fatalf("activations %v, want one, of the first machine's claim", act)
	}
	job, err := classad.Parse(act[0].JobAd)
	if err != nil {
		t.Fatal(err)
	}
	env, _ := job.EvalString("Environment")
	for _, want := range []string{"'HARRIER_GANG_SLOTS=slot1@c slot1@a slot1@b'", "'HARRIER_GANG_HOSTS=c a b'", "HARRIER_GANG_LICENSES=sim"} {
		if !strings.Contains(env, want) {
			t.Errorf("Environment lacks %s: %s", want, env)
		}
	}
	startd.mu.Lock()
	for _, c := range startd.claims {
		ad, _ := classad.Parse(c.JobAd)
		held, _ := ad.EvalBool("GangHeld")
		_, licensed := ad.Lookup("GangLicenses")
		if _, ports := ad.Lookup("Ports"); ports || held == (c.Slot == "slot1@c") || licensed != (c.Slot == "slot1@c") {
			t.Errorf("claim of %s with %s", c.Slot, c.JobAd)
		}
	}
	startd.mu.Unlock()
	deadline = time.Now().Add(patience)
	for {
		_, rel := startd.seen()
		slices.Sort(rel)
		if slices.Equal(rel, []string{"claim-slot1@a", "claim-slot1@b", "claim-slot1@c"}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the job: released %v, want every member", rel)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitFreeGang matches the job's gang again until the agent takes it.
func waitFreeGang(t *testing.T, p *pool, id string) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for p.gangMatch(id, "slot1@c", "slot1@a", "slot1@b") != nil {
		if time.Now().After(deadline) {
			t.Fatalf("job %s was never free to be matched again", id)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
