package startd

import (
	"context"
	"time"

	"harrier.dev/harrier/wire"
)

// advertiseLoop sends every slot's ad now, every AdvertiseInterval and
// after every state change, until ctx is done.
func (s *Startd) advertiseLoop(ctx context.Context, c wire.CollectorClient) {
	t := time.NewTicker(s.cfg.AdvertiseInterval)
	defer t.Stop()
	for {
		s.advertise(ctx, c)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.changed:
		}
	}
}

// advertise sends the current ad of every slot. Failures are logged: the
// next round retries, and the lease covers two missed rounds.
func (s *Startd) advertise(ctx context.Context, c wire.CollectorClient) {
	lease := int32(3 * s.cfg.AdvertiseInterval / time.Second)
	for _, a := range s.ads() {
		if a.err != nil {
			s.log.Error("build machine ad", "slot", a.name, "err", a.err)
			continue
		}
		cctx, cancel := wire.WithTimeout(ctx)
		_, err := c.Advertise(cctx, &wire.AdvertiseRequest{Type: "Machine", Name: a.name, Ad: a.text, LeaseSeconds: lease})
		cancel()
		if err != nil && ctx.Err() == nil {
			s.log.Warn("advertise", "slot", a.name, "err", err)
		}
	}
}

// invalidate withdraws every slot's ad.
func (s *Startd) invalidate(ctx context.Context, c wire.CollectorClient) {
	for _, sl := range s.slots { // names never change: no lock needed
		cctx, cancel := wire.WithTimeout(ctx)
		_, err := c.Invalidate(cctx, &wire.InvalidateRequest{Type: "Machine", Name: sl.name})
		cancel()
		if err != nil {
			s.log.Warn("invalidate", "slot", sl.name, "err", err)
		}
	}
}

// slotAd is one slot's ad as text, or why it could not be built.
type slotAd struct {
	name string
	text string
	err  error
}

// ads measures the machine and builds every slot's ad.
func (s *Startd) ads() []slotAd {
	m, err := s.snapshot()
	now := time.Now()
	s.mu.Lock()
	views := make([]view, len(s.slots))
	for i, sl := range s.slots {
		views[i] = sl.view()
	}
	c := s.adc
	s.mu.Unlock()
	out := make([]slotAd, len(views))
	for i, v := range views {
		out[i] = slotAd{name: v.name, err: err}
		if err == nil {
			out[i].text = machineAd(c, m, v, now).String()
		}
	}
	return out
}
