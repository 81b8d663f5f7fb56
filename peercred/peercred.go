// Package peercred identifies the local users who call a daemon over a Unix
// socket. The kernel reports the peer's uid, gid and pid (SO_PEERCRED) when
// the connection is accepted, so a caller cannot claim to be anyone else and
// needs no secret: the agent's command-line tools rely on this.
package peercred

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"strconv"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// Cred is the identity of a local caller.
type Cred struct {
	UID, GID uint32
	PID      int32
}

// Username looks up the caller's user name.
func (c Cred) Username() (string, error) {
	u, err := user.LookupId(strconv.FormatUint(uint64(c.UID), 10))
	if err != nil {
		return "", fmt.Errorf("look up uid %d: %w", c.UID, err)
	}
	return u.Username, nil
}

// AuthInfo carries a Cred through gRPC.
type AuthInfo struct {
	credentials.CommonAuthInfo
	Cred Cred
}

// AuthType implements credentials.AuthInfo.
func (AuthInfo) AuthType() string { return "peercred" }

// Credentials returns gRPC transport credentials for a server on a Unix
// socket: the handshake records the peer's credentials and refuses
// connections that are not Unix-socket connections.
func Credentials() credentials.TransportCredentials { return transport{} }

type transport struct{}

// ErrNotUnix is returned for a connection that has no peer credentials.
var ErrNotUnix = errors.New("peercred: not a Unix socket connection")

func (transport) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return nil, nil, ErrNotUnix
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return nil, nil, fmt.Errorf("peercred: %w", err)
	}
	var ucred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		ucred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, nil, fmt.Errorf("peercred: %w", err)
	}
	if credErr != nil {
		return nil, nil, fmt.Errorf("peercred: read SO_PEERCRED: %w", credErr)
	}
	info := AuthInfo{
		CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity},
		Cred:           Cred{UID: ucred.Uid, GID: ucred.Gid, PID: ucred.Pid},
	}
	return conn, info, nil
}

// ClientHandshake does nothing: the server learns who the client is from
// the kernel.
func (transport) ClientHandshake(_ context.Context, _ string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return conn, AuthInfo{CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity}}, nil
}

func (transport) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "peercred"}
}

func (t transport) Clone() credentials.TransportCredentials { return t }

func (transport) OverrideServerName(string) error { return nil }

// FromContext returns the credentials of the caller of a gRPC request
// served with Credentials.
func FromContext(ctx context.Context) (Cred, bool) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return Cred{}, false
	}
	info, ok := p.AuthInfo.(AuthInfo)
	if !ok {
		return Cred{}, false
	}
	return info.Cred, true
}

// Listen listens on a Unix socket at path, replacing a stale socket file
// left by a previous process, and sets the socket's permissions to mode.
// Anyone who can connect is identified, so the mode is usually 0666.
func Listen(path string, mode os.FileMode) (net.Listener, error) {
	if st, err := os.Lstat(path); err == nil {
		if st.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("listen on %s: exists and is not a socket", path)
		}
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil, fmt.Errorf("listen on %s: another process is serving it", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, mode); err != nil {
		l.Close()
		return nil, fmt.Errorf("chmod %s: %w", path, err)
	}
	return l, nil
}
