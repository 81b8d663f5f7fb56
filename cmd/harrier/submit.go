package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"harrier.dev/harrier/agent/submit"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

// runSubmit queues the jobs a submit description describes, as
// condor_submit does: parse and check the whole file first, so that a bad
// file queues nothing, then ask the agent for a cluster and queue it in one
// transaction.
func runSubmit(args []string, _ io.Reader, stdout io.Writer) error {
	tf := newToolFlags("submit")
	if err := tf.fs.Parse(args); err != nil {
		return usagef("%v", err)
	}
	if tf.fs.NArg() != 1 {
		return usagef("want one submit file")
	}
	path := tf.fs.Arg(0)
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	owner := "unknown"
	if u, err := user.Current(); err == nil {
		owner = u.Username
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// The description may run commands (include command, queue from cmd |):
	// this tool runs as the user who submits, as condor_submit does.
	env := submit.Env{Dir: filepath.Dir(abs), Owner: owner, Getenv: os.LookupEnv, Environ: os.Environ(),
		Now: time.Now(), Command: submit.Exec(ctx)}
	desc, err := submit.Parse(src, path, env)
	if err != nil {
		return err
	}
	for _, w := range desc.Warnings() {
		fmt.Fprintf(os.Stderr, "harrier submit: %v\n", w)
	}
	pc, err := findPool(*tf.pool)
	if err != nil {
		return err
	}
	client, closeFn, err := agentClient(pc)
	if err != nil {
		return err
	}
	defer closeFn()
	nc, err := client.NewCluster(ctx, &wire.NewClusterRequest{})
	if err != nil {
		return rpcError("new cluster", err)
	}
	// A description that fails only now (a missing executable, a bad
	// queue file) leaves its cluster number unused, as in HTCondor.
	ads, err := desc.Jobs(int(nc.Cluster), env)
	if err != nil {
		return err
	}
	req := submitRequest(nc.Cluster, ads)
	reply, err := client.Submit(ctx, req)
	if err != nil {
		return submitError(err, req)
	}
	fmt.Fprintf(stdout, "%d job(s) submitted to cluster %d.\n", reply.Count, nc.Cluster)
	return nil
}

// submitError explains a refused submission. A request larger than the
// agent's socket takes is refused by gRPC before the agent sees it, in
// gRPC's words: say which limit that is.
func submitError(err error, req *wire.SubmitRequest) error {
	if s, ok := status.FromError(err); ok && s.Code() == codes.ResourceExhausted && strings.Contains(s.Message(), "larger than max") {
		return fmt.Errorf("submit: a submission of %d bytes is more than the agent takes (MAX_SUBMISSION_BYTES): %s", proto.Size(req), s.Message())
	}
	return rpcError("submit", err)
}

// submitRequest builds the agent's request for a cluster: the attributes
// every job shares (the submit language hands them out as one shared
// expression) go once in the cluster ad, and each job carries only its own.
func submitRequest(cluster int32, ads []*classad.ClassAd) *wire.SubmitRequest {
	req := &wire.SubmitRequest{Cluster: cluster, Ads: make([]string, len(ads))}
	if len(ads) < 2 {
		for i, ad := range ads {
			req.Ads[i] = ad.String()
		}
		return req
	}
	common := classad.New()
	for _, name := range ads[0].Names() {
		e, _ := ads[0].Lookup(name)
		shared := true
		for _, ad := range ads[1:] {
			if x, ok := ad.Lookup(name); !ok || x != e {
				shared = false
				break
			}
		}
		if shared {
			common.Set(name, e)
		}
	}
	req.ClusterAd = common.String()
	for i, ad := range ads {
		own := classad.New()
		for _, name := range ad.Names() {
			if _, ok := common.Lookup(name); !ok {
				e, _ := ad.Lookup(name)
				own.Set(name, e)
			}
		}
		req.Ads[i] = own.String()
	}
	return req
}
