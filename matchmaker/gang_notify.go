package matchmaker

import (
	"context"
	"strings"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

// AttrGangLabel names, in the job ad a gang's machine is told of, the
// label of the port it docked at.
const AttrGangLabel = "GangLabel"

// startGang records gang g in the collector as Claim records a match
// (every machine Matched, the job out of its request), holds its license
// seats, and tells its members in the background.
func (d *driver) startGang(ctx context.Context, g GangMatch) {
	for _, m := range g.Machines {
		d.collector.Claim(Match{Job: g.Job, Request: g.Request, Machine: m.Machine})
	}
	first := g.Machines[0].Name
	d.licenses.hold(first, d.collector.machineAd(first), g.Licenses)
	d.wg.Add(1)
	go d.notifyGang(context.WithoutCancel(ctx), g)
}

// notifyGang tells every startd of gang g of its match and then the
// agent, with every member's claim id: the agent claims them all or none.
// If a startd cannot be told, the agent is not, the job returns to its
// agent's idle set and the seats are given back; the startds told
// already drop their matches after their match timeout.
func (d *driver) notifyGang(ctx context.Context, g GangMatch) {
	defer d.wg.Done()
	d.sem <- struct{}{}
	defer func() { <-d.sem }()
	log := d.log.With("job", g.Job.ID, "agent", g.Job.Agent, "gang", gangNames(g))
	req := &wire.MatchedRequest{JobId: g.Job.ID, Licenses: g.Licenses}
	for i, m := range g.Machines {
		job := memberJobAd(g.Job, m, i == 0, g.Licenses)
		addr, _ := m.Ad.EvalString("StartdAddr")
		mb := &wire.GangMember{Slot: m.Name, StartdAddr: addr, ClaimId: newClaimID(), MachineAd: m.Ad.String(), JobAd: job.String(), Label: m.Label}
		sctx, cancel := wire.WithTimeout(ctx)
		err := d.notifier.StartdMatched(sctx, addr, &wire.StartdMatchedRequest{Slot: m.Name, ClaimId: mb.ClaimId, JobAd: mb.JobAd})
		cancel()
		if err != nil {
			log.Warn("startd not told of its gang's match; job returns to the idle set", "slot", m.Name, "startd", addr, "err", err)
			d.collector.Unclaim(Match{Job: g.Job, Request: g.Request, Machine: m.Machine})
			d.licenses.release(g.Machines[0].Name)
			d.Kick()
			return
		}
		req.Gang = append(req.Gang, mb)
	}
	root := req.Gang[0]
	req.ClaimId, req.Slot, req.StartdAddr, req.MachineAd = root.ClaimId, root.Slot, root.StartdAddr, root.MachineAd
	actx, cancel := wire.WithTimeout(ctx)
	err := d.notifier.AgentMatched(actx, g.Job.AgentAddr, req)
	cancel()
	if err != nil {
		log.Warn("agent not told of gang match", "addr", g.Job.AgentAddr, "err", err)
		return
	}
	log.Info("gang matched", "licenses", strings.Join(g.Licenses, " "))
}

// memberJobAd is the job as machine m of its gang is told of it and
// claimed with: the job's ad with the attributes of the port m docked at
// (what a machine's START reads of the job there), and Requirements true,
// since the gang's constraints were checked as a whole and a port's
// labels mean nothing to a lone startd. The first machine's ad lists the
// licenses, so that its claim publishes them while it lasts.
func memberJobAd(j Job, m GangMachine, first bool, licenses []string) *classad.ClassAd {
	ad := j.Ad.Copy()
	ad.Delete("Ports")
	ad.SetString("JobId", j.ID)
	if m.Port != nil {
		for _, name := range m.Port.Names() {
			switch strings.ToLower(name) {
			case "label", "requirements", "constraint", "rank":
				continue
			}
			e, _ := m.Port.Lookup(name)
			ad.Set(name, e)
		}
	}
	ad.SetBool("Requirements", true)
	ad.SetString(AttrGangLabel, m.Label)
	if first && len(licenses) > 0 {
		names := make([]classad.Value, len(licenses))
		for i, l := range licenses {
			names[i] = classad.String(l)
		}
		ad.SetValue(AttrGangLicenses, classad.List(names...))
	}
	return ad
}

func gangNames(g GangMatch) string {
	names := make([]string, 0, len(g.Machines)+len(g.Licenses))
	for _, m := range g.Machines {
		names = append(names, m.Name)
	}
	return strings.Join(append(names, g.Licenses...), " ")
}

// machineAd returns the stored ad of the machine named name, or nil.
func (c *Collector) machineAd(name string) *classad.ClassAd {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ads[keyOf(TypeMachine, name)].ad
}
