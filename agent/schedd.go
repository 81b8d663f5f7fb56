package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/joblog"
	"harrier.dev/harrier/peercred"
	"harrier.dev/harrier/token"
	"harrier.dev/harrier/wire"
)

// scheddService is the local service for command-line tools.
type scheddService struct {
	wire.UnimplementedScheddServer
	a *Agent
}

// scheddServer is the gRPC server of the local socket: the kernel's peer
// credentials identify the callers, and the limits bound what each asks.
func (a *Agent) scheddServer() *grpc.Server {
	srv := grpc.NewServer(append(a.rpc.ServerOptions(), grpc.Creds(peercred.Credentials()),
		// Fixed while the socket is open: MAX_SUBMISSION_BYTES changes
		// when the agent restarts (see Reconfigure).
		grpc.MaxRecvMsgSize(a.cfg.Limits.recvLimit()),
		// Answers stream a few ads per message; one ad queued before
		// the limits were set may still be large.
		grpc.MaxSendMsgSize(wire.MaxMessage),
		grpc.InTapHandle(a.limitRate),
		grpc.WaitForHandlers(true))...)
	wire.RegisterScheddServer(srv, &scheddService{a: a})
	wire.RegisterTokensServer(srv, &tokensService{a: a})
	return srv
}

// caller identifies the local user making a request.
type caller struct {
	name string
	root bool
}

// callerFrom is the user a call acts as: the remote API's verified token's
// user, or the local socket's peer.
func callerFrom(ctx context.Context) (caller, error) {
	if c, ok := ctx.Value(tokenCallerKey{}).(token.Claims); ok {
		// Tokens are never root's (see authenticate).
		return caller{name: c.Subject}, nil
	}
	cred, ok := peercred.FromContext(ctx)
	if !ok {
		return caller{}, status.Error(codes.Unauthenticated, "caller has no Unix credentials")
	}
	name, err := cred.Username()
	if err != nil {
		return caller{}, status.Errorf(codes.Unauthenticated, "look up uid %d: %v", cred.UID, err)
	}
	return caller{name: name, root: cred.UID == 0}, nil
}

// mayEdit reports whether c may change a job owned by owner: users edit only
// their own jobs; root (the pool administrator) edits any.
func (c caller) mayEdit(owner string) bool { return c.root || c.name == owner }

// maxClustersPerCall is the most clusters one NewCluster reserves: half
// of the open reservations a store keeps for an owner (MaxReservations,
// 64), beyond which a new one ends the oldest.
const maxClustersPerCall = 32

// NewCluster reserves a cluster for the caller, or several: only they may
// submit into each, once. Several are reserved at once, so that the queue
// commits them together.
func (s *scheddService) NewCluster(ctx context.Context, req *wire.NewClusterRequest) (*wire.NewClusterReply, error) {
	who, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	if req.Count < 0 || req.Count > maxClustersPerCall {
		return nil, status.Errorf(codes.InvalidArgument, "%d clusters asked for: from 1 to %d at once", req.Count, maxClustersPerCall)
	}
	if req.Count <= 1 {
		n, err := s.a.queue.NextCluster(ctx, who.name)
		if err != nil {
			return nil, queueError("reserve a cluster", err)
		}
		return &wire.NewClusterReply{Cluster: int32(n)}, nil
	}
	clusters := make([]int32, req.Count)
	errs := make([]error, req.Count)
	var wg sync.WaitGroup
	for i := range clusters {
		wg.Go(func() {
			n, err := s.a.queue.NextCluster(ctx, who.name)
			clusters[i], errs[i] = int32(n), err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		// Those reserved stay open until newer ones end them.
		return nil, queueError(fmt.Sprintf("reserve %d clusters", req.Count), err)
	}
	slices.Sort(clusters)
	return &wire.NewClusterReply{Cluster: clusters[0], Clusters: clusters}, nil
}

// queueError is the status of a change the queue did not take: Unavailable
// while the queue's database is, so that the user knows to try again.
func queueError(what string, err error) error {
	if errors.Is(err, jobqueue.ErrUnavailable) {
		return status.Errorf(codes.Unavailable, "%s: the job queue's database is unavailable: the agent takes no new jobs or changes until it is back (running jobs go on): %v", what, err)
	}
	return status.Errorf(codes.Internal, "%s: %v", what, err)
}

// Submit queues a whole cluster in one durable transaction. The reply is
// the acknowledgement: once it is sent the jobs survive any crash.
func (s *scheddService) Submit(ctx context.Context, req *wire.SubmitRequest) (*wire.SubmitReply, error) {
	who, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	limits := s.a.limits.Load()
	if err := limits.checkSubmission(req, proto.Size(req)); err != nil {
		return nil, err
	}
	reply, err := s.submit(ctx, who, limits, []*wire.SubmitRequest{req}, nil)
	if err != nil {
		return nil, err
	}
	return reply[0], nil
}

// SubmitClusters queues several clusters in one durable transaction, as
// Submit queues one: each must be the caller's by NewCluster, and one
// that is refused refuses them all. The whole request is one submission
// for the limits: its jobs together are bounded by MAX_JOBS_PER_SUBMISSION.
func (s *scheddService) SubmitClusters(ctx context.Context, req *wire.SubmitClustersRequest) (*wire.SubmitClustersReply, error) {
	who, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	limits := s.a.limits.Load()
	if err := limits.checkClusters(req, proto.Size(req)); err != nil {
		return nil, err
	}
	if len(req.Clusters) == 0 {
		return nil, status.Error(codes.InvalidArgument, "no clusters in submission")
	}
	seen := make(map[int32]bool, len(req.Clusters))
	for _, c := range req.Clusters {
		if seen[c.Cluster] {
			return nil, status.Errorf(codes.InvalidArgument, "cluster %d submitted twice", c.Cluster)
		}
		seen[c.Cluster] = true
	}
	replies, err := s.submit(ctx, who, limits, req.Clusters, nil)
	if err != nil {
		return nil, err
	}
	return &wire.SubmitClustersReply{Clusters: replies}, nil
}

// submit queues clusters, checked against the limits, in one durable
// transaction, and writes their jobs' submit events. stage, if not nil,
// says when the jobs' inputs were spooled.
func (s *scheddService) submit(ctx context.Context, who caller, limits *Limits, clusters []*wire.SubmitRequest, stage *stageIn) ([]*wire.SubmitReply, error) {
	now := time.Now().Unix()
	txn := &jobqueue.Txn{}
	var ads []*classad.ClassAd
	var jobs, factories int
	for _, req := range clusters {
		made, factory, err := s.a.addCluster(txn, who, req, now, stage)
		if err != nil {
			return nil, err
		}
		ads = append(ads, made...)
		jobs += len(req.Ads)
		if factory {
			factories++
		}
	}
	if err := s.a.quota.take(limits, who.name, jobs); err != nil {
		return nil, err
	}
	events := make([]joblog.Event, len(ads))
	for i, ad := range ads {
		events[i] = s.a.submitEvent(ad)
	}
	if err := s.a.commit(ctx, txn, events); err != nil {
		s.a.quota.give(who.name, jobs)
		if errors.Is(err, jobqueue.ErrNotReserved) {
			if len(clusters) == 1 {
				return nil, status.Errorf(codes.PermissionDenied, "cluster %d is not yours to submit into: it was not given to you by NewCluster, or has been submitted into already", clusters[0].Cluster)
			}
			return nil, status.Errorf(codes.PermissionDenied, "a cluster of the %d is not yours to submit into: it was not given to you by NewCluster, or has been submitted into already (%v); none was queued", len(clusters), err)
		}
		what := fmt.Sprintf("queue cluster %d", clusters[0].Cluster)
		if len(clusters) > 1 {
			what = fmt.Sprintf("queue clusters %d to %d", clusters[0].Cluster, clusters[len(clusters)-1].Cluster)
		}
		return nil, queueError(what, err)
	}
	s.a.factories.Add(int64(factories))
	s.a.logEvents(ads, events)
	replies := make([]*wire.SubmitReply, len(clusters))
	for i, req := range clusters {
		replies[i] = &wire.SubmitReply{Count: int32(len(req.Ads))}
		s.a.log.Info("submitted", "cluster", req.Cluster, "jobs", len(req.Ads), "owner", who.name)
	}
	s.a.kick()
	return replies, nil
}

// addCluster adds to txn the jobs of one cluster that who submits, and
// returns the ads of those made now, and whether a factory makes the rest.
func (a *Agent) addCluster(txn *jobqueue.Txn, who caller, req *wire.SubmitRequest, now int64, stage *stageIn) ([]*classad.ClassAd, bool, error) {
	if len(req.Ads) == 0 {
		return nil, false, status.Error(codes.InvalidArgument, "no jobs in submission")
	}
	// The commit checks, with the jobs, that NewCluster gave the caller
	// this cluster and that nothing was submitted into it since.
	txn.UseCluster(int(req.Cluster), who.name)
	ads := make([]*classad.ClassAd, 0, len(req.Ads))
	seen := make(map[int]bool, len(req.Ads))
	var common *classad.ClassAd
	if req.ClusterAd != "" {
		var err error
		if common, err = classad.Parse(req.ClusterAd); err != nil {
			return nil, false, status.Errorf(codes.InvalidArgument, "cluster %d: cluster ad: %v", req.Cluster, err)
		}
		// Shared by every job, so that the queue stores them once.
		common.SetString(AttrOwner, who.name)
		common.SetString(AttrUser, who.name+"@"+a.cfg.Name)
		common.SetInt(AttrQDate, now)
		common.SetInt(AttrEnteredCurrentStatus, now)
		stage.mark(common)
	}
	materialized := len(req.Ads)
	factory := false
	if m := factoryPlan(common, len(req.Ads)); m > 0 {
		// The rest are made later, as these leave Idle.
		txn.NewJob(jobqueue.JobID{Cluster: int(req.Cluster), Proc: factoryProc}, factoryAd(common, int(req.Cluster), 0, req.Ads[m:]))
		materialized, factory = m, true
	}
	for i, text := range req.Ads[:materialized] {
		ad, err := classad.Parse(text)
		if err != nil {
			return nil, false, status.Errorf(codes.InvalidArgument, "job %d: %v", i, err)
		}
		if common != nil {
			own := ad
			// Only the agent says who owns a job and when it came.
			for _, name := range []string{AttrOwner, AttrUser, AttrQDate, AttrEnteredCurrentStatus} {
				own.Delete(name)
			}
			unmarkSpooled(own)
			ad = common.Copy()
			ad.Update(own)
		}
		id := jobID(ad)
		if id.Cluster != int(req.Cluster) {
			return nil, false, status.Errorf(codes.InvalidArgument, "job %d: ClusterId %d is not cluster %d", i, id.Cluster, req.Cluster)
		}
		if seen[id.Proc] || id.Proc < 0 {
			return nil, false, status.Errorf(codes.InvalidArgument, "job %d: bad or repeated ProcId %d", i, id.Proc)
		}
		seen[id.Proc] = true
		if common == nil {
			// The agent, not the tool, says who owns a job.
			ad.SetString(AttrOwner, who.name)
			ad.SetString(AttrUser, who.name+"@"+a.cfg.Name)
			ad.SetInt(AttrQDate, now)
			ad.SetInt(AttrEnteredCurrentStatus, now)
			stage.mark(ad)
		}
		ad.SetString(AttrGlobalJobID, fmt.Sprintf("%s#%s#%d", a.cfg.Name, id, now))
		a.chargeJob(ad, who.name)
		if st := statusOf(ad); st != Idle && st != Held {
			ad.SetValue(AttrJobStatus, Idle.value())
		}
		if _, ok := ad.Lookup(AttrNumJobStarts); !ok {
			ad.SetInt(AttrNumJobStarts, 0)
		}
		txn.NewJob(id, ad)
		ads = append(ads, ad)
	}
	return ads, factory, nil
}

// Query streams the selected jobs of the queue, a few per message, so
// that no queue is too large to list.
func (s *scheddService) Query(req *wire.JobQueryRequest, stream wire.Schedd_QueryServer) error {
	if _, err := callerFrom(stream.Context()); err != nil {
		return err
	}
	f, err := newFilter(req)
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	out := adStream{send: stream.Send, limit: int(req.Limit)}
	if req.Global {
		every, ok := s.a.queue.(everyAgent)
		if !ok {
			return status.Error(codes.FailedPrecondition, "this agent keeps its job queue to itself (QUEUE_STORE = embedded): -global lists the agents that share a database (QUEUE_STORE = postgres)")
		}
		err := every.EveryAgent(func(_ string, ad *classad.ClassAd) bool {
			if !f.match(jobID(ad), ad) {
				return true
			}
			return out.add(ad.String())
		})
		if err != nil {
			return queueError("every agent's jobs", err)
		}
		return out.finish()
	}
	if ids := f.named(); ids != nil {
		// Only named jobs: look each up rather than scan a queue that
		// may be large, as a tool polling a few jobs does.
		for _, id := range ids {
			if ad, ok := s.a.queue.Get(id); ok && isJob(id) && f.match(id, ad) && !out.add(ad.String()) {
				break
			}
		}
		return out.finish()
	}
	s.a.queue.Scan(func(id jobqueue.JobID, ad *classad.ClassAd) bool {
		if !isJob(id) || !f.match(id, ad) {
			return true
		}
		return out.add(ad.String())
	})
	return out.finish()
}

// everyAgent is a queue in a database that several agents share
// (pgqueue), which can list all their jobs.
type everyAgent interface {
	EveryAgent(fn func(agent string, ad *classad.ClassAd) bool) error
}

// History streams the selected ads of the history, oldest first, a few
// per message.
func (s *scheddService) History(req *wire.JobQueryRequest, stream wire.Schedd_HistoryServer) error {
	if _, err := callerFrom(stream.Context()); err != nil {
		return err
	}
	f, err := newFilter(req)
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	out := adStream{send: stream.Send, limit: int(req.Limit)}
	err = s.a.queue.History(func(ad *classad.ClassAd) bool {
		if !f.match(jobID(ad), ad) {
			return true
		}
		return out.add(ad.String())
	})
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	return out.finish()
}

// streamBatchBytes is about the most ad text one message of a Query or
// History stream carries; an ad larger than that goes alone.
const streamBatchBytes = 64 << 10

// adStream sends ads in messages of about streamBatchBytes, stopping at a
// limit on the number of ads.
type adStream struct {
	send  func(*wire.JobQueryReply) error
	limit int // 0: none
	batch []string
	bytes int
	sent  int
	err   error
}

// add queues one ad and reports whether more are wanted: not after the
// limit, nor once a send failed (the caller went away).
func (s *adStream) add(text string) bool {
	if len(s.batch) > 0 && s.bytes+len(text) > streamBatchBytes {
		s.flush()
	}
	s.batch = append(s.batch, text)
	s.bytes += len(text)
	s.sent++
	return s.err == nil && (s.limit <= 0 || s.sent < s.limit)
}

func (s *adStream) flush() {
	if s.err == nil && len(s.batch) > 0 {
		s.err = s.send(&wire.JobQueryReply{Ads: s.batch})
	}
	// A sent message must not change (stats handlers may read it
	// later): the next batch is a new slice.
	s.batch, s.bytes = nil, 0
}

// finish sends what is queued and returns the first send error.
func (s *adStream) finish() error {
	s.flush()
	return s.err
}

func (s *scheddService) Act(ctx context.Context, req *wire.ActRequest) (*wire.ActReply, error) {
	who, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	ids, err := s.selectJobs(who, req.Ids, req.Constraint)
	if err != nil {
		return nil, err
	}
	return eachJob(ids, func(id jobqueue.JobID) error { return s.a.act(ctx, who, req.Action, id, req.Reason) }), nil
}

// eachJob does fn to each job and reports how each went.
func eachJob(ids []jobqueue.JobID, fn func(jobqueue.JobID) error) *wire.ActReply {
	reply := &wire.ActReply{}
	for _, id := range ids {
		err := fn(id)
		r := &wire.ActResult{Id: id.String(), Ok: err == nil}
		if err != nil {
			r.Error = err.Error()
		}
		reply.Results = append(reply.Results, r)
	}
	return reply
}

// selectJobs returns the jobs named by ids and those the caller may act on
// for which constraint is true, each once.
func (s *scheddService) selectJobs(who caller, args []string, constraint string) ([]jobqueue.JobID, error) {
	ids, err := s.expand(args)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if strings.TrimSpace(constraint) == "" {
		return ids, nil
	}
	f, err := newFilterFor(nil, constraint)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	named := make(map[jobqueue.JobID]bool, len(ids))
	for _, id := range ids {
		named[id] = true
	}
	// As HTCondor's schedd does, a constraint reaches only the jobs the
	// caller may act on: a user's "-all" is their own jobs.
	s.a.queue.Scan(func(id jobqueue.JobID, ad *classad.ClassAd) bool {
		if owner, _ := ad.EvalString("Owner"); isJob(id) && !named[id] && who.mayEdit(owner) && f.match(id, ad) {
			ids = append(ids, id)
		}
		return true
	})
	return ids, nil
}

// protectedAttrs are the job attributes Edit refuses: those HTCondor's
// schedd keeps from condor_qedit, and those the agent alone sets when a
// job is queued, which say who owns it and when it came, and whether it
// runs from the spool and its outputs were fetched.
var protectedAttrs = map[string]bool{
	"owner": true, "user": true, "clusterid": true, "procid": true, "mytype": true, "targettype": true,
	"jobstatus": true, "qdate": true, "globaljobid": true, "enteredcurrentstatus": true,
	"stageinstart": true, "stageinfinish": true, "stageoutfinish": true,
	// Who the job is charged to is decided when it is queued.
	"acctgroup": true, "acctgroupuser": true, "accountinggroup": true,
}

// isAttrName reports whether s is a plain ClassAd attribute name.
func isAttrName(s string) bool {
	for i, c := range s {
		if c != '_' && !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return s != ""
}

// Edit sets attributes of the selected jobs, as condor_qedit does.
func (s *scheddService) Edit(ctx context.Context, req *wire.EditRequest) (*wire.ActReply, error) {
	who, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	if len(req.Attrs) == 0 {
		return nil, status.Error(codes.InvalidArgument, "no attributes to set")
	}
	exprs := make([]classad.Expr, len(req.Attrs))
	for i, a := range req.Attrs {
		if !isAttrName(a.Name) {
			return nil, status.Errorf(codes.InvalidArgument, "bad attribute name %q", a.Name)
		}
		if protectedAttrs[strings.ToLower(a.Name)] {
			return nil, status.Errorf(codes.PermissionDenied, "attribute %s may not be changed (use harrier hold and release for JobStatus)", a.Name)
		}
		if exprs[i], err = classad.ParseExpr(a.Expr); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "value of %s: %v", a.Name, err)
		}
	}
	ids, err := s.selectJobs(who, req.Ids, req.Constraint)
	if err != nil {
		return nil, err
	}
	limit := s.a.limits.Load().MaxAdBytes
	return eachJob(ids, func(id jobqueue.JobID) error {
		_, err := s.a.jobs.transitionTxn(ctx, id, func(ad *classad.ClassAd, txn *jobqueue.Txn) ([]joblog.Event, error) {
			owner, _ := ad.EvalString("Owner")
			if !who.mayEdit(owner) {
				return nil, fmt.Errorf("permission denied: job %s belongs to %s, not %s", id, owner, who.name)
			}
			edited := ad.Copy()
			for i, a := range req.Attrs {
				edited.Set(a.Name, exprs[i])
				txn.Set(id, a.Name, exprs[i])
			}
			// The limit a submission meets holds for an edited job too.
			if n := len(edited.String()); n > limit {
				return nil, fmt.Errorf("the edited ad would be %d bytes, more than MAX_JOB_AD_BYTES (%d)", n, limit)
			}
			return nil, nil
		})
		if err == nil {
			s.a.log.Info("edited", "job", id, "by", who.name, "attrs", len(req.Attrs))
			s.a.kick()
		}
		return err
	}), nil
}

// expand turns "C" and "C.P" arguments into the job ids they name.
func (s *scheddService) expand(args []string) ([]jobqueue.JobID, error) {
	var ids []jobqueue.JobID
	for _, arg := range args {
		if strings.Contains(arg, ".") {
			id, err := jobqueue.ParseJobID(arg)
			if err != nil {
				return nil, err
			}
			ids = append(ids, id)
			continue
		}
		c, err := strconv.Atoi(arg)
		if err != nil {
			return nil, fmt.Errorf("bad job id %q: want cluster or cluster.proc", arg)
		}
		n := len(ids)
		s.a.queue.Scan(func(id jobqueue.JobID, _ *classad.ClassAd) bool {
			if id.Cluster == c && isJob(id) {
				ids = append(ids, id)
			}
			return true
		})
		if len(ids) == n {
			return nil, fmt.Errorf("cluster %d has no jobs in the queue", c)
		}
	}
	return ids, nil
}

// filter selects jobs by id and constraint.
type filter struct {
	clusters map[int]bool
	jobs     map[jobqueue.JobID]bool
	expr     *classad.Expr
}

func newFilter(req *wire.JobQueryRequest) (*filter, error) {
	return newFilterFor(req.Ids, req.Constraint)
}

func newFilterFor(ids []string, constraint string) (*filter, error) {
	f := &filter{}
	for _, arg := range ids {
		if strings.Contains(arg, ".") {
			id, err := jobqueue.ParseJobID(arg)
			if err != nil {
				return nil, err
			}
			if f.jobs == nil {
				f.jobs = map[jobqueue.JobID]bool{}
			}
			f.jobs[id] = true
			continue
		}
		c, err := strconv.Atoi(arg)
		if err != nil {
			return nil, fmt.Errorf("bad job id %q: want cluster or cluster.proc", arg)
		}
		if f.clusters == nil {
			f.clusters = map[int]bool{}
		}
		f.clusters[c] = true
	}
	if strings.TrimSpace(constraint) != "" {
		e, err := classad.ParseExpr(constraint)
		if err != nil {
			return nil, fmt.Errorf("constraint: %w", err)
		}
		f.expr = &e
	}
	return f, nil
}

// named returns, in ascending order, the jobs f names if it names
// nothing but jobs (no whole clusters), or nil.
func (f *filter) named() []jobqueue.JobID {
	if f.jobs == nil || f.clusters != nil {
		return nil
	}
	ids := slices.Collect(maps.Keys(f.jobs))
	slices.SortFunc(ids, jobqueue.JobID.Compare)
	return ids
}

func (f *filter) match(id jobqueue.JobID, ad *classad.ClassAd) bool {
	if f.jobs != nil || f.clusters != nil {
		if !f.jobs[id] && !f.clusters[id.Cluster] {
			return false
		}
	}
	return f.expr == nil || ad.EvalExpr(*f.expr, nil).IsTrue()
}

// act performs one user action on one job.
func (a *Agent) act(ctx context.Context, who caller, action wire.ActRequest_Action, id jobqueue.JobID, reason string) error {
	ad, ok := a.queue.Get(id)
	if !ok {
		return errNoJob(id)
	}
	owner, _ := ad.EvalString(AttrOwner)
	if !who.mayEdit(owner) {
		return fmt.Errorf("permission denied: job %s belongs to %s, not %s", id, owner, who.name)
	}
	switch action {
	case wire.ActRequest_REMOVE:
		if reason == "" {
			reason = "via harrier rm (by user " + who.name + ")"
		}
		return a.remove(ctx, id, reason)
	case wire.ActRequest_HOLD:
		if reason == "" {
			reason = "via harrier hold (by user " + who.name + ")"
		}
		return a.hold(ctx, id, reason, holdByUser, 0)
	case wire.ActRequest_RELEASE:
		if reason != "" {
			return a.releaseBy(ctx, id, reason)
		}
		return a.release(ctx, id, who.name)
	case wire.ActRequest_VACATE, wire.ActRequest_CHECKPOINT:
		vacate := action == wire.ActRequest_VACATE
		if !a.askCheckpoint(id, vacate) {
			return fmt.Errorf("job %s is not running", id)
		}
		return nil
	case wire.ActRequest_SUSPEND, wire.ActRequest_CONTINUE:
		return a.askSuspend(ctx, id, action == wire.ActRequest_CONTINUE)
	}
	return errors.New("unknown action")
}

func (s *scheddService) QueryPool(ctx context.Context, req *wire.QueryRequest) (*wire.QueryReply, error) {
	if _, err := callerFrom(ctx); err != nil {
		return nil, err
	}
	client, err := s.a.client.collector(s.a.cfg.MatchmakerAddr)
	if err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	cctx, cancel := wire.WithTimeout(ctx)
	defer cancel()
	return client.Query(cctx, req)
}
