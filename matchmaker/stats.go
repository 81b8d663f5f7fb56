package matchmaker

import (
	"log/slog"
	"time"

	"harrier.dev/harrier/classad"
)

// CycleStats describes one negotiation cycle.
type CycleStats struct {
	Start          time.Time
	Duration       time.Duration
	Matches        int
	Rejections     int
	IdleJobs       int
	CandidateSlots int
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
	ad.SetInt("LastNegotiationCycleMatches0", int64(s.Matches))
	ad.SetInt("LastNegotiationCycleRejections0", int64(s.Rejections))
	ad.SetInt("LastNegotiationCycleNumIdleJobs0", int64(s.IdleJobs))
	ad.SetInt("LastNegotiationCycleCandidateSlots0", int64(s.CandidateSlots))
	return ad
}

// LogValue makes CycleStats print as a group of attributes.
func (s CycleStats) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Duration("duration", s.Duration),
		slog.Int("matches", s.Matches),
		slog.Int("rejections", s.Rejections),
		slog.Int("idle_jobs", s.IdleJobs),
		slog.Int("candidate_slots", s.CandidateSlots),
	)
}
