package agent

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/jobargs"
	"harrier.dev/harrier/matchmaker"
	"harrier.dev/harrier/wire"
)

// A job whose ad has Ports is matched as a gang (package
// matchmaker/gang): several machines, and license seats the matchmaker
// keeps, at once. Its executable runs on the gang's first machine, the
// one docked at its first port, as the job of that machine's claim; the
// other machines are claimed with it and held, idle, until it ends. The
// job finds them all in its environment (as HTCondor's parallel universe
// gives a job its machines):
//
//	HARRIER_GANG_SLOTS     the gang's slots, first machine first ("slot1@a slot1@b")
//	HARRIER_GANG_HOSTS     their machines' names, in the same order
//	HARRIER_GANG_LABELS    the labels of the ports they docked at, in the same order
//	HARRIER_GANG_LICENSES  the licenses the gang holds a seat of
//
// Claiming is the thesis's two-phase claim: every machine is asked in the
// order of its slot name, one order across the pool, and one refusal
// releases every other member, claimed or not yet, so that two gangs wanting the
// same machines never wait for each other. A startd refuses a claim it
// was not matched with at once; it never makes a claimant wait.

// gangClaims are the machines of a gang's claim beyond its first.
type gangClaims struct {
	members []gangMember // every machine, the first first
	// licenses name the licenses of which the gang holds a seat.
	licenses []string
}

// gangMember is one machine of a gang: its claim and the label of the
// job's port it docked at.
type gangMember struct {
	claim *claim
	label string
}

// newGangClaims reads the gang of a match; c is the claim of its first
// machine.
func newGangClaims(c *claim, req *wire.MatchedRequest) (*gangClaims, error) {
	g := &gangClaims{licenses: req.Licenses}
	for i, m := range req.Gang {
		mc := c
		if i > 0 {
			machine, err := classad.Parse(m.MachineAd)
			if err != nil {
				return nil, fmt.Errorf("gang member %s: bad machine ad: %w", m.Slot, err)
			}
			mc = &claim{id: m.ClaimId, slot: m.Slot, startdAddr: m.StartdAddr, machine: machine}
		}
		g.members = append(g.members, gangMember{claim: mc, label: m.Label})
	}
	if len(g.members) == 0 || g.members[0].claim.id != c.id {
		return nil, fmt.Errorf("gang match whose first machine is not the match's")
	}
	return g, nil
}

// claimGang claims every machine of c's gang for r's job (ad), in the
// order of their slot names, each with the job as the port it docked at
// describes it (matchmaker.GangJobAd, as the negotiator told its startd),
// and returns the first machine's ad as its startd sent it. On any
// refusal it releases the claims it got, and the matches it did not ask
// for yet, so that every machine is free at once, and reports false.
func (a *Agent) claimGang(ctx context.Context, c *claim, r *run, ad *classad.ClassAd) (machineAd string, ok bool) {
	g := c.gang
	order := slices.Clone(g.members)
	slices.SortFunc(order, func(x, y gangMember) int { return cmp.Compare(x.claim.slot, y.claim.slot) })
	var held int
	for i, m := range order {
		var licenses []string
		if m.claim == c {
			licenses = g.licenses
		}
		sent, ok := a.requestClaim(ctx, m.claim, r, matchmaker.GangJobAd(ad, r.id.String(), m.label, m.claim == c, licenses))
		if !ok {
			a.log.Info("gang claim refused; releasing the gang's other machines", "job", r.id, "slot", m.claim.slot, "held", held)
			for j, o := range order {
				if j != i {
					a.client.releaseClaim(ctx, o.claim.startdAddr, o.claim.id)
				}
			}
			return "", false
		}
		if m.claim == c {
			machineAd = sent
		} else if parsed, err := classad.Parse(sent); err == nil && sent != "" {
			m.claim.machine = parsed
		}
		held++
	}
	return machineAd, true
}

// holdGang keeps the claims of c's gang beyond the first alive until the
// returned function is called; that function releases them.
func (a *Agent) holdGang(ctx context.Context, c *claim) func() {
	var stops []func()
	for _, m := range c.gang.members[1:] {
		stops = append(stops, a.keepAlive(ctx, m.claim))
	}
	return func() {
		for i, m := range c.gang.members[1:] {
			stops[i]()
			a.client.releaseClaim(ctx, m.claim.startdAddr, m.claim.id)
		}
	}
}

// jobAd returns the ad of the gang's job as its shadow and starter see
// it: with the gang in its environment.
func (g *gangClaims) jobAd(ad *classad.ClassAd) *classad.ClassAd {
	var slots, hosts, labels []string
	for _, m := range g.members {
		slots = append(slots, m.claim.slot)
		host, _ := m.claim.machine.EvalString("Machine")
		hosts = append(hosts, host)
		labels = append(labels, m.label)
	}
	env, _ := ad.EvalString(AttrEnvironment)
	gangEnv := jobargs.Join([]string{
		"HARRIER_GANG_SLOTS=" + strings.Join(slots, " "),
		"HARRIER_GANG_HOSTS=" + strings.Join(hosts, " "),
		"HARRIER_GANG_LABELS=" + strings.Join(labels, " "),
		"HARRIER_GANG_LICENSES=" + strings.Join(g.licenses, " "),
	})
	out := ad.Copy()
	out.SetString(AttrEnvironment, strings.TrimSpace(env+" "+gangEnv))
	return out
}
