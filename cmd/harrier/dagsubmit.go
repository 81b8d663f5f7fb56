package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/agent/submit"
	"harrier.dev/harrier/atomicfile"
	"harrier.dev/harrier/dagman"
	"harrier.dev/harrier/wire"
)

// agentSubmitter submits a DAG's node jobs to the agent over its Unix
// socket, as condor_dagman's direct submission does: the node's submit
// file is read here, with the submit language, and queued as harrier
// submit would queue it, without a process per node. The agent knows the
// caller by the socket, so the jobs are the user's who runs the DAG.
type agentSubmitter struct {
	client wire.ScheddClient
	owner  string
	// dagJob is the DAG's own job's cluster (DAGManJobId), 0 if none.
	dagJob int
	// bin and pool are the harrier binary and the pool directory a
	// SUBDAG EXTERNAL node's own harrier dagman runs with.
	bin, pool string
}

var _ dagman.Submitter = (*agentSubmitter)(nil)

// agentPatience is how long a submission or removal waits for an agent
// that does not answer (a master restarts one that died).
const agentPatience = time.Minute

func (s *agentSubmitter) Submit(ctx context.Context, j dagman.Job) (int, int, error) {
	path := j.File
	if !filepath.IsAbs(path) {
		path = filepath.Join(j.Dir, path)
	}
	if j.SubDAG {
		// A SUBDAG EXTERNAL node's job is its DAG's own job, as harrier
		// submit-dag makes it; its events go to this DAG's nodes log.
		sub, err := s.writeSubDAGJob(path)
		if err != nil {
			return 0, 0, fmt.Errorf("node %s: %w", j.Node, err)
		}
		path = sub
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, fmt.Errorf("node %s: %w", j.Node, err)
	}
	defines, appends := j.SubmitMacros(s.dagJob)
	env := submit.Env{Dir: filepath.Dir(path), Owner: s.owner, Getenv: os.LookupEnv, Environ: os.Environ(),
		Now: time.Now(), Command: submit.Exec(ctx), Defines: defines, Append: appends}
	desc, err := submit.Parse(src, j.File, env)
	if err != nil {
		return 0, 0, err
	}
	// An agent being restarted is waited for, for a while, rather than
	// the node's try failed at once.
	ctx, cancel := context.WithTimeout(ctx, agentPatience)
	defer cancel()
	var nc *wire.NewClusterReply
	err = paced(ctx, func() (err error) {
		nc, err = s.client.NewCluster(ctx, &wire.NewClusterRequest{}, grpc.WaitForReady(true))
		return err
	})
	if err != nil {
		return 0, 0, rpcError("new cluster", err)
	}
	ads, err := desc.Jobs(int(nc.Cluster), env)
	if err != nil {
		return 0, 0, err
	}
	for _, ad := range ads {
		ad.SetInt("TotalSubmitProcs", int64(len(ads)))
	}
	req := submitRequest(nc.Cluster, ads)
	var reply *wire.SubmitReply
	err = paced(ctx, func() (err error) {
		reply, err = s.client.Submit(ctx, req, grpc.WaitForReady(true))
		return err
	})
	if err != nil {
		return 0, 0, submitError(err, req)
	}
	return int(nc.Cluster), int(reply.Count), nil
}

// writeSubDAGJob checks the DAG in path and writes its job's submit
// description beside it, returning where.
func (s *agentSubmitter) writeSubDAGJob(path string) (string, error) {
	if _, err := dagman.ParseFile(path, dagman.ParseOptions{}); err != nil {
		return "", err
	}
	sub := path + ".condor.sub"
	if err := atomicfile.Write(sub, []byte(dagJobDescription(s.bin, s.pool, path, "", nil)), 0o644); err != nil {
		return "", fmt.Errorf("write %s: %w", sub, err)
	}
	return sub, nil
}

// paced calls call until the agent stops refusing it for the user's
// submission rate (MAX_SUBMISSIONS_PER_SECOND) or ctx ends: a DAG waits
// for its turn rather than failing the node.
func paced(ctx context.Context, call func() error) error {
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		err := call()
		if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "MAX_SUBMISSIONS_PER_SECOND") {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

func (s *agentSubmitter) Remove(ctx context.Context, cluster int) error {
	ctx, cancel := context.WithTimeout(ctx, agentPatience)
	defer cancel()
	reply, err := s.client.Act(ctx, &wire.ActRequest{Action: wire.ActRequest_REMOVE, Ids: []string{strconv.Itoa(cluster)},
		Reason: "removed by DAGMan"}, grpc.WaitForReady(true))
	if err != nil {
		return rpcError(fmt.Sprintf("remove cluster %d", cluster), err)
	}
	for _, r := range reply.Results {
		// A job on its way out already is as good as removed.
		if !r.Ok && !strings.Contains(r.Error, "already leaving") {
			return fmt.Errorf("remove job %s: %s", r.Id, r.Error)
		}
	}
	return nil
}
