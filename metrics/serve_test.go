package metrics

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Go's profiles are served only when asked for, beside the metrics.
func TestServeProfilingOnlyWhenAsked(t *testing.T) {
	for _, profiling := range []bool{false, true} {
		srv := httptest.NewServer(Handler(NewRegistry(), profiling, slog.New(slog.NewTextHandler(io.Discard, nil))))
		get := func(path string) int {
			resp, err := http.Get(srv.URL + path)
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
		srv.Close()
	}
}
