package agent

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

// submitJobs reserves a cluster and submits n jobs into it, each ad padded
// to about pad bytes.
func submitJobs(c wire.ScheddClient, n, pad int) (int32, error) {
	ctx := context.Background()
	nc, err := c.NewCluster(ctx, &wire.NewClusterRequest{})
	if err != nil {
		return 0, err
	}
	req := &wire.SubmitRequest{Cluster: nc.Cluster}
	for i := range n {
		req.Ads = append(req.Ads, fmt.Sprintf(`[ ClusterId = %d; ProcId = %d; JobStatus = 1; Cmd = "/bin/true"; Iwd = "/tmp"; Requirements = false; Pad = "%s" ]`,
			nc.Cluster, i, strings.Repeat("p", pad)))
	}
	_, err = c.Submit(ctx, req)
	return nc.Cluster, err
}

// streamed returns a reader of a Query or History stream, which returns its
// ads and the size of each message: streamed(t)(client.Query(ctx, req)).
func streamed(t *testing.T) func(grpc.ServerStreamingClient[wire.JobQueryReply], error) ([]string, []int) {
	return func(stream grpc.ServerStreamingClient[wire.JobQueryReply], err error) (ads []string, sizes []int) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		for {
			m, err := stream.Recv()
			if err == io.EOF {
				return ads, sizes
			}
			if err != nil {
				t.Fatal(err)
			}
			ads = append(ads, m.Ads...)
			sizes = append(sizes, proto.Size(m))
		}
	}
}

// TestQueryNamedJobs: a query that names jobs, not clusters, answers
// with those in the queue, in order of id, under its constraint and
// limit, whatever order they were named in.
func TestQueryNamedJobs(t *testing.T) {
	a := startAgent(t, t.TempDir(), Limits{SubmitRate: 1000})
	defer a.stop()
	c, err := submitJobs(a.client, 5, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	query := func(req *wire.JobQueryRequest) string {
		t.Helper()
		ads, _ := streamed(t)(a.client.Query(ctx, req))
		var ids []string
		for _, text := range ads {
			ad, err := classad.Parse(text)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, jobID(ad).String())
		}
		return strings.Join(ids, " ")
	}
	named := []string{fmt.Sprintf("%d.3", c), fmt.Sprintf("%d.1", c), fmt.Sprintf("%d.9", c), "99.0", fmt.Sprintf("%d.4", c)}
	want := fmt.Sprintf("%d.1 %d.3 %d.4", c, c, c)
	if got := query(&wire.JobQueryRequest{Ids: named}); got != want {
		t.Errorf("query of %v: %s, want %s", named, got, want)
	}
	if got, want := query(&wire.JobQueryRequest{Ids: named, Limit: 1}), fmt.Sprintf("%d.1", c); got != want {
		t.Errorf("query of %v, limit 1: %s, want %s", named, got, want)
	}
	if got, want := query(&wire.JobQueryRequest{Ids: named, Constraint: "ProcId > 1"}), fmt.Sprintf("%d.3 %d.4", c, c); got != want {
		t.Errorf("query of %v with ProcId > 1: %s, want %s", named, got, want)
	}
	// A cluster among the ids asks for all its jobs.
	if got, want := query(&wire.JobQueryRequest{Ids: []string{fmt.Sprint(c), "99.0"}}), fmt.Sprintf("%d.0 %d.1 %d.2 %d.3 %d.4", c, c, c, c, c); got != want {
		t.Errorf("query of cluster %d: %s, want %s", c, got, want)
	}
}

// TestQueryAndHistoryStream fills a queue and a history with more ad text
// than the socket takes in one message: Query and History stream them all,
// in messages of about streamBatchBytes, and stop at a limit.
func TestQueryAndHistoryStream(t *testing.T) {
	limits := Limits{MaxSubmissionBytes: 1 << 20, SubmitRate: 1000}
	a := startAgent(t, t.TempDir(), limits)
	defer a.stop()
	const perSubmission, pad = 200, 2000 // 400 KB a submission
	var clusters []int32
	for range 8 {
		c, err := submitJobs(a.client, perSubmission, pad)
		if err != nil {
			t.Fatal(err)
		}
		clusters = append(clusters, c)
	}
	const total = 8 * perSubmission
	check := func(what string, ads []string, sizes []int) {
		t.Helper()
		if len(ads) != total {
			t.Fatalf("%s gave %d ads, want %d", what, len(ads), total)
		}
		bytes := 0
		for _, s := range sizes {
			bytes += s
			if s > streamBatchBytes+pad+1000 {
				t.Errorf("%s: a message of %d bytes", what, s)
			}
		}
		if bytes <= limits.recvLimit() {
			t.Fatalf("%s: %d bytes in all, no more than one message may hold: the test proves nothing", what, bytes)
		}
	}
	ctx := context.Background()
	ads, sizes := streamed(t)(a.client.Query(ctx, &wire.JobQueryRequest{}))
	check("Query", ads, sizes)
	if ads, _ := streamed(t)(a.client.Query(ctx, &wire.JobQueryRequest{Limit: 5})); len(ads) != 5 {
		t.Errorf("Query with limit 5 gave %d ads", len(ads))
	}

	var ids []string
	for _, c := range clusters {
		ids = append(ids, fmt.Sprint(c))
	}
	r, err := a.client.Act(ctx, &wire.ActRequest{Action: wire.ActRequest_REMOVE, Ids: ids})
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range r.Results {
		if !res.Ok {
			t.Fatalf("remove %s: %s", res.Id, res.Error)
		}
	}
	if ads, _ := streamed(t)(a.client.Query(ctx, &wire.JobQueryRequest{})); len(ads) != 0 {
		t.Fatalf("%d jobs left in the queue after removing all", len(ads))
	}
	ads, sizes = streamed(t)(a.client.History(ctx, &wire.JobQueryRequest{}))
	check("History", ads, sizes)
	if ads, _ := streamed(t)(a.client.History(ctx, &wire.JobQueryRequest{Ids: []string{ids[2]}, Limit: 7})); len(ads) != 7 {
		t.Errorf("History of one cluster with limit 7 gave %d ads", len(ads))
	}
}

// refused checks that err refuses a request for the limit named key.
func refused(t *testing.T, what string, err error, key string) {
	t.Helper()
	s, _ := status.FromError(err)
	if err == nil || s.Code() != codes.ResourceExhausted || !strings.Contains(s.Message(), key) {
		t.Errorf("%s: %v, want a refusal naming %s", what, err, key)
	}
}

// queued returns the number of jobs in the queue.
func queued(t *testing.T, c wire.ScheddClient) int {
	t.Helper()
	ads, _ := streamed(t)(c.Query(context.Background(), &wire.JobQueryRequest{}))
	return len(ads)
}

// TestSubmitLimits submits past each job and byte limit: each submission
// is refused by the limit's name and queues nothing; jobs that leave the
// queue make room again, and a restarted agent counts what is queued.
func TestSubmitLimits(t *testing.T) {
	dir := t.TempDir()
	limits := Limits{MaxJobsPerOwner: 50, MaxJobsSubmitted: 60, MaxJobsPerSubmission: 20, MaxAdBytes: 4096, MaxSubmissionBytes: 64 << 10, SubmitRate: 1000}
	a := startAgent(t, dir, limits)
	defer func() { a.stop() }()

	_, err := submitJobs(a.client, 21, 10)
	refused(t, "21 jobs in one submission", err, "MAX_JOBS_PER_SUBMISSION")
	_, err = submitJobs(a.client, 1, 5000)
	refused(t, "an ad of 5000 bytes", err, "MAX_JOB_AD_BYTES")
	_, err = submitJobs(a.client, 20, 3500)
	refused(t, "a submission of 70 KB", err, "MAX_SUBMISSION_BYTES")
	if _, err := submitJobs(a.client, 20, 20<<10); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("a submission of 400 KB, past the socket's message size: %v", err)
	}
	if n := queued(t, a.client); n != 0 {
		t.Fatalf("refused submissions queued %d jobs", n)
	}
	for range 2 {
		if _, err := submitJobs(a.client, 20, 10); err != nil {
			t.Fatal(err)
		}
	}
	_, err = submitJobs(a.client, 20, 10)
	refused(t, "jobs 41 to 60 of one owner", err, "MAX_JOBS_PER_OWNER")
	if n := queued(t, a.client); n != 40 {
		t.Fatalf("%d jobs queued, want 40", n)
	}
	c, err := submitJobs(a.client, 10, 10)
	if err != nil {
		t.Fatalf("jobs 41 to 50: %v", err)
	}

	// Jobs that leave the queue give their room back.
	r, err := a.client.Act(context.Background(), &wire.ActRequest{Action: wire.ActRequest_REMOVE, Ids: []string{fmt.Sprint(c)}})
	if err != nil || len(r.Results) != 10 || !r.Results[0].Ok {
		t.Fatalf("remove cluster %d: %v %v", c, r, err)
	}
	if _, err := submitJobs(a.client, 10, 10); err != nil {
		t.Fatalf("after removing 10 jobs, 10 more: %v", err)
	}
	// A restarted agent counts the queue it finds.
	a.stop()
	a = startAgent(t, dir, limits)
	_, err = submitJobs(a.client, 1, 10)
	refused(t, "job 51 after a restart", err, "MAX_JOBS_PER_OWNER")
	limits.MaxJobsPerOwner = 100
	a.stop()
	a = startAgent(t, dir, limits)
	_, err = submitJobs(a.client, 20, 10)
	refused(t, "jobs 51 to 70 in a queue of 60", err, "MAX_JOBS_SUBMITTED")
}

// TestSubmitRate: a user's submissions past the rate are refused by name
// before they are read.
func TestSubmitRate(t *testing.T) {
	a := startAgent(t, t.TempDir(), Limits{SubmitRate: 1})
	defer a.stop()
	ctx := context.Background()
	start := time.Now()
	ok, no := 0, 0
	for range 30 {
		_, err := a.client.NewCluster(ctx, &wire.NewClusterRequest{})
		if err == nil {
			ok++
			continue
		}
		refused(t, "NewCluster flood", err, "MAX_SUBMISSIONS_PER_SECOND")
		no++
	}
	if ok == 0 {
		t.Error("the first NewCluster of a user was refused")
	}
	// The calls earned at most one token a second after the first: only
	// a machine too slow to make 30 calls in 29 s lets them all through.
	if earned := 1 + int(time.Since(start).Seconds()); ok > earned {
		t.Errorf("%d of 30 NewCluster calls went through at 1 a second, in time for %d", ok, earned)
	}
	// A spooled submission is a submission: its flood is refused too,
	// before the agent reads what it carries.
	limited := 0
	for range 30 {
		stream, err := a.client.SubmitSpooled(ctx)
		if err == nil {
			_, err = stream.CloseAndRecv()
		}
		if status.Code(err) == codes.ResourceExhausted && strings.Contains(err.Error(), "MAX_SUBMISSIONS_PER_SECOND") {
			limited++
		}
	}
	if limited == 0 {
		t.Error("30 SubmitSpooled calls at once were none refused by the submission rate")
	}
}

func TestRateLimiter(t *testing.T) {
	r := rateLimiter{rate: 2}
	at := time.Unix(1000, 0)
	alice, bob := rateKey{uid: 1000, method: "m"}, rateKey{uid: 1001, method: "m"}
	for i, want := range []bool{true, true, false, false} {
		if got := r.allow(alice, at); got != want {
			t.Errorf("call %d at once: %v, want %v", i, got, want)
		}
	}
	if !r.allow(bob, at) || !r.allow(rateKey{uid: 1000, method: "other"}, at) {
		t.Error("one user's flood held up another user, or another method")
	}
	if !r.allow(alice, at.Add(500*time.Millisecond)) || r.allow(alice, at.Add(500*time.Millisecond)) {
		t.Error("half a second at 2 a second did not earn exactly one call")
	}
	// A long pause earns no more than the burst.
	later := at.Add(time.Hour)
	n := 0
	for r.allow(alice, later) {
		n++
	}
	if n != 2 {
		t.Errorf("after an hour's pause %d calls went through at once, want the burst of 2", n)
	}
	// A DAG's harrier dagman, a scheduler universe job's process, has a
	// bucket of its own, schedulerRateFactor times as large.
	dag := rateKey{uid: 1000, method: "m", scheduler: true}
	n = 0
	for r.allow(dag, later) {
		n++
	}
	if n != 2*schedulerRateFactor {
		t.Errorf("a scheduler universe job's process made %d calls at once, want %d", n, 2*schedulerRateFactor)
	}
}

// TestReconfigureLimits: re-read limits hold from the next submission on,
// while submissions run, and leave queued jobs queued; the submission size
// the socket takes waits for a restart, and says so.
func TestReconfigureLimits(t *testing.T) {
	ta := startAgent(t, t.TempDir(), Limits{MaxJobsPerOwner: 50, MaxSubmissionBytes: 64 << 10, SubmitRate: 1000})
	defer ta.stop()
	if _, err := submitJobs(ta.client, 20, 10); err != nil {
		t.Fatal(err)
	}
	// Submissions go on while the limits change under them.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				submitJobs(ta.client, 1, 10)
			}
		}
	})
	cfg := ta.a.cfg
	for i := range 20 {
		cfg.Limits = Limits{MaxJobsPerOwner: 1000 + i, MaxSubmissionBytes: 64 << 10, SubmitRate: 1000}
		if restart, err := ta.a.Reconfigure(cfg); err != nil || len(restart) != 0 {
			t.Fatalf("Reconfigure: %v, %v", restart, err)
		}
	}
	close(stop)
	wg.Wait()
	have := queued(t, ta.client)

	cfg.Limits = Limits{MaxJobsPerOwner: 20, MaxSubmissionBytes: 1 << 20, SubmitRate: 1000}
	restart, err := ta.a.Reconfigure(cfg)
	if err != nil || !slices.Equal(restart, []string{"MAX_SUBMISSION_BYTES"}) {
		t.Errorf("Reconfigure with a larger MAX_SUBMISSION_BYTES: %v, %v; want it named for a restart", restart, err)
	}
	_, err = submitJobs(ta.client, 1, 10)
	refused(t, "a job past the lowered MAX_JOBS_PER_OWNER", err, "MAX_JOBS_PER_OWNER")
	if n := queued(t, ta.client); n != have {
		t.Errorf("%d jobs queued after the limit was lowered, want the %d queued before", n, have)
	}
	_, err = submitJobs(ta.client, 1, 100<<10)
	refused(t, "a submission of 100 KB", err, "MAX_SUBMISSION_BYTES")
	cfg.Limits.MaxJobsPerOwner = -1
	if _, err := ta.a.Reconfigure(cfg); err == nil {
		t.Error("a negative limit was taken")
	}
	cfg.Limits = Limits{MaxJobsPerOwner: 1000, MaxSubmissionBytes: 64 << 10, SubmitRate: 1000}
	if _, err := ta.a.Reconfigure(cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := submitJobs(ta.client, 1, 10); err != nil {
		t.Errorf("a job under the raised limit: %v", err)
	}
}

// TestNewClusterCount: NewCluster reserves several clusters at once, each
// the caller's to submit into once, and no more than maxClustersPerCall.
func TestNewClusterCount(t *testing.T) {
	a := startAgent(t, t.TempDir(), Limits{SubmitRate: 1000})
	defer a.stop()
	ctx := context.Background()
	nc, err := a.client.NewCluster(ctx, &wire.NewClusterRequest{Count: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(nc.Clusters) != 3 || nc.Cluster != nc.Clusters[0] || !slices.IsSorted(nc.Clusters) || nc.Clusters[0] == nc.Clusters[2] {
		t.Fatalf("NewCluster of 3: %+v", nc)
	}
	req := &wire.SubmitClustersRequest{}
	for _, c := range nc.Clusters {
		req.Clusters = append(req.Clusters, &wire.SubmitRequest{Cluster: c, Ads: []string{
			fmt.Sprintf(`[ ClusterId = %d; ProcId = 0; JobStatus = 1; Cmd = "/bin/true"; Iwd = "/tmp"; Requirements = false ]`, c)}})
	}
	reply, err := a.client.SubmitClusters(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(reply.Clusters) != 3 || reply.Clusters[2].Count != 1 {
		t.Errorf("SubmitClusters replied %+v", reply)
	}
	if _, err := a.client.SubmitClusters(ctx, req); status.Code(err) != codes.PermissionDenied {
		t.Errorf("the same clusters again: %v, want PermissionDenied", err)
	}
	if _, err := a.client.NewCluster(ctx, &wire.NewClusterRequest{Count: maxClustersPerCall + 1}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("NewCluster of %d: %v, want InvalidArgument", maxClustersPerCall+1, err)
	}
}
