package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"harrier.dev/harrier/checkpoint"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/matchmaker"
	"harrier.dev/harrier/wire"
)

// betterAnalyze prints, for each job ad, why it does or does not match the
// pool's machines, in the manner of condor_q -better-analyze.
func betterAnalyze(ctx context.Context, w io.Writer, client wire.ScheddClient, jobs []string) error {
	machines, err := queryPoolAds(ctx, client, matchmaker.TypeMachine)
	if err != nil {
		return err
	}
	var (
		licenses, negotiators []*classad.ClassAd // read once a job needs them
		askedNegotiator       bool
	)
	for _, t := range jobs {
		job, err := classad.Parse(t)
		if err != nil {
			return fmt.Errorf("bad job ad from the pool: %w", err)
		}
		if _, gang := job.Lookup("Ports"); !gang {
			var negotiator *classad.ClassAd
			_, limited := job.Lookup(matchmaker.AttrConcurrencyLimits)
			_, grouped := job.Lookup(matchmaker.AttrAccountingGroup)
			if limited || grouped {
				if !askedNegotiator {
					askedNegotiator = true
					if negotiators, err = queryPoolAds(ctx, client, matchmaker.TypeNegotiator); err != nil {
						return err
					}
				}
				if len(negotiators) > 0 {
					negotiator = negotiators[0]
				}
			}
			printAnalysis(w, job, matchmaker.Analyze(job, machines), matchmaker.JobLimits(job, negotiator))
			if s, ok := matchmaker.JobGroup(job, negotiator); ok {
				printGroupQuota(w, s)
			}
			printCheckpointHistory(w, job, machines)
			fmt.Fprintln(w)
			continue
		}
		if licenses == nil {
			if licenses, err = queryPoolAds(ctx, client, matchmaker.TypeLicense); err != nil {
				return err
			}
		}
		printGangAnalysis(w, job, machines, licenses)
	}
	return nil
}

// queryPoolAds asks the pool for its ads of type typ.
func queryPoolAds(ctx context.Context, client wire.ScheddClient, typ string) ([]*classad.ClassAd, error) {
	reply, err := client.QueryPool(ctx, &wire.QueryRequest{Type: typ})
	if err != nil {
		return nil, rpcError("q -better-analyze", err)
	}
	ads := make([]*classad.ClassAd, 0, len(reply.Ads))
	for _, t := range reply.Ads {
		ad, err := classad.Parse(t)
		if err != nil {
			return nil, fmt.Errorf("bad %s ad from the pool: %w", strings.ToLower(typ), err)
		}
		ads = append(ads, ad)
	}
	return ads, nil
}

// printAnalysis writes one job's analysis, with the state of the
// concurrency limits it names.
func printAnalysis(w io.Writer, job *classad.ClassAd, a matchmaker.Analysis, limits []matchmaker.LimitState) {
	id := jobIDOf(job)
	fmt.Fprintf(w, "The Requirements expression for job %s is\n\n    %s\n\n", id, a.Requirements)
	if len(a.Conditions) > 0 {
		fmt.Fprintf(w, "The Requirements expression for job %s reduces to these conditions:\n\n", id)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "Step\tSlots Matched\t")
		for i, cond := range a.Conditions {
			fmt.Fprintf(tw, "[%d]\t%d\t\n", i, cond.Machines)
		}
		tw.Flush()
		for i, cond := range a.Conditions {
			fmt.Fprintf(w, "  [%d] %s\n", i, cond.Text)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%s:  Run analysis summary ignoring user priority.  Of %d machines,\n", id, a.Machines)
	fmt.Fprintf(w, "  %6d are rejected by your job's requirements\n", a.RejectedByJob)
	fmt.Fprintf(w, "  %6d reject your job because of their own requirements\n", a.RejectedByMachine)
	fmt.Fprintf(w, "  %6d match and are already running your jobs\n", a.RunningOwn)
	fmt.Fprintf(w, "  %6d match but are serving other users\n", a.ServingOthers)
	fmt.Fprintf(w, "  %6d are able to run your job\n", a.Available)
	if b := a.Blame(); b >= 0 && a.RejectedByJob > 0 {
		cond := a.Conditions[b]
		if cond.Machines == 0 {
			fmt.Fprintf(w, "\nCondition [%d] matches no machine: %s\n", b, cond.Text)
		} else {
			fmt.Fprintf(w, "\nCondition [%d] is the most restrictive (%d of %d machines): %s\n", b, cond.Machines, a.Machines, cond.Text)
		}
	}
	if a.Image != "" {
		fmt.Fprintf(w, "\nThe job runs in container image %s: %d of %d machines run such jobs (%s), %d hold the image already\n",
			a.Image, a.RunImage, a.Machines, a.ImageNeeds, a.HoldImage)
		if a.RunImage == 0 {
			fmt.Fprintf(w, "  No machine runs jobs in containers: none advertises %s, so the job cannot run in this pool\n", a.ImageNeeds)
		}
	}
	if len(limits) > 0 {
		fmt.Fprintf(w, "\nThe job uses concurrency limits, as the negotiator last counted them:\n")
		for _, l := range limits {
			switch {
			case !l.HasLimit:
				fmt.Fprintf(w, "  %s: %g of it, no limit set\n", l.Name, l.Use)
			case l.Use > l.Max+1e-9:
				fmt.Fprintf(w, "  %s: %g of it, more than its limit of %g: the job can never start\n", l.Name, l.Use, l.Max)
			case l.Full():
				fmt.Fprintf(w, "  %s: %g of it, %g of %g in use: the job waits until enough is released\n", l.Name, l.Use, l.InUse, l.Max)
			default:
				fmt.Fprintf(w, "  %s: %g of it, %g of %g in use\n", l.Name, l.Use, l.InUse, l.Max)
			}
		}
	}
	if len(a.MachineConditions) > 0 {
		fmt.Fprintf(w, "\nMachines rejecting the job, by the first of their conditions to fail:\n")
		for _, cond := range a.MachineConditions {
			fmt.Fprintf(w, "  %6d  %s\n", cond.Machines, strings.TrimSpace(cond.Text))
		}
	}
}

// printCheckpointHistory says how the job's checkpoints and restores went,
// and why the last that failed did: a job that lost its work says why;
// and, for a job with a checkpoint, how many of machines can restore it.
func printCheckpointHistory(w io.Writer, job *classad.ClassAd, machines []*classad.ClassAd) {
	id := jobIDOf(job)
	count := func(name string) int64 { n, _ := job.EvalInt(name); return n }
	ckpts, ckptFailures := count("NumCkpts"), count("NumCheckpointFailures")
	restores, restoreFailures := count("NumRestores"), count("NumRestoreFailures")
	if ckpts+ckptFailures+restores+restoreFailures == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s: checkpoints taken %d, failed %d; restored from a checkpoint %d times, restores failed %d, started from the beginning %d times\n",
		id, ckpts, ckptFailures, restores, restoreFailures, count("NumFreshStarts"))
	if r, ok := job.EvalString("LastCheckpointFailure"); ok && r != "" {
		fmt.Fprintf(w, "  Last checkpoint failure: %s\n", r)
	}
	if r, ok := job.EvalString("LastRestoreFailure"); ok && r != "" {
		fmt.Fprintf(w, "  Last restore failure: %s\n", r)
	}
	if platform, ok := job.EvalString(checkpoint.AttrLastPlatform); ok {
		n := 0
		for _, m := range machines {
			if p, _ := m.EvalString(checkpoint.AttrPlatform); p == platform {
				n++
			}
		}
		fmt.Fprintf(w, "  Its last checkpoint was taken on platform %q: %d of %d machines restore it\n", platform, n, len(machines))
	}
}

// printGroupQuota says how much of its accounting group's quota a job's
// group uses, as the negotiator last counted it.
func printGroupQuota(w io.Writer, s matchmaker.GroupState) {
	fmt.Fprintf(w, "\nThe job is charged to accounting group %s: %g of its quota of %g CPUs in use", s.Group, s.Usage, s.Quota)
	if s.Usage+s.CPUs > s.Quota+1e-9 {
		fmt.Fprintf(w, ": the job, of %g, waits until the group's jobs free enough, or for what other groups leave if the group accepts surplus", s.CPUs)
	}
	fmt.Fprintln(w)
}
