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

var _ dagman.BatchSubmitter = (*agentSubmitter)(nil)

// agentPatience is how long a submission or removal waits for an agent
// that does not answer (a master restarts one that died).
const agentPatience = time.Minute

func (s *agentSubmitter) Submit(ctx context.Context, j dagman.Job) (int, int, error) {
	r := s.SubmitBatch(ctx, []dagman.Job{j})[0]
	return r.Cluster, r.Procs, r.Err
}

// batchClusters is the most clusters one NewCluster reserves, and so one
// SubmitClusters carries (the agent's maxClustersPerCall).
const batchClusters = 32

// nodeJob is a node's job on its way to the queue.
type nodeJob struct {
	desc    *submit.Description
	env     submit.Env
	cluster int32
	req     *wire.SubmitRequest
}

// SubmitBatch queues the nodes' jobs a batch of clusters at a time, each
// batch in one SubmitClusters: one durable commit, and one write of their
// submit events to the nodes log, for all of them. A batch the agent
// refuses is submitted again a cluster at a time, so that a node whose
// job is refused fails alone.
func (s *agentSubmitter) SubmitBatch(ctx context.Context, jobs []dagman.Job) []dagman.Submitted {
	res := make([]dagman.Submitted, len(jobs))
	var batch []int
	var ready []*nodeJob
	flush := func() {
		s.submitClusters(ctx, ready, batch, res)
		batch, ready = batch[:0], ready[:0]
	}
	for k, j := range jobs {
		nj, err := s.prepare(ctx, j)
		if err != nil {
			res[k].Err = err
			continue
		}
		batch, ready = append(batch, k), append(ready, nj)
		if len(batch) == batchClusters {
			flush()
		}
	}
	if len(batch) > 0 {
		flush()
	}
	return res
}

// prepare reads a node's submit file (or writes its SUBDAG's) with the
// submit language.
func (s *agentSubmitter) prepare(ctx context.Context, j dagman.Job) (*nodeJob, error) {
	path := j.File
	if !filepath.IsAbs(path) {
		path = filepath.Join(j.Dir, path)
	}
	if j.SubDAG {
		// A SUBDAG EXTERNAL node's job is its DAG's own job, as harrier
		// submit-dag makes it; its events go to this DAG's nodes log.
		sub, err := s.writeSubDAGJob(path)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", j.Node, err)
		}
		path = sub
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", j.Node, err)
	}
	defines, appends := j.SubmitMacros(s.dagJob)
	env := submit.Env{Dir: filepath.Dir(path), Owner: s.owner, Getenv: os.LookupEnv, Environ: os.Environ(),
		Now: time.Now(), Command: submit.Exec(ctx), Defines: defines, Append: appends}
	desc, err := submit.Parse(src, j.File, env)
	if err != nil {
		return nil, err
	}
	return &nodeJob{desc: desc, env: env}, nil
}

// submitClusters reserves a cluster for each of nodes, in one call,
// builds their jobs and queues them in one SubmitClusters, filling res at
// the indexes at.
func (s *agentSubmitter) submitClusters(ctx context.Context, nodes []*nodeJob, at []int, res []dagman.Submitted) {
	// An agent being restarted is waited for, for a while, rather than
	// the nodes' tries failed at once.
	ctx, cancel := context.WithTimeout(ctx, agentPatience)
	defer cancel()
	var nc *wire.NewClusterReply
	err := paced(ctx, func() (err error) {
		nc, err = s.client.NewCluster(ctx, &wire.NewClusterRequest{Count: int32(len(nodes))}, grpc.WaitForReady(true))
		return err
	})
	if err == nil && len(nodes) > 1 && len(nc.Clusters) != len(nodes) {
		err = fmt.Errorf("the agent reserved %d clusters for %d nodes", len(nc.Clusters), len(nodes))
	}
	if err != nil {
		for k := range nodes {
			res[at[k]].Err = rpcError("new cluster", err)
		}
		return
	}
	for k, nj := range nodes {
		nj.cluster = nc.Cluster
		if len(nodes) > 1 {
			nj.cluster = nc.Clusters[k]
		}
	}
	var req wire.SubmitClustersRequest
	var queued []int // of nodes, in req's order
	for k, nj := range nodes {
		ads, err := nj.desc.Jobs(int(nj.cluster), nj.env)
		if err != nil {
			res[at[k]].Err = err
			continue
		}
		for _, ad := range ads {
			ad.SetInt("TotalSubmitProcs", int64(len(ads)))
		}
		nj.req = submitRequest(nj.cluster, ads)
		req.Clusters = append(req.Clusters, nj.req)
		queued = append(queued, k)
	}
	if len(queued) == 0 {
		return
	}
	var reply *wire.SubmitClustersReply
	err = paced(ctx, func() (err error) {
		reply, err = s.client.SubmitClusters(ctx, &req, grpc.WaitForReady(true))
		return err
	})
	if err == nil {
		for n, k := range queued {
			res[at[k]] = dagman.Submitted{Cluster: int(nodes[k].cluster), Procs: int(reply.Clusters[n].Count)}
		}
		return
	}
	if len(queued) == 1 || !refused(err) {
		for _, k := range queued {
			res[at[k]].Err = submitError(err, nodes[k].req)
		}
		return
	}
	// Nothing was queued: each cluster on its own finds which the agent
	// refuses.
	for _, k := range queued {
		nj := nodes[k]
		var one *wire.SubmitReply
		err := paced(ctx, func() (err error) {
			one, err = s.client.Submit(ctx, nj.req, grpc.WaitForReady(true))
			return err
		})
		if err != nil {
			res[at[k]].Err = submitError(err, nj.req)
			continue
		}
		res[at[k]] = dagman.Submitted{Cluster: int(nj.cluster), Procs: int(one.Count)}
	}
}

// refused reports whether the agent refused a submission for what it
// holds, so that it surely queued none of it (not an answer lost on the
// way, after which the submission may have been committed).
func refused(err error) bool {
	switch status.Code(err) {
	case codes.InvalidArgument, codes.PermissionDenied, codes.ResourceExhausted, codes.FailedPrecondition:
		return true
	}
	return false
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
