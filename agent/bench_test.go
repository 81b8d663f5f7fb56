package agent

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/agent/pgqueue"
	"harrier.dev/harrier/internal/pgtest"
	"harrier.dev/harrier/peercred"
	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/wire"
)

// benchLimits let a benchmark, the agent's one user, queue whatever it
// submits.
var benchLimits = Limits{MaxJobsPerOwner: 1 << 30, MaxJobsSubmitted: 1 << 30, SubmitRate: 1 << 20}

// benchAgent runs a real agent on the durable queue q, serving its local
// API on a Unix socket in dir, and returns a client for it.
func benchAgent(tb testing.TB, dir string, q Queue) wire.ScheddClient {
	tb.Helper()
	a := startAgentOn(tb, dir, benchLimits, q)
	tb.Cleanup(a.stop)
	return a.client
}

// benchStore is a durable queue the agent's benchmarks run on.
type benchStore struct {
	name string
	// queue makes a new empty queue and returns what opens it, again
	// after it was closed.
	queue func(tb testing.TB) (open func() Queue)
}

// benchStores are the embedded log, in a temporary directory, and a
// PostgreSQL database of a server the benchmark starts (fsync on).
func benchStores(b *testing.B) []benchStore {
	srv := pgtest.Start(b, pgtest.Options{Durable: true})
	return []benchStore{
		{"embedded", func(tb testing.TB) func() Queue {
			dir := filepath.Join(tb.TempDir(), "queue")
			return func() Queue {
				q, err := jobqueue.Open(dir, jobqueue.Options{})
				if err != nil {
					tb.Fatal(err)
				}
				return q
			}
		}},
		{"postgres", func(tb testing.TB) func() Queue {
			dsn := srv.DSN(srv.NewDatabase(tb))
			return func() Queue {
				q, err := pgqueue.Open(context.Background(), dsn, pgqueue.Options{Agent: "agent@bench"})
				if err != nil {
					tb.Fatal(err)
				}
				return q
			}
		}},
	}
}

// testAgent is a real agent serving its local API on a Unix socket.
type testAgent struct {
	a      *Agent
	client wire.ScheddClient
	sock   string
	stop   func() // stops the agent and closes its queue; idempotent
}

// startAgent runs a real agent with limits on a durable queue in dir
// (which may hold the queue of an earlier agent), serving its local API
// on dir/agent.sock.
func startAgent(tb testing.TB, dir string, limits Limits) *testAgent {
	tb.Helper()
	q, err := jobqueue.Open(filepath.Join(dir, "queue"), jobqueue.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return startAgentOn(tb, dir, limits, q)
}

// startAgentOn is startAgent on the queue q, which it closes when it stops.
func startAgentOn(tb testing.TB, dir string, limits Limits, q Queue) *testAgent {
	tb.Helper()
	pkiDir, err := os.MkdirTemp(dir, "pki")
	if err != nil {
		tb.Fatal(err)
	}
	ca, err := pki.CreateCA(pkiDir, "bench")
	if err != nil {
		tb.Fatal(err)
	}
	cert, key := filepath.Join(pkiDir, "agent.pem"), filepath.Join(pkiDir, "agent.key")
	if err := ca.Issue("agent@bench", []string{"127.0.0.1"}, cert, key); err != nil {
		tb.Fatal(err)
	}
	caPath := filepath.Join(pkiDir, "ca.pem")
	serverTLS, err := pki.ServerConfig(cert, key, caPath)
	if err != nil {
		tb.Fatal(err)
	}
	clientTLS, err := pki.ClientConfig(cert, key, caPath)
	if err != nil {
		tb.Fatal(err)
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	sock := filepath.Join(dir, "agent.sock")
	local, err := peercred.Listen(sock, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	a, err := New(Config{
		Name: "agent@bench", Logger: slog.New(slog.DiscardHandler), Queue: q,
		TLS: serverTLS, ClientTLS: clientTLS,
		MatchmakerAddr: "127.0.0.1:1", AdvertiseAddr: tcp.Addr().String(),
		AdvertiseInterval: time.Hour, ShadowCommand: []string{"/bin/false"},
		Limits: limits,
	})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Serve(ctx, tcp, local); close(done) }()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(wire.MaxMessage), grpc.MaxCallSendMsgSize(wire.MaxMessage)))
	if err != nil {
		tb.Fatal(err)
	}
	var once sync.Once
	return &testAgent{a: a, client: wire.NewScheddClient(conn), sock: sock, stop: func() {
		once.Do(func() {
			conn.Close()
			cancel()
			<-done
			q.Close()
		})
	}}
}

// submitIdle queues n jobs that match no machine and returns the cluster.
func submitIdle(tb testing.TB, c wire.ScheddClient, n int) int32 {
	tb.Helper()
	ctx := context.Background()
	nc, err := c.NewCluster(ctx, &wire.NewClusterRequest{})
	if err != nil {
		tb.Fatal(err)
	}
	req := &wire.SubmitRequest{Cluster: nc.Cluster}
	for i := 0; i < n; i++ {
		req.Ads = append(req.Ads, fmt.Sprintf(`[ ClusterId = %d; ProcId = %d; JobStatus = 1; Cmd = "/bin/true"; Iwd = "/tmp"; Requirements = false; RequestCpus = 1; RequestMemory = 128; JobUniverse = 5 ]`, nc.Cluster, i))
	}
	if _, err := c.Submit(ctx, req); err != nil {
		tb.Fatal(err)
	}
	return nc.Cluster
}

// BenchmarkQueueEdits holds and releases jobs, one Act call per job and
// action, from 64 concurrent clients, with a durable (fsync) queue: the
// figure is queue edits per second through the agent's API.
func BenchmarkQueueEdits(b *testing.B) {
	for _, st := range benchStores(b) {
		b.Run(st.name, func(b *testing.B) { benchQueueEdits(b, benchAgent(b, b.TempDir(), st.queue(b)())) })
	}
}

func benchQueueEdits(b *testing.B, client wire.ScheddClient) {
	const jobs = 10000
	cluster := submitIdle(b, client, jobs)
	const workers = 64
	b.ResetTimer()
	start := time.Now()
	edits := 0
	for b.Loop() {
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := w; i < jobs; i += workers {
					id := fmt.Sprintf("%d.%d", cluster, i)
					for _, act := range []wire.ActRequest_Action{wire.ActRequest_HOLD, wire.ActRequest_RELEASE} {
						r, err := client.Act(context.Background(), &wire.ActRequest{Action: act, Ids: []string{id}})
						if err != nil || !r.Results[0].Ok {
							b.Errorf("%v %s: %v %v", act, id, err, r)
							return
						}
					}
				}
			}(w)
		}
		wg.Wait()
		edits += 2 * jobs
	}
	b.ReportMetric(float64(edits)/time.Since(start).Seconds(), "edits/s")
}

// BenchmarkSubmit100k submits one cluster of 100,000 jobs through the
// agent's API into a durable queue, in the form harrier submit sends: one
// cluster ad with what the jobs share (a realistic 30 attributes) and a
// few attributes of each job's own.
func BenchmarkSubmit100k(b *testing.B) {
	for _, st := range benchStores(b) {
		b.Run(st.name, func(b *testing.B) { benchSubmit100k(b, benchAgent(b, b.TempDir(), st.queue(b)())) })
	}
}

func benchSubmit100k(b *testing.B, client wire.ScheddClient) {
	ctx := context.Background()
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		nc, err := client.NewCluster(ctx, &wire.NewClusterRequest{})
		if err != nil {
			b.Fatal(err)
		}
		req := &wire.SubmitRequest{Cluster: nc.Cluster, ClusterAd: fmt.Sprintf(`[ ClusterId = %d; JobStatus = 1; Cmd = "/bin/true"; Iwd = "/tmp/bsj"; JobUniverse = 5; In = "/dev/null"; UserLog = undefined; RequestCpus = 1; RequestMemory = 64; RequestDisk = 40; Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && Memory > 1000000000; Rank = 0.0; JobPrio = 0; PeriodicHold = false; PeriodicRelease = false; PeriodicRemove = false; OnExitHold = false; OnExitRemove = true; MaxRetries = undefined; KillSig = "SIGTERM"; NumJobStarts = 0; Environment = ""; TransferExecutable = true; WhenToTransferOutput = "ON_EXIT"; ShouldTransferFiles = "IF_NEEDED"; DiskUsage = 40; ImageSize = 40; JobNotification = 0; LeaveJobInQueue = false; NiceUser = false ]`, nc.Cluster)}
		for i := 0; i < 100000; i++ {
			req.Ads = append(req.Ads, fmt.Sprintf(`[ ProcId = %d; Arguments = "%d"; Out = "/tmp/bsj/out.%d"; Err = "/tmp/bsj/err.%d" ]`, i, i, i, i))
		}
		b.StartTimer()
		if _, err := client.Submit(ctx, req); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
	}
}

// BenchmarkRestart1M starts an agent on a queue of 1,000,000 idle jobs,
// as after a restart: the time from opening the store until the agent
// answers a query, which covers the store's recovery (the log's replay,
// or reading the database) and the agent's pass over the queue.
func BenchmarkRestart1M(b *testing.B) {
	for _, st := range benchStores(b) {
		b.Run(st.name, func(b *testing.B) {
			open := st.queue(b)
			dir := b.TempDir()
			a := startAgentOn(b, dir, benchLimits, open())
			for range 10 {
				submitIdle(b, a.client, 100000)
			}
			a.stop()
			for b.Loop() {
				a := startAgentOn(b, dir, benchLimits, open())
				stream, err := a.client.Query(context.Background(), &wire.JobQueryRequest{Limit: 1})
				if err == nil {
					_, err = stream.Recv()
				}
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				a.stop()
				b.StartTimer()
			}
		})
	}
}
