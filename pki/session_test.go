package pki

import (
	"os"
	"testing"
)

// A session server is reached only by a client that pins its fingerprint,
// and takes only clients with a pool certificate.
func TestSessionPinned(t *testing.T) {
	p := newPool(t, "alpha")
	st := p.issue("startd", "startd@host2")
	caPEM, err := os.ReadFile(st.CA)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := NewSession()
	if err != nil {
		t.Fatal(err)
	}
	server, err := sess.ServerConfig(caPEM)
	if err != nil {
		t.Fatal(err)
	}
	pinned, err := PinnedClientConfig(st.Cert, st.Key, sess.Fingerprint())
	if err != nil {
		t.Fatal(err)
	}
	srv, cli := handshake(t, server, pinned)
	if srv.err != nil || cli.err != nil {
		t.Fatalf("pinned client: server %v, client %v", srv.err, cli.err)
	}
	if id, err := Identity(srv.state); err != nil || id != "startd@host2" {
		t.Errorf("server sees %q, %v", id, err)
	}

	other, err := NewSession()
	if err != nil {
		t.Fatal(err)
	}
	wrong, err := PinnedClientConfig(st.Cert, st.Key, other.Fingerprint())
	if err != nil {
		t.Fatal(err)
	}
	if _, cli := handshake(t, server, wrong); cli.err == nil {
		t.Error("a client pinning another fingerprint accepted the server")
	}

	// A client whose certificate another CA signed is refused.
	q := newPool(t, "beta")
	intruder := q.issue("startd", "startd@host9")
	in, err := PinnedClientConfig(intruder.Cert, intruder.Key, sess.Fingerprint())
	if err != nil {
		t.Fatal(err)
	}
	if srv, _ := handshake(t, server, in); srv.err == nil {
		t.Error("the session server accepted a client of another CA")
	}
}

// ExpectRole refuses a server of the pool whose role is not the expected one.
func TestExpectRole(t *testing.T) {
	p := newPool(t, "alpha")
	mm := p.issue("matchmaker", "matchmaker@host1")
	ag := p.issue("agent", "agent@host2")
	s, c := configs(t, mm, ag)
	if _, cli := handshake(t, s, ExpectRole(c, RoleStartd)); cli.err == nil {
		t.Error("a client expecting a startd accepted a matchmaker")
	}
	if srv, cli := handshake(t, s, ExpectRole(c, RoleStartd, RoleMatchmaker)); srv.err != nil || cli.err != nil {
		t.Errorf("a client expecting a matchmaker: server %v, client %v", srv.err, cli.err)
	}
	for id, want := range map[string]Role{"startd@h": RoleStartd, "agent@h": RoleAgent, "matchmaker@h": RoleMatchmaker, "root@h": "", "startd": "", "": ""} {
		if got := RoleOf(id); got != want {
			t.Errorf("RoleOf(%q) = %q, want %q", id, got, want)
		}
	}
}
