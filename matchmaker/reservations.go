package matchmaker

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/reservation"
	"harrier.dev/harrier/wire"
)

// reservations puts the pool's advance reservations (package reservation)
// into the matchmaker: it serves the Reservations service, narrows each
// negotiation's requests and machines to what the book allows, vacates
// what a window keeps off a slot, and asks for a cycle at every window's
// start and end.
type reservations struct {
	log        *slog.Logger
	book       *reservation.Book
	policyFile string // RESERVATION_POLICY_FILE, read at each request
	collector  *Collector
	vacater    Vacater // nil: nothing is vacated
	clock      Clock
	kick       func()
	changed    chan struct{} // capacity 1: the book changed

	mu    sync.Mutex
	asked map[string]time.Time // slot+job → when a vacate was last asked
}

// A Vacater takes a job, or an idle claim, off a startd's slot. The
// notifier implements it when it can.
type Vacater interface {
	StartdVacate(ctx context.Context, addr string, req *wire.StartdVacateRequest) error
}

func (n *grpcNotifier) StartdVacate(ctx context.Context, addr string, req *wire.StartdVacateRequest) error {
	return n.call(notifyAddr{addr, pki.RoleStartd}, func(cc *grpc.ClientConn) error {
		_, err := wire.NewStartdClient(cc).Vacate(ctx, req)
		return err
	})
}

// vacateRetry is how long a vacate asked of a slot's job is not asked
// again: the startd takes a while to vacate and advertise.
const vacateRetry = 30 * time.Second

func newReservations(log *slog.Logger, file, policyFile string, c *Collector, n Notifier, clock Clock) (*reservations, error) {
	book, err := reservation.Open(file, clock.Now)
	if err != nil {
		return nil, err
	}
	v, _ := n.(Vacater)
	return &reservations{log: log, book: book, policyFile: policyFile, collector: c, vacater: v, clock: clock,
		changed: make(chan struct{}, 1), asked: map[string]time.Time{}}, nil
}

// schedule is the book as the negotiation at now sees it.
func (r *reservations) schedule(now time.Time) *reservation.Schedule {
	return reservation.NewSchedule(r.book.Current(), now)
}

// apply returns the requests and machines a negotiation at now is to see:
// jobs of a reservation confined to its machines in its window (the rest
// held back), reserved machines narrowed to what may run there.
func (r *reservations) apply(now time.Time, reqs []Request, machines []Machine) ([]Request, []Machine) {
	if r == nil {
		return reqs, machines
	}
	s := r.schedule(now)
	out := reqs[:0:0]
	for _, q := range reqs {
		ad, ok := s.Confine(q.Ad)
		if !ok {
			continue
		}
		q.Ad = ad
		out = append(out, q)
	}
	if s.Empty() {
		return out, machines
	}
	narrowed := make([]Machine, len(machines))
	for i, m := range machines {
		narrowed[i] = Machine{Name: m.Name, Ad: s.NarrowMachine(m.Ad)}
	}
	return out, narrowed
}

// significant adds the job attributes reservations read to a cycle's
// significant attributes, so that agents keep a reservation's jobs, and
// jobs that declare their run time, in autoclusters of their own.
func (r *reservations) significant(attrs []string) []string {
	if r == nil {
		return attrs
	}
	for _, a := range []string{reservation.AttrReservationID, reservation.AttrEstimatedRunTime} {
		low := strings.ToLower(a)
		if !slices.Contains(attrs, low) {
			attrs = append(attrs, low)
		}
	}
	slices.Sort(attrs)
	return attrs
}

// enforce asks the startds to vacate what the book keeps off their slots
// now, each at most once per vacateRetry; wg tracks the calls.
func (r *reservations) enforce(ctx context.Context, now time.Time, machines []Machine, wg *sync.WaitGroup) {
	if r == nil || r.vacater == nil {
		return
	}
	s := r.schedule(now)
	ads := make(map[string]Machine, len(machines))
	list := make([]*classad.ClassAd, 0, len(machines))
	for _, m := range machines {
		ads[m.Name] = m
		list = append(list, m.Ad)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, t := range r.asked {
		if now.Sub(t) >= vacateRetry {
			delete(r.asked, k)
		}
	}
	for _, ev := range s.Evictions(list) {
		key := ev.Slot + "\x00" + ev.JobID
		if _, ok := r.asked[key]; ok {
			continue
		}
		r.asked[key] = now
		addr, _ := ads[ev.Slot].Ad.EvalString("StartdAddr")
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.log.Info("vacating for a reservation", "slot", ev.Slot, "job", ev.JobID, "reason", ev.Reason)
			cctx, cancel := wire.WithTimeout(context.WithoutCancel(ctx))
			defer cancel()
			if err := r.vacater.StartdVacate(cctx, addr, &wire.StartdVacateRequest{Slot: ev.Slot, JobId: ev.JobID, Reason: ev.Reason}); err != nil {
				r.log.Warn("startd not told to vacate for a reservation", "slot", ev.Slot, "err", err)
			}
		}()
	}
}

// watch kicks a cycle at every window's start and end until ctx is done.
func (r *reservations) watch(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		t.Stop()
		var wake <-chan time.Time
		if next := r.schedule(r.clock.Now()).NextChange(); !next.IsZero() {
			t.Reset(time.Until(next) + 10*time.Millisecond)
			wake = t.C
		}
		select {
		case <-ctx.Done():
			return
		case <-r.changed:
			r.kick()
		case <-wake:
			r.kick()
		}
	}
}

// bookChanged tells watch that the windows changed.
func (r *reservations) bookChanged() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// reservationsEndpoint serves the Reservations service. Agents call it
// for their users, naming them (requester); the administrator for anyone.
type reservationsEndpoint struct {
	wire.UnimplementedReservationsServer
	r *reservations
}

// caller returns who asks, and whether they are the administrator.
func caller(ctx context.Context, requester, what string) (string, bool, error) {
	p, ok := wire.PeerOf(ctx)
	switch {
	case !ok:
		return "", false, status.Errorf(codes.Unauthenticated, "%s: unknown caller", what)
	case p.Role == pki.RoleAdmin:
		return requester, true, nil
	case requester == "":
		return "", false, status.Errorf(codes.InvalidArgument, "%s: the agent named no user", what)
	}
	return requester, false, nil
}

func (e *reservationsEndpoint) Reserve(ctx context.Context, req *wire.ReserveRequest) (*wire.ReserveReply, error) {
	who, admin, err := caller(ctx, req.Requester, "reserve")
	if err != nil {
		return nil, err
	}
	if !admin && req.Owner != who {
		return nil, status.Errorf(codes.PermissionDenied, "reserve: %s may not reserve for %s: only the pool administrator may", who, req.Owner)
	}
	pol, err := reservation.LoadPolicy(e.r.policyFile)
	if err != nil {
		e.r.log.Error("reservation policy", "err", err)
		return nil, status.Errorf(codes.FailedPrecondition, "reserve: %v", err)
	}
	ads := e.r.collector.Query(TypeMachine, classad.Expr{})
	nodes := make([]reservation.Node, len(ads))
	for i, ad := range ads {
		nodes[i] = reservation.NodeOf(ad)
	}
	rq := reservation.Request{Owner: req.Owner, Start: time.Unix(req.Start, 0), End: time.Unix(req.End, 0), Nodes: int(req.Nodes)}
	h, err := e.r.book.Prepare(rq, nodes, pol)
	var refused *reservation.RefusedError
	if errors.As(err, &refused) {
		e.r.log.Info("reservation refused", "owner", rq.Owner, "start", rq.Start, "end", rq.End, "nodes", rq.Nodes, "reason", refused.Reason)
		return &wire.ReserveReply{Reason: refused.Reason}, nil
	}
	if err != nil {
		return nil, status.Errorf(codes.Internal, "reserve: %v", err)
	}
	rsv, err := e.r.book.Commit(h)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "reserve: %v", err)
	}
	e.r.log.Info("reservation granted", "id", rsv.ID, "owner", rsv.Owner, "start", rsv.Start, "end", rsv.End, "nodes", rsv.Nodes)
	e.r.bookChanged()
	return &wire.ReserveReply{Accepted: true, Reservation: info(rsv)}, nil
}

func (e *reservationsEndpoint) ListReservations(ctx context.Context, _ *wire.ListReservationsRequest) (*wire.ListReservationsReply, error) {
	if _, ok := wire.PeerOf(ctx); !ok {
		return nil, status.Error(codes.Unauthenticated, "list reservations: unknown caller")
	}
	reply := &wire.ListReservationsReply{}
	for _, r := range e.r.book.Current() {
		reply.Reservations = append(reply.Reservations, info(r))
	}
	return reply, nil
}

func (e *reservationsEndpoint) CancelReservation(ctx context.Context, req *wire.CancelReservationRequest) (*wire.CancelReservationReply, error) {
	who, admin, err := caller(ctx, req.Requester, "cancel reservation")
	if err != nil {
		return nil, err
	}
	rsv, err := e.r.book.Cancel(req.Id, who, admin)
	switch {
	case errors.Is(err, reservation.ErrNotFound):
		return nil, status.Errorf(codes.NotFound, "cancel reservation: %v", err)
	case errors.Is(err, reservation.ErrNotOwner):
		return nil, status.Errorf(codes.PermissionDenied, "cancel reservation: %v; only its owner or the pool administrator may cancel it", err)
	case err != nil:
		return nil, status.Errorf(codes.Internal, "cancel reservation: %v", err)
	}
	e.r.log.Info("reservation cancelled", "id", rsv.ID, "owner", rsv.Owner, "by", who)
	e.r.bookChanged()
	return &wire.CancelReservationReply{Reservation: info(rsv)}, nil
}

func info(r reservation.Reservation) *wire.ReservationInfo {
	return &wire.ReservationInfo{Id: r.ID, Owner: r.Owner, Start: r.Start.Unix(), End: r.End.Unix(), Nodes: r.Nodes, Created: r.Created.Unix()}
}
