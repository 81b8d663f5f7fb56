package startd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"harrier.dev/harrier/checkpoint"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/metrics"
	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/starter"
	"harrier.dev/harrier/transferplugin"
	"harrier.dev/harrier/wire"
)

// Startd is an execute machine's daemon. Create it with New and run it with
// Serve.
type Startd struct {
	cfg     Config
	log     *slog.Logger
	measure measurer
	// loads measures the CPU load of the running jobs (CondorLoadAvg).
	loads *loadMeter
	// matchTimeout and killGrace are fields so that tests can shorten them.
	matchTimeout     time.Duration
	killGrace        time.Duration
	claimIdleTimeout time.Duration

	// cronCred is who runs the cron jobs; nil: the startd's own user.
	cronCred *syscall.Credential
	// plugins maps a URL scheme to the transfer plugin for it.
	plugins map[string]string

	// changed wakes the advertiser after a change; everyAd is set when
	// the change is to every slot's ad (see notify), each slot's unsent
	// when it is to that slot's.
	changed chan struct{}
	everyAd atomic.Bool
	// runs counts the goroutines waiting for starters.
	runs sync.WaitGroup

	mu    sync.Mutex
	slots []*slot // guarded by mu, as is everything in each slot
	// lastID is the highest slot id given so far; gone are the names of
	// the dynamic slots removed since the last advertisement, whose ads
	// the advertiser withdraws (both guarded by mu).
	lastID int
	gone   []string
	// cores, with AssignCPUAffinity, holds for each of the machine's
	// cores the claimed slot pinned to it, or nil (guarded by mu).
	cores []*slot
	// mu also guards the settings of cfg that Reconfigure changes: the
	// policy texts, PollingInterval, ClaimLease and ScratchLimitKB.
	// adc is what the ads take from the configuration; Serve sets its
	// addr before any ad is built.
	adc adConfig
	// configuredStart is the configuration's START while the machine
	// drains (adc.policy.start is then false).
	configuredStart classad.Expr
	// peaceful is a peaceful stop's progress (see StopPeacefully).
	peaceful peaceful
	// whileDraining is START while an administrator's drain holds the
	// machine (condor_drain -start); zero: false. resumeOnCompletion
	// cancels the drain once no job is left. See Drain.
	whileDraining      classad.Expr
	resumeOnCompletion bool

	metrics *startdMetrics
	rpc     *metrics.RPC
}

// New checks cfg, prepares the execute directory (removing scratch
// directories a crashed startd left behind), drains on if it was draining
// when it stopped (see Drain), and returns a Startd. Errors
// in the policy expressions name the key and the position.
func New(cfg Config) (*Startd, error) {
	cfg, pol, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.ExecuteDir, executeDirMode); err != nil {
		return nil, fmt.Errorf("create execute directory: %w", err)
	}
	if err := os.Chmod(cfg.ExecuteDir, executeDirMode); err != nil {
		return nil, fmt.Errorf("close the execute directory's listing: %w", err)
	}
	if err := removeScratch(cfg.ExecuteDir); err != nil {
		return nil, err
	}
	s := &Startd{
		cfg:              cfg,
		log:              cfg.Logger.With("daemon", "startd", "name", cfg.Name),
		measure:          overrideMeasure(measureHost(cfg.ExecuteDir, newIdleMeter(cfg.Terminals, cfg.ConsoleDevices)), cfg.NumCPUs, cfg.MemoryMiB),
		loads:            newLoadMeter("/proc"),
		matchTimeout:     matchTimeout,
		killGrace:        killGrace,
		claimIdleTimeout: claimIdleTimeout,
		changed:          make(chan struct{}, 1),
		peaceful:         peaceful{done: make(chan struct{})},
		adc: adConfig{host: cfg.Name, policy: pol, version: version(), sandbox: chooseSandbox(cfg.Sandbox, cfg.Logger),
			cron: cronAttrs{jobs: cronNames(cfg.Cron)}},
	}
	if len(cfg.Cron) > 0 {
		if s.cronCred, err = cronCredential(cfg.CronUser, s.log); err != nil {
			return nil, fmt.Errorf("startd configuration: %w", err)
		}
	}
	// Only a machine that runs jobs in containers and holds the pool's
	// checkpoint key restores checkpoints.
	if s.adc.sandbox == "container" && cfg.CheckpointKeyFile != "" {
		s.adc.ckptPlatform = cfg.CheckpointPlatform
		if s.adc.ckptPlatform == "" {
			s.adc.ckptPlatform = checkpoint.Platform()
		}
	}
	s.plugins = queryPlugins(cfg.TransferPlugins, s.log)
	s.adc.pluginMethods = transferplugin.Advertised(s.plugins)
	reg := cfg.Metrics
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	s.metrics, s.rpc = newStartdMetrics(s, reg), metrics.NewRPC(reg)
	if cfg.AssignCPUAffinity {
		s.cores = make([]*slot, runtime.NumCPU())
	}
	s.slots = layOut(cfg, time.Now())
	s.lastID = len(s.slots)
	s.adc.numSlots = len(s.slots)
	s.adc.gpus = shareGPUs(cfg.GPUs, len(s.slots))
	for _, sl := range s.slots {
		sl.gpus = s.adc.gpus.of(sl.id)
	}
	if err := s.recoverDrain(); err != nil {
		return nil, err
	}
	return s, nil
}

// Serve serves the Startd service on lis, enforces the owner policy and
// keeps the machine ads advertised until ctx is done, or after
// StopPeacefully until no job runs. Then it stops serving, vacates the
// jobs still running (kills them at once if ctx was cancelled with cause
// ErrStopFast), stops the starters, withdraws its ads and returns nil. It returns an error
// only if serving failed. Serve must be called once.
func (s *Startd) Serve(ctx context.Context, lis net.Listener) error {
	s.mu.Lock()
	s.adc.addr = s.cfg.AdvertiseAddr
	if s.adc.addr == "" {
		s.adc.addr = lis.Addr().String()
	}
	s.mu.Unlock()

	conn, err := wire.Dial(s.cfg.MatchmakerAddr, pki.ExpectRole(s.cfg.ClientTLS, pki.RoleMatchmaker))
	if err != nil {
		return fmt.Errorf("startd: %w", err)
	}
	defer conn.Close()
	collector := wire.NewCollectorClient(conn)

	// The advertiser also stops when serving fails.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	srv := grpc.NewServer(append(s.rpc.ServerOptions(), wire.ServerOptions(s.cfg.TLS)...)...)
	wire.RegisterStartdServer(srv, &endpoint{s: s})
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(lis) }()

	// The first ads already show what the policy says (Owner, say).
	s.evaluate()
	advDone := make(chan struct{})
	go func() {
		defer close(advDone)
		s.advertiseLoop(ctx, collector)
	}()
	policyDone := make(chan struct{})
	go func() {
		defer close(policyDone)
		s.policyLoop(ctx)
	}()
	var crons sync.WaitGroup
	for _, job := range s.cfg.Cron {
		crons.Go(func() { s.cronLoop(ctx, job) })
	}
	s.log.Info("startd serving", "addr", s.adc.addr, "slots", len(s.slots))

	var failed error
	select {
	case <-ctx.Done():
	case <-s.peaceful.done:
		s.log.Info("stopping peacefully: no job runs")
	case err := <-serveErr:
		if !errors.Is(err, grpc.ErrServerStopped) {
			failed = fmt.Errorf("startd: serve: %w", err)
		}
	}
	fast := errors.Is(context.Cause(ctx), ErrStopFast)
	cancel()
	srv.Stop()
	<-policyDone
	crons.Wait()
	s.killAll(fast)
	s.runs.Wait()
	<-advDone
	// The slots' cgroups and their containers' state on the memory file
	// system go with the startd, as they came with it: otherwise every
	// execute directory a machine ever had (a personal pool's, a
	// benchmark's) would leave its cgroups behind, and the kernel walks
	// every cpuset when a job's is made or removed. First, before the
	// matchmaker is told, which may be out of reach for a while.
	if err := cleanupSandbox(s.cfg.ExecuteDir); err != nil {
		s.log.Warn("clean up the slots' sandboxes", "err", err)
	}
	s.invalidate(context.WithoutCancel(ctx), collector)
	s.log.Info("startd stopped")
	return failed
}

// layOut makes the machine's configured slots: its slot types in order,
// or NumSlots even static slots without any.
func layOut(cfg Config, now time.Time) []*slot {
	types := cfg.SlotTypes
	if len(types) == 0 {
		types = []SlotType{{Count: cfg.NumSlots}}
	}
	var slots []*slot
	for _, t := range types {
		sh, _ := parseShare(t.Share) // checked by withDefaults
		kind := static
		if t.Partitionable {
			kind = partitionable
		}
		for range t.Count {
			sl := newSlot(len(slots)+1, cfg.Name, now)
			sl.share, sl.kind = sh, kind
			slots = append(slots, sl)
		}
	}
	return slots
}

// overrideMeasure returns measure with the administrator's CPU count and
// memory, where set, in place of the measured ones.
func overrideMeasure(measure measurer, cpus int, memoryMiB int64) measurer {
	if cpus <= 0 && memoryMiB <= 0 {
		return measure
	}
	return func() (machine, error) {
		m, err := measure()
		if cpus > 0 {
			m.cpus = cpus
		}
		if memoryMiB > 0 {
			m.memoryMiB = memoryMiB
		}
		return m, err
	}
}

// killAll stops every running starter, vacating its job (fast: killing
// it at once), stops every idle one, and waits until they are gone.
func (s *Startd) killAll(fast bool) {
	var wg sync.WaitGroup
	s.mu.Lock()
	for _, sl := range s.slots {
		r := runOf(sl.phase)
		switch {
		case r != nil && fast:
			r.command(starter.Command{Kill: true})
			wg.Go(func() { r.killAfter(s.killGrace) })
		case r != nil:
			wg.Go(func() { r.kill(s.killGrace) })
		}
		if idle, ok := sl.phase.(claimedIdle); ok && idle.starter != nil {
			wg.Go(idle.starter.stop)
		}
	}
	s.mu.Unlock()
	wg.Wait()
}

// notify has the advertiser send every slot's ad, for a change to what
// they all show (policy, drain, cron results).
func (s *Startd) notify() {
	s.everyAd.Store(true)
	s.wake()
}

// slotChanged has the advertiser send sl's ad, and its partitionable
// slot's, whose resources it shows. It must be called with s.mu held.
func (s *Startd) slotChanged(sl *slot) {
	sl.unsent = true
	if sl.parent != nil {
		sl.parent.unsent = true
	}
	s.wake()
}

// wake wakes the advertiser; a pending wake-up covers any number of
// changes.
func (s *Startd) wake() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// slotByName returns the slot with the given full or short name.
func (s *Startd) slotByName(name string) *slot {
	for _, sl := range s.slots {
		if sl.name == name || sl.short() == name {
			return sl
		}
	}
	return nil
}

// slotByClaim returns the slot holding claim id, with the claim.
func (s *Startd) slotByClaim(id string) (*slot, *claim) {
	for _, sl := range s.slots {
		if c := claimOf(sl.phase); c != nil && c.id == id {
			return sl, c
		}
	}
	return nil, nil
}

// move changes a slot's phase, logs it and wakes the advertiser. Callers
// check that the move is legal first (they need to answer the peer in
// their own terms); a refused move is a bug in this package and is logged
// as one. It must be called with s.mu held.
func (s *Startd) move(sl *slot, next phase) {
	from := sl.phase.status()
	prev := sl.phase
	if err := sl.moveTo(next, time.Now()); err != nil {
		s.log.Error("BUG: slot state machine", "err", err)
		return
	}
	// A starter kept for the claim's next job goes when the slot moves on
	// without giving it one.
	if idle, ok := prev.(claimedIdle); ok && idle.starter != nil {
		if r := runOf(next); r == nil || r.proc != idle.starter {
			go idle.starter.stop()
		}
	}
	s.log.Info("slot changed", "slot", sl.name, "from", from.String(), "to", next.status().String())
	_, free := next.(unclaimed)
	if free {
		s.unpin(sl)
	}
	// A dynamic slot exists for its match and claim only: once Unclaimed
	// it goes, and its partitionable slot has its resources back.
	if free && sl.kind == dynamic {
		s.slots = slices.DeleteFunc(s.slots, func(x *slot) bool { return x == sl })
		s.gone = append(s.gone, sl.name)
		s.log.Info("dynamic slot returned", "slot", sl.name, "to", sl.parent.name, "resources", sl.size.String())
	}
	s.slotChanged(sl)
}

// pin gives sl, if it has none yet, n cores of its own, the lowest free,
// and returns them in the kernel's list format; "" without
// AssignCPUAffinity or with fewer than n cores free. The slot keeps them
// until it is Unclaimed. It must be called with s.mu held.
func (s *Startd) pin(sl *slot, n int64) string {
	if s.cores == nil {
		return ""
	}
	if !slices.Contains(s.cores, sl) {
		var free []int
		for i, holder := range s.cores {
			if holder == nil && int64(len(free)) < n {
				free = append(free, i)
			}
		}
		if int64(len(free)) < n {
			s.log.Warn("not enough free cores to pin the slot's jobs to", "slot", sl.name, "cpus", n, "free", len(free))
			return ""
		}
		for _, i := range free {
			s.cores[i] = sl
		}
	}
	var ids []string
	for i, holder := range s.cores {
		if holder == sl {
			ids = append(ids, strconv.Itoa(i))
		}
	}
	return strings.Join(ids, ",")
}

// unpin frees the cores sl holds. It must be called with s.mu held.
func (s *Startd) unpin(sl *slot) {
	for i, holder := range s.cores {
		if holder == sl {
			s.cores[i] = nil
		}
	}
}

// carve makes a dynamic slot of the size job requests out of the
// partitionable slot p, on machine m, and adds it to the slots, Unclaimed;
// the caller matches it at once. It fails when p has not that much left:
// the negotiator decided on an ad that may be out of date. It must be
// called with s.mu held.
func (s *Startd) carve(p *slot, job *classad.ClassAd, m machine) (*slot, error) {
	need := requestOf(job)
	have, _ := p.view(s.slots).resources(m, s.adc.numSlots)
	if !have.covers(need) {
		return nil, fmt.Errorf("the job requests %s; %s has %s left", need, p.name, have)
	}
	s.lastID++
	d := newDynamic(p, s.lastID, need, time.Now())
	if need.gpus > 0 {
		d.gpus = gpuFree(p.gpus, p.view(s.slots).heldGPUs)[:need.gpus]
	}
	if len(s.adc.gpus.inv.Devices) > 0 {
		d.gpuAttrs = slotGPUAttrs(s.adc.gpus.inv.Devices, d.gpus)
	}
	s.slots = append(s.slots, d)
	s.log.Info("dynamic slot carved", "slot", d.name, "resources", need.String())
	return d, nil
}

// claimSlot is the slot a claim request for slot name under claimID is
// for: the slot itself or, if it is partitionable, the dynamic slot
// carved from it for the match.
func (s *Startd) claimSlot(name, claimID string) *slot {
	sl := s.slotByName(name)
	if sl == nil || sl.kind != partitionable {
		return sl
	}
	for _, d := range s.slots {
		if d.parent == sl && (pendingOf(d.phase) == claimID || matchedBy(d.phase, claimID)) {
			return d
		}
	}
	return sl
}

// matchedBy reports whether p is Matched under claimID.
func matchedBy(p phase, claimID string) bool {
	m, ok := p.(matched)
	return ok && m.claimID == claimID
}
