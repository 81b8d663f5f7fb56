// Package peercred identifies the local users who talk to a daemon over a
// Unix-domain socket, by asking the kernel for the peer's credentials
// (SO_PEERCRED) when the connection is accepted.
//
// The agent serves command-line tools such as "harrier submit" on a Unix
// socket. The kernel records the uid, gid and pid of the process that
// connected, which cannot be forged by the client, so the agent knows which
// user submits or removes a job without passwords or certificates. Use
// Credentials as the gRPC server's transport credentials and FromContext in
// the handlers.
package peercred

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/user"
	"strconv"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// AuthType is the name under which AuthInfo reports itself.
const AuthType = "peercred"

// ErrNotUnix is returned by the server handshake on a connection that is not
// a Unix-domain socket, where there are no peer credentials to read.
var ErrNotUnix = errors.New("peer credentials need a Unix-domain socket")

// Cred is the identity of the process at the other end of a Unix socket, as
// the kernel recorded it when the process connected.
type Cred struct {
	UID, GID uint32
	PID      int32
}

// Username returns the login name of c.UID.
func (c Cred) Username() (string, error) {
	u, err := user.LookupId(strconv.FormatUint(uint64(c.UID), 10))
	if err != nil {
		return "", fmt.Errorf("look up uid %d: %w", c.UID, err)
	}
	return u.Username, nil
}

// AuthInfo is the credentials.AuthInfo of a connection accepted with
// Credentials. On the client side Cred is zero.
type AuthInfo struct {
	credentials.CommonAuthInfo
	Cred Cred
}

// AuthType returns "peercred".
func (AuthInfo) AuthType() string { return AuthType }

// FromContext returns the credentials of the peer of the gRPC call whose
// context is ctx, if its connection was accepted with Credentials.
func FromContext(ctx context.Context) (Cred, bool) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return Cred{}, false
	}
	ai, ok := p.AuthInfo.(AuthInfo)
	if !ok {
		return Cred{}, false
	}
	return ai.Cred, true
}

// Credentials returns gRPC transport credentials for Unix sockets. On the
// server the handshake reads the peer's credentials and fails the
// connection if they cannot be read; on the client it does nothing. The
// socket is local and its traffic never leaves the kernel, so connections
// are reported as having privacy and integrity, which lets per-call
// credentials that demand them be used.
func Credentials() credentials.TransportCredentials { return creds{} }

type creds struct{}

var secure = credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity}

func (creds) ClientHandshake(_ context.Context, _ string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return conn, AuthInfo{CommonAuthInfo: secure}, nil
}

func (creds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	c, err := Read(conn)
	if err != nil {
		return nil, nil, err
	}
	return conn, AuthInfo{CommonAuthInfo: secure, Cred: c}, nil
}

func (creds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: AuthType}
}

func (creds) Clone() credentials.TransportCredentials { return creds{} }

// OverrideServerName is part of the deprecated TransportCredentials
// interface; there is no server name to override.
func (creds) OverrideServerName(string) error { return nil }

// Read returns the credentials of the peer of conn, which must be a Unix
// socket connection.
func Read(conn net.Conn) (Cred, error) {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return Cred{}, fmt.Errorf("read peer credentials of %T: %w", conn, ErrNotUnix)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return Cred{}, fmt.Errorf("read peer credentials: %w", err)
	}
	var (
		ucred *unix.Ucred
		gerr  error
	)
	if err := raw.Control(func(fd uintptr) {
		ucred, gerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return Cred{}, fmt.Errorf("read peer credentials: %w", err)
	}
	if gerr != nil {
		return Cred{}, fmt.Errorf("read peer credentials: SO_PEERCRED: %w", gerr)
	}
	return Cred{UID: ucred.Uid, GID: ucred.Gid, PID: ucred.Pid}, nil
}
