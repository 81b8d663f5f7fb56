package matchmaker

import (
	"log/slog"
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

// ad returns the Negotiator ad that publishes s, with the attribute names
// HTCondor's negotiator uses for its latest cycle (suffix 0).
func (s CycleStats) ad(name string) *classad.ClassAd {
	ad := classad.New()
	ad.SetString("MyType", TypeNegotiator)
	ad.SetString("Name", name)
	ad.SetInt("LastNegotiationCycleTime0", s.Start.Unix())
	ad.SetInt("LastNegotiationCycleEnd0", s.Start.Add(s.Duration).Unix())
	ad.SetReal("LastNegotiationCycleDuration0", s.Duration.Seconds())
	ad.SetReal("LastNegotiationCyclePhase1Duration0", s.Snapshot.Seconds())
	ad.SetReal("LastNegotiationCyclePhase2Duration0", (s.Phases.Requests + s.Phases.Classify + s.Phases.Index).Seconds())
	ad.SetReal("LastNegotiationCyclePhase3Duration0", s.Phases.MatchLists.Seconds())
	ad.SetReal("LastNegotiationCyclePhase4Duration0", (s.Phases.Allocate + s.Phases.Preempt).Seconds())
	ad.SetInt("LastNegotiationCycleMatches0", int64(s.Matches))
	ad.SetInt("LastNegotiationCycleRejections0", int64(s.Rejections))
	ad.SetInt("LastNegotiationCycleNumIdleJobs0", int64(s.IdleJobs))
	ad.SetInt("LastNegotiationCycleNumSchedulers0", int64(s.Submitters))
	ad.SetInt("LastNegotiationCycleCandidateSlots0", int64(s.CandidateSlots))
	ad.SetInt("LastNegotiationCycleResourceRequests0", int64(s.Requests))
	ad.SetInt("LastNegotiationCycleMachineClasses0", int64(s.MachineClasses))
	ad.SetInt("LastNegotiationCyclePreemptions0", int64(s.Preemptions))
	ad.SetString(AttrSignificantAttributes, strings.Join(s.SignificantAttributes, ","))
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
