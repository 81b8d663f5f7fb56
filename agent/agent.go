// Package agent is Harrier's agent (HTCondor's schedd): it keeps the durable
// job queue, advertises idle jobs to the matchmaker, claims the machines the
// matchmaker pairs them with, runs a shadow for each claim, which serves the
// claim's jobs in turn, and records
// every outcome in the queue and in the job's event log.
//
// Two services are served: Schedd, for command-line tools on a Unix socket
// (callers are identified by their Unix user), and Agent, for the
// negotiator's match notifications over mutual TLS.
package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/metrics"
	"harrier.dev/harrier/wire"
)

// Config is everything an agent needs; cmd/harrier fills it from the pool's
// configuration.
type Config struct {
	// Name identifies the agent in the pool ("agent@host").
	Name   string
	Logger *slog.Logger
	// Queue is the durable job store with its history.
	Queue Queue
	// TLS serves the Agent service; ClientTLS dials the matchmaker and startds.
	TLS, ClientTLS *tls.Config
	// CAPEM is the pool CA's certificate, handed to shadows so that they
	// know the starters of the pool. Shadows get no key of the agent's.
	CAPEM []byte
	// MatchmakerAddr is the collector's address.
	MatchmakerAddr string
	// FlockTo lists further matchmakers, in order, that the agent also
	// advertises its idle jobs to (HTCondor's FLOCK_TO): a job runs in
	// whichever pool matches it first.
	FlockTo []string
	// AdvertiseAddr is this agent's TLS address as others reach it; its host
	// part is also where shadows listen.
	AdvertiseAddr string
	// AdvertiseInterval is how often idle jobs are re-advertised even when
	// nothing changed (the lease is three times as long).
	AdvertiseInterval time.Duration
	// ShadowCommand is the argv that starts a shadow process.
	ShadowCommand []string
	// ClaimWorkLife is how long a claim is reused for further jobs after
	// its first (HTCondor's CLAIM_WORKLIFE); zero means one job per claim.
	ClaimWorkLife time.Duration
	// KeepAliveInterval is how often a held claim is renewed at its startd.
	KeepAliveInterval time.Duration
	// CheckpointDir holds the jobs' checkpoint images and checkpoint
	// files, and the inputs and outputs of spooled jobs, a directory per
	// owner that only the owner may enter, and that the owner's shadow
	// reaches through a descriptor: the directories above it are the
	// agent's alone. Empty keeps none, and refuses spooled submissions.
	CheckpointDir string
	// PeriodicInterval is how often the job policy expressions
	// (PeriodicHold, PeriodicRelease, PeriodicRemove) are evaluated.
	PeriodicInterval time.Duration
	// Limits bound what each local user may ask of the agent.
	Limits Limits
	// AccountingGroups are the pool's accounting groups (HTCondor's
	// GROUP_NAMES): a job of one of them (accounting_group) is charged,
	// and has its fair share, as group.owner; a job naming another is
	// charged to its owner, as a user cannot make up groups to get more
	// of the pool.
	AccountingGroups []string
	// MachineAttrs are machine attributes recorded in every job's ad when
	// it starts (SYSTEM_JOB_MACHINE_ATTRS), beside those its
	// job_machine_attrs names, for MachineAttrsHistory of its runs at
	// least (SYSTEM_JOB_MACHINE_ATTRS_HISTORY_LENGTH).
	MachineAttrs        []string
	MachineAttrsHistory int
	// StopGrace is how long a stopping agent waits for the jobs it runs
	// to stop and their moves to be recorded before it abandons them
	// (their jobs are then requeued on restart). Zero means 10 seconds.
	StopGrace time.Duration
	// Tokens issues the user tokens of the remote API (ServeRemote) and
	// checks them; nil issues none.
	Tokens *Tokens
	// Metrics is where the agent registers its metrics (its queue, runs,
	// shadows, transfers, checkpoints and the calls it serves); nil keeps
	// them unregistered.
	Metrics prometheus.Registerer
}

// Queue is what the agent keeps jobs in: the durable queue and the
// history of jobs that left it.
type Queue interface {
	jobqueue.Store
	jobqueue.HistoryStore
}

// Agent is a running agent.
type Agent struct {
	cfg   Config
	log   *slog.Logger
	queue Queue
	jobs  *jobTable
	wake  chan struct{} // asks the advertiser for an immediate round
	// reschedule is set when a job goes back to Idle, so that the next
	// advertisement asks for a negotiation cycle: its id is not new to the
	// matchmaker, which would otherwise wait for its next periodic cycle.
	reschedule atomic.Bool
	client     *clients
	started    time.Time // DaemonStartTime in the Scheduler ad

	// work tracks the goroutines that outlive the request that started
	// them: those working claims (useClaim) and turning matches down.
	// runCtx is theirs; endRuns abandons what they do (see Serve).
	work    sync.WaitGroup
	runCtx  context.Context
	endRuns context.CancelFunc

	mu   sync.Mutex
	runs map[jobqueue.JobID]*run // jobs being claimed or running
	// stopping is set once the agent stops its runs: no goroutine is
	// added to work, and no run is made, after it.
	stopping bool
	// factories counts clusters with jobs still to be made (max_idle).
	factories atomic.Int64
	// limits are the limits in force: cfg.Limits until a Reconfigure
	// swaps in others. A request loads them once and keeps to them.
	limits atomic.Pointer[Limits]
	// quota counts jobs by owner for limits; submitRate paces each
	// user's submissions.
	quota      quota
	submitRate rateLimiter
	// schedulerProcs are the running scheduler universe jobs' processes,
	// whose submissions submitRate paces apart (see rateKey).
	schedulerProcs pidSet
	// shellSeq numbers the processes started in jobs for their owners.
	shellSeq atomic.Uint64

	metrics *agentMetrics
	rpc     *metrics.RPC
}

// New checks cfg and returns an agent ready to Serve.
func New(cfg Config) (*Agent, error) {
	if cfg.Queue == nil {
		return nil, errors.New("agent: no job queue")
	}
	if cfg.Name == "" {
		return nil, errors.New("agent: no name")
	}
	if len(cfg.ShadowCommand) == 0 {
		return nil, errors.New("agent: no shadow command")
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	reg := cfg.Metrics
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	a := &Agent{
		started: time.Now(),
		cfg:     cfg,
		log:     cfg.Logger,
		queue:   cfg.Queue,
		wake:    make(chan struct{}, 1),
		client:  newClients(cfg.ClientTLS),
		runs:    make(map[jobqueue.JobID]*run),
		metrics: newAgentMetrics(reg),
		rpc:     metrics.NewRPC(reg),
	}
	limits := cfg.Limits
	a.limits.Store(&limits)
	a.submitRate.setRate(cfg.Limits.SubmitRate)
	a.jobs = &jobTable{a: a}
	a.runCtx, a.endRuns = context.WithCancel(context.Background())
	return a, nil
}

// withDefaults fills in the optional fields of c.
func (c Config) withDefaults() (Config, error) {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.AdvertiseInterval <= 0 {
		c.AdvertiseInterval = 10 * time.Second
	}
	if c.KeepAliveInterval <= 0 {
		c.KeepAliveInterval = 20 * time.Second
	}
	if c.PeriodicInterval <= 0 {
		c.PeriodicInterval = 60 * time.Second
	}
	if c.StopGrace <= 0 {
		c.StopGrace = 10 * time.Second
	}
	var err error
	c.Limits, err = c.Limits.withDefaults()
	return c, err
}

// Serve runs the agent: the Agent service on tcp, the Schedd service on
// local (a Unix socket listener), the advertiser and the job-policy loop. It
// returns when ctx is done, once nothing it started still runs: the
// servers are stopped after their handlers return, running shadows are told
// to stop their jobs, and their runs have StopGrace to record the jobs'
// moves before what is left is abandoned. Each move is one commit, so an
// abandoned one is made whole or not at all; the queue may be closed as
// soon as Serve returns.
func (a *Agent) Serve(ctx context.Context, tcp, local net.Listener) error {
	defer a.endRuns()
	if err := a.recover(ctx); err != nil {
		return err
	}
	remote := grpc.NewServer(append(append(a.rpc.ServerOptions(), wire.ServerOptions(a.cfg.TLS)...), grpc.WaitForHandlers(true))...)
	wire.RegisterAgentServer(remote, &agentService{a: a})
	localSrv := a.scheddServer()

	errc := make(chan error, 2)
	go func() { errc <- remote.Serve(tcp) }()
	go func() { errc <- localSrv.Serve(local) }()
	done := make(chan struct{})
	go func() { a.advertiseLoop(ctx); close(done) }()
	policyDone := make(chan struct{})
	go func() { a.policyLoop(ctx); close(policyDone) }()

	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
		err = fmt.Errorf("agent: serve: %w", err)
	}
	localSrv.Stop()
	remote.Stop()
	<-done
	<-policyDone
	a.stopRuns()
	a.client.close()
	return err
}

// goTracked runs fn in a goroutine that Serve waits for, unless the agent
// is stopping; it reports whether fn runs.
func (a *Agent) goTracked(fn func()) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopping {
		return false
	}
	a.work.Go(fn)
	return true
}

// kick asks the advertiser to run now.
func (a *Agent) kick() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}
