package metrics

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Every call is timed by method; failed ones are counted by method and
// status code, and the handler's answer passes through untouched.
func TestRPCCountsCallsAndErrors(t *testing.T) {
	reg := prometheus.NewRegistry()
	r := NewRPC(reg)
	info := &grpc.UnaryServerInfo{FullMethod: "/harrier.v1.Test/Call"}
	ok := func(context.Context, any) (any, error) { return "reply", nil }
	refused := func(context.Context, any) (any, error) { return nil, status.Error(codes.PermissionDenied, "no") }
	for range 2 {
		if resp, err := r.unary(context.Background(), nil, info, ok); resp != "reply" || err != nil {
			t.Fatalf("call answered %v, %v", resp, err)
		}
	}
	if _, err := r.unary(context.Background(), nil, info, refused); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("refused call answered %v", err)
	}
	stream := &grpc.StreamServerInfo{FullMethod: "/harrier.v1.Test/Stream"}
	if err := r.stream(nil, nil, stream, func(any, grpc.ServerStream) error { return nil }); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP harrier_rpc_server_errors_total Calls whose handler returned an error, by method and gRPC status code.
# TYPE harrier_rpc_server_errors_total counter
harrier_rpc_server_errors_total{code="PermissionDenied",method="/harrier.v1.Test/Call"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "harrier_rpc_server_errors_total"); err != nil {
		t.Error(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	samples := map[string]uint64{}
	for _, f := range families {
		if f.GetName() != "harrier_rpc_server_duration_seconds" {
			continue
		}
		for _, m := range f.Metric {
			samples[m.Label[0].GetValue()] = m.Histogram.GetSampleCount()
		}
	}
	if samples["/harrier.v1.Test/Call"] != 3 || samples["/harrier.v1.Test/Stream"] != 1 || len(samples) != 2 {
		t.Errorf("calls timed by method: %v, want 3 calls and 1 stream", samples)
	}
}
