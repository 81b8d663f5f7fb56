package matchmaker

import (
	"context"
	"strings"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/matchmaker/gang"
	"harrier.dev/harrier/wire"
)

// Attributes of the job ad a gang's machine is told of and claimed with.
const (
	// AttrGangLabel is the label of the job's port the machine docked at.
	AttrGangLabel = "GangLabel"
	// AttrGangHeld marks a machine held for a job that runs on another
	// machine of its gang: its claim stays idle as long as the job runs.
	AttrGangHeld = "GangHeld"
)

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
		label, licenses := "", g.Licenses
		if m.Port != nil {
			label = m.Label
		}
		if i > 0 {
			licenses = nil
		}
		job := GangJobAd(g.Job.Ad, g.Job.ID, label, i == 0, licenses)
		addr, _ := m.Ad.EvalString("StartdAddr")
		mb := &wire.GangMember{Slot: m.Name, StartdAddr: addr, ClaimId: newClaimID(), MachineAd: m.Ad.String(), JobAd: job.String(), Label: label}
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

// GangJobAd is a gang's job as one of its machines is told of it and
// claimed with: the job's ad without its Ports, with the attributes of
// its port labelled label, where the machine docked (what the machine's
// START reads of the job there; "" if the machine docked at a port of
// another member of the gang), and Requirements true, since the gang's
// constraints were checked as a whole and a port's labels mean nothing
// to a lone startd. The gang's first machine, where the job runs, is
// given the licenses, so that its claim publishes them while it lasts;
// the others are marked held (AttrGangHeld).
func GangJobAd(job *classad.ClassAd, jobID, label string, first bool, licenses []string) *classad.ClassAd {
	ad := job.Copy()
	if ports, err := gang.ParsePorts(job); err == nil && label != "" {
		for _, p := range ports {
			if p.Ad == nil || !strings.EqualFold(p.Label, label) {
				continue
			}
			for _, name := range p.Ad.Names() {
				switch strings.ToLower(name) {
				case "label", "requirements", "constraint", "rank":
					continue
				}
				e, _ := p.Ad.Lookup(name)
				ad.Set(name, e)
			}
		}
	}
	ad.Delete("Ports")
	ad.SetString("JobId", jobID)
	ad.SetBool("Requirements", true)
	ad.SetString(AttrGangLabel, label)
	if !first {
		ad.SetBool(AttrGangHeld, true)
	}
	if len(licenses) > 0 {
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
