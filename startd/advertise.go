package startd

import (
	"context"
	"time"

	"harrier.dev/harrier/wire"
)

// advertiseLoop sends every slot's ad now and every AdvertiseInterval,
// and after a change the ads it changed, until ctx is done. A slot's
// change of state thus costs one ad, not one for every slot of the
// machine, as in HTCondor; what changes with time alone (load, idle
// times) is sent with the periodic round.
func (s *Startd) advertiseLoop(ctx context.Context, c wire.CollectorClient) {
	t := time.NewTicker(s.cfg.AdvertiseInterval)
	defer t.Stop()
	every := true
	for {
		s.advertise(ctx, c, every)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			every = true
		case <-s.changed:
			every = false
		}
	}
}

// advertise withdraws the ads of the dynamic slots gone since the last
// round and sends the current ads: of every slot, or (every false) of
// the slots whose ads changed since they were last sent. Failures are
// logged: an ad that could not be sent goes again with the next round,
// and the lease covers two missed rounds.
func (s *Startd) advertise(ctx context.Context, c wire.CollectorClient, every bool) {
	lease := int32(3 * s.cfg.AdvertiseInterval / time.Second)
	s.mu.Lock()
	gone := s.gone
	s.gone = nil
	s.mu.Unlock()
	s.withdraw(ctx, c, gone)
	for _, a := range s.ads(every) {
		if a.err != nil {
			s.log.Error("build machine ad", "slot", a.name, "err", a.err)
			continue
		}
		cctx, cancel := wire.WithTimeout(ctx)
		_, err := c.Advertise(cctx, &wire.AdvertiseRequest{Type: "Machine", Name: a.name, Ad: a.text, LeaseSeconds: lease})
		cancel()
		if err != nil && ctx.Err() == nil {
			s.log.Warn("advertise", "slot", a.name, "err", err)
			s.mu.Lock()
			if sl := s.slotByName(a.name); sl != nil {
				sl.unsent = true
			}
			s.mu.Unlock()
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

// ads measures the machine and builds the ads of every slot, or (every
// false) of the slots whose ads changed since they were last sent.
func (s *Startd) ads(every bool) []slotAd {
	every = s.everyAd.Swap(false) || every
	s.mu.Lock()
	// Dynamic slots go before their partitionable slots: the matchmaker
	// counts a new dynamic slot's claim (its job's concurrency limits)
	// in the partitionable slot's ad until that slot's next ad, which so
	// never arrives before the dynamic slot's own.
	var views []view
	for _, dynamicFirst := range []bool{true, false} {
		for _, sl := range s.slots {
			if (sl.parent != nil) == dynamicFirst && (every || sl.unsent) {
				views = append(views, sl.view(s.slots))
				sl.unsent = false
			}
		}
	}
	c := s.adc
	s.mu.Unlock()
	if len(views) == 0 {
		return nil
	}
	m, err := s.snapshot()
	now := time.Now()
	out := make([]slotAd, len(views))
	for i, v := range views {
		out[i] = slotAd{name: v.name, err: err}
		if err == nil {
			out[i].text = machineAd(c, m, v, now).String()
		}
	}
	return out
}
