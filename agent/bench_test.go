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
	"harrier.dev/harrier/peercred"
	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/wire"
)

// benchAgent runs a real agent on a durable queue in dir, serving its
// local API on a Unix socket, and returns a client for it. A benchmark is
// the agent's one user: its limits let it queue whatever it submits.
func benchAgent(tb testing.TB, dir string) wire.ScheddClient {
	tb.Helper()
	a := startAgent(tb, dir, Limits{MaxJobsPerOwner: 1 << 30, MaxJobsSubmitted: 1 << 30, SubmitRate: 1 << 20})
	tb.Cleanup(a.stop)
	return a.client
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
	q, err := jobqueue.Open(filepath.Join(dir, "queue"), jobqueue.Options{})
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
	dir := b.TempDir()
	client := benchAgent(b, dir)
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
	client := benchAgent(b, b.TempDir())
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
