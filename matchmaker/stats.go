package matchmaker

import (
	"log/slog"
	"strconv"
	"strings"
	"time"

	"harrier.dev/harrier/classad"
)

// CycleStats describes one negotiation cycle.
type CycleStats struct {
	Start          time.Time
	Duration       time.Duration
	Snapshot       time.Duration // taking the collector's ads
	Phases         Phases
	Matches        int
	Rejections     int
	IdleJobs       int
	Requests       int
	CandidateSlots int
	MachineClasses int
	Preemptions    int
	Submitters     int
	// SignificantAttributes are published for agents to autocluster by.
	SignificantAttributes []string
}

// negotiatorAd returns the Negotiator ad that publishes cycles, the
// latest first, with the attribute names HTCondor's negotiator uses: suffix
// 0 for the latest cycle, 1 for the one before, and so on.
func negotiatorAd(name string, cycles []CycleStats) *classad.ClassAd {
	ad := classad.New()
	ad.SetString("MyType", TypeNegotiator)
	ad.SetString("Name", name)
	for i, s := range cycles {
		n := strconv.Itoa(i)
		ad.SetInt("LastNegotiationCycleTime"+n, s.Start.Unix())
		ad.SetInt("LastNegotiationCycleEnd"+n, s.Start.Add(s.Duration).Unix())
		ad.SetReal("LastNegotiationCycleDuration"+n, s.Duration.Seconds())
		ad.SetReal("LastNegotiationCyclePhase1Duration"+n, s.Snapshot.Seconds())
		ad.SetReal("LastNegotiationCyclePhase2Duration"+n, (s.Phases.Requests + s.Phases.Classify + s.Phases.Index).Seconds())
		ad.SetReal("LastNegotiationCyclePhase3Duration"+n, s.Phases.MatchLists.Seconds())
		ad.SetReal("LastNegotiationCyclePhase4Duration"+n, (s.Phases.Allocate + s.Phases.Preempt).Seconds())
		ad.SetInt("LastNegotiationCycleMatches"+n, int64(s.Matches))
		ad.SetInt("LastNegotiationCycleRejections"+n, int64(s.Rejections))
		ad.SetInt("LastNegotiationCycleNumIdleJobs"+n, int64(s.IdleJobs))
		ad.SetInt("LastNegotiationCycleNumSchedulers"+n, int64(s.Submitters))
		ad.SetInt("LastNegotiationCycleCandidateSlots"+n, int64(s.CandidateSlots))
		ad.SetInt("LastNegotiationCycleResourceRequests"+n, int64(s.Requests))
		ad.SetInt("LastNegotiationCycleMachineClasses"+n, int64(s.MachineClasses))
		ad.SetInt("LastNegotiationCyclePreemptions"+n, int64(s.Preemptions))
	}
	if len(cycles) > 0 {
		ad.SetString(AttrSignificantAttributes, strings.Join(cycles[0].SignificantAttributes, ","))
	}
	return ad
}

// AttrSignificantAttributes is the Negotiator ad attribute that lists,
// comma-separated, the job attributes machine policies read. Agents keep
// the jobs of one autocluster equal in these.
const AttrSignificantAttributes = "SignificantAttributes"

// LogValue makes CycleStats print as a group of attributes.
func (s CycleStats) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Duration("duration", s.Duration),
		slog.Duration("snapshot", s.Snapshot),
		slog.Duration("requests", s.Phases.Requests),
		slog.Duration("classify", s.Phases.Classify),
		slog.Duration("index", s.Phases.Index),
		slog.Duration("matchlists", s.Phases.MatchLists),
		slog.Duration("allocate", s.Phases.Allocate),
		slog.Duration("preempt", s.Phases.Preempt),
		slog.Int("matches", s.Matches),
		slog.Int("preemptions", s.Preemptions),
		slog.Int("rejections", s.Rejections),
		slog.Int("idle_jobs", s.IdleJobs),
		slog.Int("requests", s.Requests),
		slog.Int("candidate_slots", s.CandidateSlots),
		slog.Int("machine_classes", s.MachineClasses),
	)
}
