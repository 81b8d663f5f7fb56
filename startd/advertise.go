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

// advertise withdraws the ads of the dynamic slots gone since the last
// round and sends the current ad of every slot. Failures are logged: the
// next round retries, and the lease covers two missed rounds.
func (s *Startd) advertise(ctx context.Context, c wire.CollectorClient) {
	lease := int32(3 * s.cfg.AdvertiseInterval / time.Second)
	s.mu.Lock()
	gone := s.gone
	s.gone = nil
	s.mu.Unlock()
	s.withdraw(ctx, c, gone)
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
	s.mu.Lock()
	names := s.gone
	for _, sl := range s.slots {
		names = append(names, sl.name)
	}
	s.gone = nil
	s.mu.Unlock()
	s.withdraw(ctx, c, names)
}

// withdraw invalidates the ads of the named slots.
func (s *Startd) withdraw(ctx context.Context, c wire.CollectorClient, names []string) {
	for _, name := range names {
		cctx, cancel := wire.WithTimeout(ctx)
		_, err := c.Invalidate(cctx, &wire.InvalidateRequest{Type: "Machine", Name: name})
		cancel()
		if err != nil {
			s.log.Warn("invalidate", "slot", name, "err", err)
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
		views[i] = sl.view(s.slots)
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
