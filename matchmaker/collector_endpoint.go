package matchmaker

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/classad"
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

func (e *collectorEndpoint) Advertise(ctx context.Context, req *wire.AdvertiseRequest) (*wire.AdvertiseReply, error) {
	if req.Type == "" {
		return nil, status.Error(codes.InvalidArgument, "advertise: no ad type")
	}
	if strings.EqualFold(req.Type, TypeJob) {
		return nil, status.Error(codes.InvalidArgument, "advertise: job ads go through AdvertiseJobs")
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
	if e.collector.Advertise(req.Type, name, ad, e.lease(req.LeaseSeconds)) {
		e.kick()
	}
	return &wire.AdvertiseReply{}, nil
}

func (e *collectorEndpoint) AdvertiseJobs(ctx context.Context, req *wire.AdvertiseJobsRequest) (*wire.AdvertiseReply, error) {
	if req.Agent == "" {
		return nil, status.Error(codes.InvalidArgument, "advertise jobs: no agent name")
	}
	reqs := make([]Request, len(req.Ads))
	for i, text := range req.Ads {
		r, err := parseRequest(text)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "advertise jobs of %s: ad %d: %v", req.Agent, i, err)
		}
		reqs[i] = r
	}
	if e.collector.AdvertiseJobs(req.Agent, req.AgentAddr, reqs, e.lease(req.LeaseSeconds)) || req.Reschedule {
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
	e.collector.Invalidate(req.Type, req.Name)
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
