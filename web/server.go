package web

import (
	"context"
	"log/slog"
	"time"

	"harrier.dev/harrier/timeseries"
)

// KeepHistory adds sample() to history every interval until ctx is done,
// and saves history to path (unless path is "") once a minute and when it
// stops, so that a restarted daemon keeps it. The first sample is taken
// at once; an interval that is not positive is taken as a minute. A save
// that fails is logged; the history goes on in memory.
func KeepHistory(ctx context.Context, history *timeseries.Store, interval time.Duration, sample func() []float64, path string, logger *slog.Logger) {
	save := func() {
		if path == "" {
			return
		}
		if err := history.Save(path); err != nil {
			logger.Warn("save status history", "err", err)
		}
	}
	if interval <= 0 {
		interval = time.Minute // the finest resolution's bucket
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var saved time.Time
	for {
		now := time.Now()
		if err := history.Add(now, sample()); err != nil {
			logger.Error("status history", "err", err)
		}
		if now.Sub(saved) >= time.Minute {
			save()
			saved = now
		}
		select {
		case <-ctx.Done():
			save()
			return
		case <-tick.C:
		}
	}
}
