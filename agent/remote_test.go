package agent

import (
	"context"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/token"
	"harrier.dev/harrier/wire"
)

// TestAuthenticate: the remote API's check of a call's token, method and
// scope, before any handler runs.
func TestAuthenticate(t *testing.T) {
	dir := t.TempDir()
	q, err := jobqueue.Open(filepath.Join(dir, "queue"), jobqueue.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	a := newTestAgent(t, q)
	key, err := token.NewKey("POOL")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := token.OpenRegistry(filepath.Join(dir, "tokens.json"))
	if err != nil {
		t.Fatal(err)
	}
	a.cfg.Tokens = &Tokens{Key: key, Registry: reg}
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	issue := func(id, subject string, record bool, scopes ...string) string {
		c := token.Claims{ID: id, Subject: subject, Issuer: "agent@test", IssuedAt: now, Expiry: now.Add(time.Hour), Scopes: scopes}
		if record {
			if err := reg.Add(c, 0); err != nil {
				t.Fatal(err)
			}
		}
		s, err := key.Sign(c)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// A user who is not root, so that the token acts: any account will do.
	subject := "nobody"
	if me.Username != "root" {
		subject = me.Username
	}
	all := issue("all", subject, true)
	read := issue("read", subject, true, token.ScopeRead)
	unrecorded := issue("unrecorded", subject, false)
	root := issue("root", "root", true)
	call := func(method string, auth ...string) (context.Context, error) {
		md := metadata.MD{}
		for _, v := range auth {
			md.Append(TokenMetadata, v)
		}
		return a.authenticate(metadata.NewIncomingContext(context.Background(), md), method)
	}
	for _, c := range []struct {
		name   string
		method string
		auth   []string
		code   codes.Code
		says   string
	}{
		{"no token", wire.Schedd_Query_FullMethodName, nil, codes.Unauthenticated, "no token"},
		{"two tokens", wire.Schedd_Query_FullMethodName, []string{"Bearer " + all, "Bearer " + read}, codes.Unauthenticated, "no token"},
		{"not bearer", wire.Schedd_Query_FullMethodName, []string{all}, codes.Unauthenticated, "Bearer"},
		{"unrecorded", wire.Schedd_Query_FullMethodName, []string{"Bearer " + unrecorded}, codes.Unauthenticated, "not one this agent issued"},
		{"root's", wire.Schedd_Query_FullMethodName, []string{"Bearer " + root}, codes.PermissionDenied, "root"},
		{"read submits", wire.Schedd_Submit_FullMethodName, []string{"Bearer " + read}, codes.PermissionDenied, "scopes do not allow"},
		{"shell", wire.Schedd_SshToJob_FullMethodName, []string{"Bearer " + all}, codes.PermissionDenied, "not offered"},
		{"reserve", wire.Schedd_Reserve_FullMethodName, []string{"Bearer " + all}, codes.PermissionDenied, "not offered"},
	} {
		_, err := call(c.method, c.auth...)
		if s, _ := status.FromError(err); s.Code() != c.code || !strings.Contains(s.Message(), c.says) {
			t.Errorf("%s: %v, want %v saying %q", c.name, err, c.code, c.says)
		}
	}
	for _, c := range []struct {
		method string
		tok    string
	}{{wire.Schedd_Query_FullMethodName, read}, {wire.Schedd_History_FullMethodName, read}, {wire.Schedd_Act_FullMethodName, all}} {
		ctx, err := call(c.method, "Bearer "+c.tok)
		if err != nil {
			t.Fatalf("%s: %v", c.method, err)
		}
		who, err := callerFrom(ctx)
		if err != nil || who.name != subject || who.root {
			t.Errorf("%s acts as %+v (%v), want %s", c.method, who, err, subject)
		}
	}
}
