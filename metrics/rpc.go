package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// RPC measures a gRPC server's calls: their latency and their errors, by
// full method name ("/harrier.v1.Collector/Advertise") and, for errors,
// status code.
type RPC struct {
	latency *prometheus.HistogramVec
	errors  *prometheus.CounterVec
}

// NewRPC registers the RPC metrics with reg.
func NewRPC(reg prometheus.Registerer) *RPC {
	r := &RPC{
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "harrier_rpc_server_duration_seconds",
			Help: "Time from a call's arrival to its handler's return, by method; a stream's whole life for streaming methods.",
			// From a loopback call to a long stream.
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 11),
		}, []string{"method"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "harrier_rpc_server_errors_total",
			Help: "Calls whose handler returned an error, by method and gRPC status code.",
		}, []string{"method", "code"}),
	}
	reg.MustRegister(r.latency, r.errors)
	return r
}

// ServerOptions are the interceptors that measure every call a server
// built with them serves; they run before the server's other interceptors,
// so that refused calls count.
func (r *RPC) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(r.unary), grpc.ChainStreamInterceptor(r.stream)}
}

func (r *RPC) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := handler(ctx, req)
	r.observe(info.FullMethod, start, err)
	return resp, err
}

func (r *RPC) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	start := time.Now()
	err := handler(srv, ss)
	r.observe(info.FullMethod, start, err)
	return err
}

func (r *RPC) observe(method string, start time.Time, err error) {
	r.latency.WithLabelValues(method).Observe(time.Since(start).Seconds())
	if err != nil {
		r.errors.WithLabelValues(method, status.Code(err).String()).Inc()
	}
}
