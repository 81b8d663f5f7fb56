package matchmaker

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"harrier.dev/harrier/atomicfile"
)

// cycleStatsKept is how many recent cycles the Negotiator ad publishes
// (suffixes 0, the latest, to 2), as HTCondor's negotiator does by
// default, and the stats file keeps.
const cycleStatsKept = 3

// statsFormat is the version of the negotiator's stats file.
const statsFormat = 1

type statsState struct {
	Format int          `json:"format"`
	Cycles []CycleStats `json:"cycles"` // latest first
}

// loadCycleStats reads the recent cycles a previous matchmaker saved at
// path; a missing file is no history, a damaged one an error naming it.
func loadCycleStats(path string) ([]CycleStats, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("negotiator statistics: %w", err)
	}
	var st statsState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("negotiator statistics %s: %w", path, err)
	}
	if st.Format != statsFormat {
		return nil, fmt.Errorf("negotiator statistics %s: format %d, want %d", path, st.Format, statsFormat)
	}
	if len(st.Cycles) > cycleStatsKept {
		st.Cycles = st.Cycles[:cycleStatsKept]
	}
	return st.Cycles, nil
}

// saveCycleStats replaces the file at path with cycles, atomically.
func saveCycleStats(path string, cycles []CycleStats) error {
	b, err := json.Marshal(statsState{Format: statsFormat, Cycles: cycles})
	if err != nil {
		return fmt.Errorf("negotiator statistics: %w", err)
	}
	if err := atomicfile.Write(path, b, 0o600); err != nil {
		return fmt.Errorf("negotiator statistics: %w", err)
	}
	return nil
}
