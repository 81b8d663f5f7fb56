package pki

import (
	"crypto/tls"
	"fmt"
	"strings"
)

// A Role is what a pool certificate entitles its holder to do: the part of
// the identity before the "@" ("startd@host2" has the role RoleStartd).
// Only the pool CA issues certificates, so a verified identity's role is
// the pool administrator's word; what each role may call is the wire
// package's access table.
type Role string

// The roles of a pool's daemons, and of its administrator's tools.
const (
	RoleMatchmaker Role = "matchmaker"
	RoleAgent      Role = "agent"
	RoleStartd     Role = "startd"
	// RoleAdmin is the pool administrator's: it may call the daemons'
	// administration services and nothing else.
	RoleAdmin Role = "admin"
)

// Known reports whether r is one of the roles above.
func (r Role) Known() bool {
	switch r {
	case RoleMatchmaker, RoleAgent, RoleStartd, RoleAdmin:
		return true
	}
	return false
}

// RoleOf returns the role of an identity ("startd@host2" → RoleStartd),
// or "" when the identity names no known role.
func RoleOf(identity string) Role {
	prefix, _, ok := strings.Cut(identity, "@")
	if !ok {
		return ""
	}
	if r := Role(prefix); r.Known() {
		return r
	}
	return ""
}

// ExpectRole returns a copy of a client configuration made by ClientConfig
// that also refuses a server whose verified identity does not have one of
// roles: an agent dialling a startd must reach a startd, not any holder of
// a pool certificate. A nil cfg stays nil.
func ExpectRole(cfg *tls.Config, roles ...Role) *tls.Config {
	if cfg == nil {
		return nil
	}
	out := cfg.Clone()
	verify := cfg.VerifyConnection
	out.VerifyConnection = func(cs tls.ConnectionState) error {
		if verify != nil {
			if err := verify(cs); err != nil {
				return err
			}
		}
		if len(cs.PeerCertificates) == 0 {
			return ErrNoPeerCertificate
		}
		id := cs.PeerCertificates[0].Subject.CommonName
		got := RoleOf(id)
		for _, r := range roles {
			if got == r {
				return nil
			}
		}
		return fmt.Errorf("peer %q is not a %s", id, joinRoles(roles))
	}
	return out
}

func joinRoles(roles []Role) string {
	s := make([]string, len(roles))
	for i, r := range roles {
		s[i] = string(r)
	}
	return strings.Join(s, " or ")
}
