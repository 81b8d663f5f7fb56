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
	jobs := make([]Job, len(req.Ads))
	for i, text := range req.Ads {
		j, err := parseJob(text)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "advertise jobs of %s: ad %d: %v", req.Agent, i, err)
		}
		jobs[i] = j
	}
	if e.collector.AdvertiseJobs(req.Agent, req.AgentAddr, jobs, e.lease(req.LeaseSeconds)) {
		e.kick()
	}
	return &wire.AdvertiseReply{}, nil
}

// parseJob parses one job ad and names it "ClusterId.ProcId".
func parseJob(text string) (Job, error) {
	ad, err := classad.Parse(text)
	if err != nil {
		return Job{}, err
	}
	cluster, ok1 := ad.EvalInt("ClusterId")
	proc, ok2 := ad.EvalInt("ProcId")
	if !ok1 || !ok2 {
		return Job{}, fmt.Errorf("job ad without integer ClusterId and ProcId")
	}
	return Job{ID: fmt.Sprintf("%d.%d", cluster, proc), Ad: ad}, nil
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
