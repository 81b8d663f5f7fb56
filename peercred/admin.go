package peercred

import (
	"context"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// AdministratorOnly is a gRPC unary interceptor for a server accepting
// with Credentials: it refuses every caller but root and the server's own
// user. A socket's mode keeps others out too; this holds even if the mode
// is changed.
func AdministratorOnly(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	cred, ok := FromContext(ctx)
	if !ok {
		return nil, status.Error(codes.Unauthenticated, "no peer credentials")
	}
	if cred.UID != 0 && int(cred.UID) != os.Geteuid() {
		return nil, status.Errorf(codes.PermissionDenied, "%s: uid %d is not the pool administrator", info.FullMethod, cred.UID)
	}
	return handler(ctx, req)
}
