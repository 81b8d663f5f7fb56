package shadow

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync/atomic"

	"google.golang.org/grpc"

	"harrier.dev/harrier/childproc"
	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/wire"
)

// claimLink is what the jobs a shadow serves under one claim share, so
// that only the first pays for it: the session certificate and the server
// the starters reach the shadow at, which passes each call to the job
// being served. A starter kept for the claim's jobs (see package starter)
// keeps its connection to that server too.
type claimLink struct {
	listenHost  string
	caPEM       []byte
	addr        string // of the server
	fingerprint string // of its session certificate
	srv         *grpc.Server
	current     atomic.Pointer[jobServer]
	// buffers carry the file data of the jobs' remote I/O, lent by the
	// server's codec; each job's I/O server takes them from here.
	buffers *wire.Buffers
}

func newClaimLink(spec *Spec) (*claimLink, error) {
	session, err := pki.NewSession()
	if err != nil {
		return nil, fmt.Errorf("shadow: %w", err)
	}
	server, err := session.ServerConfig(spec.CAPEM)
	if err != nil {
		return nil, fmt.Errorf("shadow: %w", err)
	}
	lis, err := net.Listen("tcp", net.JoinHostPort(spec.ListenHost, "0"))
	if err != nil {
		return nil, fmt.Errorf("shadow: listen: %w", err)
	}
	buffers := wire.NewBuffers()
	l := &claimLink{listenHost: spec.ListenHost, caPEM: spec.CAPEM,
		addr: lis.Addr().String(), fingerprint: session.Fingerprint(), buffers: buffers,
		srv: grpc.NewServer(append(wire.ServerOptions(server), buffers.ServerOption())...)}
	wire.RegisterShadowServer(l.srv, shadowRouter{l: l})
	wire.RegisterShadowIOServer(l.srv, ioRouter{l: l})
	go l.srv.Serve(lis)
	return l, nil
}

// serves reports whether the link can serve the job in spec.
func (l *claimLink) serves(spec *Spec) bool {
	return l != nil && l.listenHost == spec.ListenHost && bytes.Equal(l.caPEM, spec.CAPEM)
}

func (l *claimLink) close() {
	if l != nil {
		l.srv.Stop()
	}
}

// ServeClaim is the shadow's side of a claim: it serves the jobs its agent
// sends as Commands on in (see Command.Job), one after the other, passes
// the agent's other commands to the job being served, and reports what the
// agent must know as Events on out, in order, ending with each job's final
// event. It returns when in ends (the job then being served is killed
// first) or ctx is done.
func ServeClaim(ctx context.Context, in io.Reader, out io.Writer, logger *slog.Logger) {
	sender := childproc.NewSender[Event](out)
	events := func(ev Event) {
		if err := sender.Send(ev); err != nil {
			logger.Error("report to agent", "err", err)
		}
	}
	jobs := make(chan *Shadow, 1)
	var current atomic.Pointer[Shadow]
	// The reader replaces the link when a job needs another; the last one
	// is closed here once its job is over (the reader is done with it when
	// it closes jobs).
	var link *claimLink
	go func() {
		defer close(jobs)
		commands := childproc.NewReceiver[Command](in)
		for {
			c, err := commands.Receive()
			if err != nil {
				if s := current.Load(); s != nil {
					s.Kill("the agent went away", false)
				}
				return
			}
			if c.Job == nil {
				// A command for a job that has ended already does nothing:
				// the next job becomes current only when its spec is read.
				if s := current.Load(); s != nil {
					if c.Kill {
						s.Kill(c.Reason, c.Fast)
					}
					if c.Checkpoint {
						s.Checkpoint(c.Vacate)
					}
					if c.Suspend {
						s.Suspend(c.Resume)
					}
					if c.Shell != nil {
						s.shellCommand(c.Shell)
					}
				}
				continue
			}
			s, err := prepare(&link, c.Job, logger, events)
			if err != nil {
				events(Event{Type: EventFailed, Reason: err.Error()})
				continue
			}
			current.Store(s)
			jobs <- s
		}
	}()
	for s := range jobs {
		s.Run(ctx)
		if ctx.Err() != nil {
			return
		}
	}
	link.close()
}

// prepare makes the shadow for the job in spec, opening a new link (and
// closing the old one) unless *link serves it.
func prepare(link **claimLink, spec *Spec, logger *slog.Logger, events func(Event)) (*Shadow, error) {
	if err := spec.check(); err != nil {
		return nil, err
	}
	if !(*link).serves(spec) {
		(*link).close()
		*link = nil
		l, err := newClaimLink(spec)
		if err != nil {
			return nil, err
		}
		*link = l
	}
	return newShadow(*link, spec, logger, events)
}
