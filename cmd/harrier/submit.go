package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"time"

	"harrier.dev/harrier/agent/submit"
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
	desc, err := submit.Parse(src, path)
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
	env := submit.Env{Dir: filepath.Dir(abs), Owner: owner, Getenv: os.LookupEnv, Environ: os.Environ(), Now: time.Now()}
	// Expand once with a placeholder cluster so that a bad file fails
	// before a cluster is allocated.
	if _, err := desc.Jobs(1, env); err != nil {
		return err
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
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	nc, err := client.NewCluster(ctx, &wire.NewClusterRequest{})
	if err != nil {
		return rpcError("new cluster", err)
	}
	ads, err := desc.Jobs(int(nc.Cluster), env)
	if err != nil {
		return err
	}
	req := &wire.SubmitRequest{Cluster: nc.Cluster, Ads: make([]string, len(ads))}
	for i, ad := range ads {
		req.Ads[i] = ad.String()
	}
	reply, err := client.Submit(ctx, req)
	if err != nil {
		return rpcError("submit", err)
	}
	fmt.Fprintf(stdout, "%d job(s) submitted to cluster %d.\n", reply.Count, nc.Cluster)
	return nil
}
