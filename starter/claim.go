package starter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"

	"harrier.dev/harrier/childproc"
	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/wire"
)

// ServeClaim is the starter's side of a claim: it runs the jobs its startd
// sends as Commands on in, one after the other, and reports each one's end
// as an Event on out, until in ends. The first command must carry a job;
// runnerFor chooses the runner for the claim from it (and may settle
// Spec.Sandbox, which the claim's later jobs keep). A vacate or kill
// command stops the job being run and ends the claim; cancelling ctx kills
// the job.
//
// The claim's jobs come from one shadow, which keeps its address and
// session certificate, so one connection serves them all.
func ServeClaim(ctx context.Context, in io.Reader, out io.Writer, runnerFor func(*Spec) Runner, logger *slog.Logger) error {
	commands := childproc.NewReceiver[Command](in)
	first, err := commands.Receive()
	if err != nil {
		return fmt.Errorf("read the first job: %w", err)
	}
	if first.Job == nil {
		return errors.New("read the first job: the startd sent a command before any job")
	}
	spec := first.Job
	if err := spec.Check(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c := &claim{runner: runnerFor(spec), stop: make(chan struct{}), specs: make(chan *Spec, 1), logger: logger}
	defer c.images.release()
	sandbox := spec.Sandbox // as runnerFor settled it
	// The slot's jobs' iofs mount point, if they had one, empty now.
	defer os.Remove(jobDirMountpoint(spec.ScratchDir))
	go c.receive(commands, cancel)
	defer c.closeConn()
	events := childproc.NewSender[Event](out)
	for {
		conn, err := c.connFor(spec)
		if err != nil {
			return err
		}
		s := New(spec, conn, c.runner, logger)
		s.images = &c.images
		c.current.Store(s)
		if err := s.Run(ctx); err != nil {
			return err
		}
		c.current.Store(nil)
		select {
		case <-c.stop:
			return nil
		default:
		}
		if !spec.Reusable || ctx.Err() != nil {
			return nil
		}
		if err := events.Send(Event{Type: EventEnded}); err != nil {
			return fmt.Errorf("report the job's end to the startd: %w", err)
		}
		var ok bool
		select {
		case spec, ok = <-c.specs:
		case <-c.stop:
			return nil
		}
		if !ok {
			return nil // the claim is over
		}
		if err := spec.Check(); err != nil {
			return err
		}
		spec.Sandbox = sandbox
	}
}

// claim is what ServeClaim keeps between a claim's jobs.
type claim struct {
	runner Runner
	logger *slog.Logger
	// current is the job being run, nil between jobs.
	current atomic.Pointer[Starter]
	// stop is closed by the first vacate or kill: the claim takes no
	// further job, and ends at once if it has none. specs carries the
	// claim's next jobs; it is closed at the end of the startd's input.
	stop     chan struct{}
	stopOnce sync.Once
	specs    chan *Spec

	conn             *grpc.ClientConn
	connAddr, connFP string
	// images are the container images the claim's jobs ran in.
	images claimImages
}

// receive passes the startd's commands on until its input ends: jobs to
// the claim's loop, the rest to the job being run. kill is called on a
// kill command, and when the input ends: a startd that stops with a job
// running kills it first, so a job still running then has lost its startd,
// and no job runs on a machine whose startd does not know of it.
func (c *claim) receive(commands *childproc.Receiver[Command], kill func()) {
	defer close(c.specs)
	for {
		cmd, err := commands.Receive()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				c.logger.Error("startd commands", "err", err)
			}
			if c.current.Load() != nil {
				c.logger.Warn("the startd went away; killing the job")
			}
			kill()
			return
		}
		if cmd.Vacate || cmd.Kill {
			c.stopOnce.Do(func() { close(c.stop) })
		}
		if cmd.Kill {
			kill()
		}
		if cmd.Job != nil {
			c.specs <- cmd.Job
			continue
		}
		// A command for a job that has ended does nothing: the next job
		// becomes current only when it starts.
		s := c.current.Load()
		if s == nil {
			continue
		}
		switch {
		case cmd.Suspend:
			s.Suspend()
		case cmd.Continue:
			s.Continue()
		case cmd.Vacate:
			s.Vacate()
		}
	}
}

// connFor returns a connection to spec's shadow, reusing the previous
// job's if it goes to the same shadow.
func (c *claim) connFor(spec *Spec) (*grpc.ClientConn, error) {
	if c.conn != nil && c.connAddr == spec.ShadowAddr && c.connFP == spec.ShadowFingerprint {
		return c.conn, nil
	}
	c.closeConn()
	tlsCfg, err := pki.PinnedClientConfig(spec.CertFile, spec.KeyFile, spec.ShadowFingerprint)
	if err != nil {
		return nil, fmt.Errorf("starter TLS: %w", err)
	}
	conn, err := wire.Dial(spec.ShadowAddr, tlsCfg)
	if err != nil {
		return nil, err
	}
	c.conn, c.connAddr, c.connFP = conn, spec.ShadowAddr, spec.ShadowFingerprint
	return conn, nil
}

func (c *claim) closeConn() {
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}
