package metrics

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
)

// Go's profiles are served only when asked for, beside the metrics.
func TestServeProfilingOnlyWhenAsked(t *testing.T) {
	for _, profiling := range []bool{false, true} {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- Serve(ctx, lis, NewRegistry(), profiling, slog.New(slog.NewTextHandler(io.Discard, nil)))
		}()
		get := func(path string) int {
			resp, err := http.Get("http://" + lis.Addr().String() + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		if code := get("/metrics"); code != http.StatusOK {
			t.Errorf("profiling %v: /metrics answered %d", profiling, code)
		}
		want := http.StatusNotFound
		if profiling {
			want = http.StatusOK
		}
		if code := get("/debug/pprof/heap"); code != want {
			t.Errorf("profiling %v: /debug/pprof/heap answered %d, want %d", profiling, code, want)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
