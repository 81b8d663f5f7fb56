package shadow

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"

	"google.golang.org/grpc"

	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/wire"
)

// claimLink is what the jobs a shadow serves under one claim share: the
// TLS configurations built from the spec's material and the connection to
// the claim's startd, which stays open from one job to the next.
type claimLink struct {
	startdAddr           string
	certPEM              []byte
	serverTLS, clientTLS *tls.Config
	startd               *grpc.ClientConn
}

func newClaimLink(spec *Spec) (*claimLink, error) {
	server, client, err := pki.ConfigsFromPEM(spec.CertPEM, spec.KeyPEM, spec.CAPEM)
	if err != nil {
		return nil, fmt.Errorf("shadow: %w", err)
	}
	// Each job's server works on a copy of server; one ticket key set here
	// lets a starter that served the claim's previous job resume its TLS
	// session instead of a full handshake.
	var key [32]byte
	if _, err := rand.Read(key[:]); err != nil {
		return nil, fmt.Errorf("shadow: session ticket key: %w", err)
	}
	server.SetSessionTicketKeys([][32]byte{key})
	conn, err := wire.Dial(spec.StartdAddr, client)
	if err != nil {
		return nil, fmt.Errorf("shadow: %w", err)
	}
	return &claimLink{startdAddr: spec.StartdAddr, certPEM: spec.CertPEM, serverTLS: server, clientTLS: client, startd: conn}, nil
}

// serves reports whether the link can serve the job in spec.
func (l *claimLink) serves(spec *Spec) bool {
	return l != nil && l.startdAddr == spec.StartdAddr && bytes.Equal(l.certPEM, spec.CertPEM)
}

func (l *claimLink) close() {
	if l != nil {
		l.startd.Close()
	}
}

// Serve runs the jobs the agent sends on in (Commands, see Command.Job),
// one after the other, and passes the agent's other commands to the job
// being served. events receives what the agent must know, in order, ending
// with each job's final event; it is called by one goroutine at a time.
// Serve returns when in ends (the job then being served is killed first)
// or ctx is done; it returns an error only when the shadow itself could not
// work.
func Serve(ctx context.Context, in io.Reader, logger *slog.Logger, events func(Event)) error {
	jobs := make(chan *Shadow, 1)
	var current atomic.Pointer[Shadow]
	go func() {
		defer close(jobs)
		var link *claimLink
		defer func() { link.close() }()
		dec := json.NewDecoder(in)
		for {
			var c Command
			if err := dec.Decode(&c); err != nil {
				if s := current.Load(); s != nil {
					s.Kill("the agent went away")
				}
				return
			}
			if c.Job == nil {
				// A command for a job that has ended already does nothing:
				// the next job becomes current only when its spec is read.
				if s := current.Load(); s != nil {
					if c.Kill {
						s.Kill(c.Reason)
					}
					if c.Checkpoint {
						s.Checkpoint(c.Vacate)
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
		if err := s.Run(ctx); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
	}
	return nil
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
