package matchmaker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/wire"
)

// collectorEndpoint serves the Collector RPC service over a [Collector],
// kicking the cycle driver when an advertisement may allow a new match.
type collectorEndpoint struct {
	wire.UnimplementedCollectorServer
	collector    *Collector
	kick         func()
	defaultLease time.Duration
}

func (e *collectorEndpoint) lease(seconds int32) time.Duration {
	if seconds <= 0 {
		return e.defaultLease
	}
	return time.Duration(seconds) * time.Second
}

// advertisers says which roles may advertise each type of ad
// (lower-case), as HTCondor's ADVERTISE_STARTD, ADVERTISE_SCHEDD and
// ADVERTISE_MASTER permissions do: a startd cannot pass itself off as a
// submitter, nor an agent as a machine. A host's master, which has no
// certificate of its own, advertises its DaemonMaster ad with the
// certificate of a daemon of its host. A type not named here is refused.
var advertisers = map[string][]pki.Role{
	"machine":      {pki.RoleStartd},
	"scheduler":    {pki.RoleAgent},
	"submitter":    {pki.RoleAgent},
	"daemonmaster": {pki.RoleStartd, pki.RoleAgent},
}

// mayAdvertise checks the caller's role against the ad type and returns
// the caller's identity, which then owns the ad.
func mayAdvertise(ctx context.Context, what, typ string) (string, error) {
	p, ok := wire.PeerOf(ctx)
	if !ok {
		return "", status.Errorf(codes.Unauthenticated, "%s: unknown caller", what)
	}
	if !slices.Contains(advertisers[strings.ToLower(typ)], p.Role) {
		return "", status.Errorf(codes.PermissionDenied, "%s: %s may not advertise %s ads", what, p.Identity, typ)
	}
	return p.Identity, nil
}

// ownerError turns the collector's refusal into a status.
func ownerError(what string, err error) error {
	if errors.Is(err, ErrNotOwner) {
		return status.Errorf(codes.PermissionDenied, "%s: %v", what, err)
	}
	return status.Errorf(codes.Internal, "%s: %v", what, err)
}

func (e *collectorEndpoint) Advertise(ctx context.Context, req *wire.AdvertiseRequest) (*wire.AdvertiseReply, error) {
	if req.Type == "" {
		return nil, status.Error(codes.InvalidArgument, "advertise: no ad type")
	}
	if strings.EqualFold(req.Type, TypeJob) {
		return nil, status.Error(codes.InvalidArgument, "advertise: job ads go through AdvertiseJobs")
	}
	owner, err := mayAdvertise(ctx, "advertise", req.Type)
	if err != nil {
		return nil, err
	}
	ad, err := classad.Parse(req.Ad)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "advertise %s %q: %v", req.Type, req.Name, err)
	}
	name := req.Name
	if name == "" {
		name, _ = ad.EvalString("Name")
	}
	if name == "" {
		return nil, status.Errorf(codes.InvalidArgument, "advertise %s: no name", req.Type)
	}
	changed, err := e.collector.AdvertiseAs(owner, req.Type, name, ad, e.lease(req.LeaseSeconds))
	if err != nil {
		return nil, ownerError(fmt.Sprintf("advertise %s %q", req.Type, name), err)
	}
	if changed {
		e.kick()
	}
	return &wire.AdvertiseReply{}, nil
}

func (e *collectorEndpoint) AdvertiseJobs(ctx context.Context, req *wire.AdvertiseJobsRequest) (*wire.AdvertiseReply, error) {
	if req.Agent == "" {
		return nil, status.Error(codes.InvalidArgument, "advertise jobs: no agent name")
	}
	p, ok := wire.PeerOf(ctx)
	if !ok {
		return nil, status.Error(codes.Unauthenticated, "advertise jobs: unknown caller")
	}
	reqs := make([]Request, len(req.Ads))
	for i, text := range req.Ads {
		r, err := parseRequest(text)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "advertise jobs of %s: ad %d: %v", req.Agent, i, err)
		}
		reqs[i] = r
	}
	fresh, err := e.collector.AdvertiseJobsAs(p.Identity, req.Agent, req.AgentAddr, reqs, e.lease(req.LeaseSeconds))
	if err != nil {
		return nil, ownerError("advertise jobs of "+req.Agent, err)
	}
	if fresh || req.Reschedule {
		e.kick()
	}
	return &wire.AdvertiseReply{}, nil
}

// Attributes of a resource request ad.
const (
	// AttrJobIDs lists the ids ("ClusterId.ProcId") of the jobs a request
	// stands for, best first. The collector takes it out of the stored ad.
	AttrJobIDs = "JobIds"
	// AttrAutoClusterID names the request within its agent.
	AttrAutoClusterID = "AutoClusterId"
)

// parseRequest parses a resource request ad, or a single job ad, which is
// a request for itself named "ClusterId.ProcId".
func parseRequest(text string) (Request, error) {
	ad, err := classad.Parse(text)
	if err != nil {
		return Request{}, err
	}
	if e, ok := ad.Lookup(AttrJobIDs); ok {
		list, ok := ad.EvalExpr(e, nil).ListValue()
		if !ok {
			return Request{}, fmt.Errorf("%s is not a list", AttrJobIDs)
		}
		ids := make([]string, len(list))
		for i, v := range list {
			if ids[i], ok = v.StringValue(); !ok {
				return Request{}, fmt.Errorf("%s holds %s, not a job id", AttrJobIDs, v)
			}
		}
		id := ad.Eval(AttrAutoClusterID)
		if id.IsUndefined() {
			return Request{}, fmt.Errorf("resource request without %s", AttrAutoClusterID)
		}
		ad.Delete(AttrJobIDs)
		return Request{ID: "ac" + id.String(), Ad: ad, JobIDs: ids}, nil
	}
	cluster, ok1 := ad.EvalInt("ClusterId")
	proc, ok2 := ad.EvalInt("ProcId")
	if !ok1 || !ok2 {
		return Request{}, fmt.Errorf("job ad without integer ClusterId and ProcId")
	}
	id := fmt.Sprintf("%d.%d", cluster, proc)
	return Request{ID: id, Ad: ad, JobIDs: []string{id}}, nil
}

func (e *collectorEndpoint) Invalidate(ctx context.Context, req *wire.InvalidateRequest) (*wire.InvalidateReply, error) {
	what := fmt.Sprintf("invalidate %s %q", req.Type, req.Name)
	var owner string
	if strings.EqualFold(req.Type, TypeJob) {
		p, ok := wire.PeerOf(ctx)
		if !ok || p.Role != pki.RoleAgent {
			return nil, status.Errorf(codes.PermissionDenied, "%s: only agents have job ads", what)
		}
		owner = p.Identity
	} else {
		var err error
		if owner, err = mayAdvertise(ctx, what, req.Type); err != nil {
			return nil, err
		}
	}
	if _, err := e.collector.InvalidateAs(owner, req.Type, req.Name); err != nil {
		return nil, ownerError(what, err)
	}
	return &wire.InvalidateReply{}, nil
}

func (e *collectorEndpoint) Query(ctx context.Context, req *wire.QueryRequest) (*wire.QueryReply, error) {
	var constraint classad.Expr
	if strings.TrimSpace(req.Constraint) != "" {
		var err error
		if constraint, err = classad.ParseExpr(req.Constraint); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "query constraint %q: %v", req.Constraint, err)
		}
	}
	ads := e.collector.Query(req.Type, constraint)
	reply := &wire.QueryReply{Ads: make([]string, len(ads))}
	for i, ad := range ads {
		reply.Ads[i] = ad.String()
	}
	return reply, nil
}
