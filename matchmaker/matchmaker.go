package matchmaker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/matchmaker/gang"
	"harrier.dev/harrier/metrics"
	"harrier.dev/harrier/wire"
)

// Defaults for the zero values of [Config].
const (
	// DefaultInterval is HTCondor's NEGOTIATOR_INTERVAL default.
	DefaultInterval = 20 * time.Second
	// DefaultDebounce gathers a burst of advertisements into one cycle.
	DefaultDebounce = 50 * time.Millisecond
	// DefaultLease applies to ads advertised without a lease, as
	// HTCondor's CLASSAD_LIFETIME.
	DefaultLease = 15 * time.Minute
	// DefaultMaxNotify bounds the match notifications in flight.
	DefaultMaxNotify = 16
)

// Config configures a [Matchmaker]. TLS is required; zero values of the
// other fields select the defaults above.
type Config struct {
	Logger *slog.Logger
	// TLS is the server side of the pool's mutual TLS. It must require and
	// verify client certificates: only pool members may advertise or query.
	TLS *tls.Config
	// ClientTLS is used to tell agents and startds of matches. It is not
	// needed when Notifier is set.
	ClientTLS *tls.Config
	// Interval between periodic negotiation cycles (NEGOTIATOR_INTERVAL).
	Interval time.Duration
	// Debounce is the wait between an advertisement that may allow a new
	// match and the cycle it causes.
	Debounce time.Duration
	// DefaultLease applies to advertisements that name no lease.
	DefaultLease time.Duration
	// Name of the published Negotiator ad; default "negotiator@" + hostname.
	Name string
	// MaxNotify bounds the match notifications in flight.
	MaxNotify int
	// Clock times leases; default the system clock.
	Clock Clock
	// Notifier replaces the gRPC notifier built from ClientTLS.
	Notifier Notifier
	// Priorities orders submitters; nil uses an [Accountant] built from
	// HalfLife and the priority factors.
	Priorities Prioritizer
	// HalfLife is PRIORITY_HALFLIFE; default DefaultHalfLife.
	HalfLife time.Duration
	// DefaultPriorityFactor applies to users without a PriorityFactors
	// entry; default 1.
	DefaultPriorityFactor float64
	// PriorityFactors multiply users' priorities (larger is worse).
	PriorityFactors map[string]float64
	// AccountantFile keeps the accountant's state (priorities, usage,
	// factors set at run time) across restarts; "" keeps it in memory.
	AccountantFile string
	// AccountantStore, if not nil, keeps it instead of AccountantFile
	// (package accountdb: in a PostgreSQL database).
	AccountantStore AccountantStore
	// StatsFile keeps the statistics of the recent negotiation cycles,
	// which the Negotiator ad publishes, across restarts; "" keeps them in
	// memory.
	StatsFile string
	// ReservationFile keeps the advance reservations across restarts;
	// "" keeps them in memory.
	ReservationFile string
	// ReservationPolicyFile is RESERVATION_POLICY_FILE: the
	// administrator's ClassAd policy that decides reservations, read at
	// each request; "" or a missing file grants whatever is free.
	ReservationPolicyFile string
	// PreemptionRequirements is PREEMPTION_REQUIREMENTS: when it holds, a
	// user with better priority may preempt another's job. Empty means
	// never; rank preemption does not depend on it.
	PreemptionRequirements string
	// Limits are the pool's concurrency limits (NAME_LIMIT,
	// CONCURRENCY_LIMIT_DEFAULT, CONCURRENCY_LIMIT_DEFAULT_SET; see
	// LimitsFromConfig); nil: none.
	Limits *Limits
	// LicenseFile holds the license ads offered to gangs (LICENSE_FILE;
	// see ReadLicenseFile); "" for none.
	LicenseFile string
	// LicenseHold is how long after it starts the matchmaker offers no
	// license seat: long enough for every startd to advertise the seats
	// its claims hold (UPDATE_INTERVAL).
	LicenseHold time.Duration
	// GangAlgorithm is the gangmatching algorithm: naive, LR or DYN
	// (GANG_ALGORITHM; default DYN).
	GangAlgorithm string
	// Metrics is where the matchmaker registers its metrics (its
	// negotiation cycles and the calls it serves); nil keeps them
	// unregistered.
	Metrics prometheus.Registerer
}

// ErrNoTLS reports a configuration without a server TLS config that
// requires client certificates.
var ErrNoTLS = errors.New("matchmaker: TLS must require and verify client certificates")

// verifiesClients reports whether cfg demands a client certificate and
// checks it: either by the standard verification or, as the pool's TLS
// does (it identifies peers by certificate, not host name), by requiring
// any certificate and verifying the chain in a callback.
func verifiesClients(cfg *tls.Config) bool {
	if cfg == nil {
		return false
	}
	switch cfg.ClientAuth {
	case tls.RequireAndVerifyClientCert:
		return true
	case tls.RequireAnyClientCert:
		return cfg.VerifyConnection != nil || cfg.VerifyPeerCertificate != nil
	}
	return false
}

// A Matchmaker is the collector and negotiator daemon.
type Matchmaker struct {
	log       *slog.Logger
	tls       *tls.Config
	collector *Collector
	driver    *driver
	lease     time.Duration
	closer    func() // releases the notifier's connections
	rpc       *metrics.RPC

	serving sync.Once
}

// New checks cfg and returns a Matchmaker ready to [Matchmaker.Serve].
func New(cfg Config) (*Matchmaker, error) {
	if !verifiesClients(cfg.TLS) {
		return nil, ErrNoTLS
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("daemon", "matchmaker")
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Debounce <= 0 {
		cfg.Debounce = DefaultDebounce
	}
	if cfg.DefaultLease <= 0 {
		cfg.DefaultLease = DefaultLease
	}
	if cfg.MaxNotify <= 0 {
		cfg.MaxNotify = DefaultMaxNotify
	}
	if cfg.Clock == nil {
		cfg.Clock = systemClock{}
	}
	if cfg.Name == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("matchmaker name: %w", err)
		}
		cfg.Name = "negotiator@" + host
	}
	closer := func() {}
	if cfg.Notifier == nil {
		if cfg.ClientTLS == nil {
			return nil, errors.New("matchmaker: ClientTLS is needed to notify matches")
		}
		n := newGRPCNotifier(cfg.ClientTLS)
		cfg.Notifier, closer = n, n.Close
	}
	var preempt classad.Expr
	if cfg.PreemptionRequirements != "" {
		var err error
		if preempt, err = classad.ParseExpr(cfg.PreemptionRequirements); err != nil {
			return nil, fmt.Errorf("matchmaker: PREEMPTION_REQUIREMENTS: %w", err)
		}
	}
	alg := gang.DYN
	if cfg.GangAlgorithm != "" {
		var err error
		if alg, err = gang.ParseAlgorithm(cfg.GangAlgorithm); err != nil {
			return nil, fmt.Errorf("matchmaker: GANG_ALGORITHM: %w", err)
		}
	}
	var licenses *licensePool
	if cfg.LicenseFile != "" {
		defs, err := ReadLicenseFile(cfg.LicenseFile)
		if err != nil {
			return nil, fmt.Errorf("matchmaker: %w", err)
		}
		licenses = newLicensePool(defs, cfg.Clock.Now().Add(cfg.LicenseHold))
	}
	var accountant *Accountant
	if cfg.Priorities == nil {
		accountant = NewAccountant(cfg.HalfLife, cfg.DefaultPriorityFactor, cfg.PriorityFactors)
		store := cfg.AccountantStore
		if store == nil && cfg.AccountantFile != "" {
			store = accountantFile(cfg.AccountantFile)
		}
		if store != nil {
			if err := accountant.PersistIn(store); err != nil {
				return nil, fmt.Errorf("matchmaker: %w", err)
			}
		}
		cfg.Priorities = accountant
	}
	var cycles []CycleStats
	if cfg.StatsFile != "" {
		var err error
		if cycles, err = loadCycleStats(cfg.StatsFile); err != nil {
			return nil, fmt.Errorf("matchmaker: %w", err)
		}
	}
	if cfg.Metrics == nil {
		cfg.Metrics = prometheus.NewRegistry()
	}
	c := NewCollector(cfg.Clock)
	rsv, err := newReservations(log, cfg.ReservationFile, cfg.ReservationPolicyFile, c, cfg.Notifier, cfg.Clock)
	if err != nil {
		return nil, fmt.Errorf("matchmaker: %w", err)
	}
	m := &Matchmaker{
		log:       log,
		tls:       cfg.TLS,
		collector: c,
		lease:     cfg.DefaultLease,
		closer:    closer,
		rpc:       metrics.NewRPC(cfg.Metrics),
		driver: &driver{
			log:          log,
			collector:    c,
			negotiator:   Negotiator{Priorities: cfg.Priorities, PreemptionRequirements: preempt, GangAlgorithm: alg, Limits: cfg.Limits},
			accountant:   accountant,
			licenses:     licenses,
			notifier:     cfg.Notifier,
			clock:        cfg.Clock,
			name:         cfg.Name,
			started:      cfg.Clock.Now(),
			interval:     cfg.Interval,
			debounce:     cfg.Debounce,
			kick:         make(chan struct{}, 1),
			sem:          make(chan struct{}, cfg.MaxNotify),
			retime:       make(chan struct{}, 1),
			cycles:       cycles,
			statsFile:    cfg.StatsFile,
			reservations: rsv,
			metrics:      newCycleMetrics(cfg.Metrics),
		},
	}
	rsv.kick = m.driver.Kick
	return m, nil
}

// Reconfigure applies a re-read configuration to the running matchmaker
// without losing its ads, matches or priorities: the interval between
// periodic cycles (NEGOTIATOR_INTERVAL), PREEMPTION_REQUIREMENTS and the
// concurrency limits take effect from the next cycle. The rest of cfg is ignored; it takes effect
// when the matchmaker restarts. A PREEMPTION_REQUIREMENTS that does not
// parse is refused and nothing changes.
func (m *Matchmaker) Reconfigure(cfg Config) error {
	interval := cfg.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	var preempt classad.Expr
	if cfg.PreemptionRequirements != "" {
		var err error
		if preempt, err = classad.ParseExpr(cfg.PreemptionRequirements); err != nil {
			return fmt.Errorf("matchmaker: PREEMPTION_REQUIREMENTS: %w", err)
		}
	}
	m.driver.reconfigure(interval, preempt, cfg.Limits)
	m.log.Info("reconfigured", "interval", interval, "preemption_requirements", cfg.PreemptionRequirements)
	return nil
}

// ErrServed is returned by a second call to [Matchmaker.Serve].
var ErrServed = errors.New("matchmaker: already served")

// Serve serves the Collector service on lis and runs negotiation cycles
// until ctx is done; then it stops accepting calls, lets the calls and
// match notifications in flight finish, and returns nil. It returns early
// with an error if serving fails. Serve closes lis and may be called once.
func (m *Matchmaker) Serve(ctx context.Context, lis net.Listener) error {
	first := false
	m.serving.Do(func() { first = true })
	if !first {
		lis.Close()
		return ErrServed
	}
	defer m.closer()

	srv := grpc.NewServer(append(m.rpc.ServerOptions(), wire.ServerOptions(m.tls)...)...)
	wire.RegisterCollectorServer(srv, &collectorEndpoint{collector: m.collector, kick: m.driver.Kick, defaultLease: m.lease})
	wire.RegisterMatchmakerAdminServer(srv, &adminEndpoint{accountant: m.driver.accountant, kick: m.driver.Kick})
	wire.RegisterReservationsServer(srv, &reservationsEndpoint{r: m.driver.reservations})

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	driven := make(chan struct{})
	go func() { m.driver.run(ctx); close(driven) }()
	watched := make(chan struct{})
	go func() { m.driver.reservations.watch(ctx); close(watched) }()
	m.log.Info("serving", "addr", lis.Addr().String())

	var err error
	select {
	case <-ctx.Done():
		srv.GracefulStop()
		<-served
	case err = <-served:
		err = fmt.Errorf("matchmaker: serve %s: %w", lis.Addr(), err)
		srv.Stop()
		cancel()
	}
	<-driven
	<-watched
	m.log.Info("stopped")
	return err
}
