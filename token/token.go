// Package token makes and checks the pool's user tokens, after HTCondor's
// IDTOKENS: a signed statement by the pool that its bearer may act as one
// user, for a time, in some scopes. A token is a JSON Web Token (RFC 7519)
// signed with Ed25519 ("EdDSA", RFC 8037) by a signing key that only the
// agent's host's root can read; its header names the key ("kid") and its
// claims are
//
//	sub    the user the token acts as
//	iss    the agent that issued it ("agent@host")
//	iat    when it was issued (seconds since the epoch)
//	exp    when it stops being accepted
//	jti    its id, by which it is listed and revoked
//	scope  the operations it allows, space separated ("read write");
//	       a token without one allows all its user's operations
//
// Signing and checking are github.com/golang-jwt/jwt/v5's; this package
// fixes the algorithm, the claims every token must carry and what each
// failure is called. Whether a token was revoked is the Registry's to say.
package token

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"harrier.dev/harrier/atomicfile"
)

// The scopes a token may carry. Write allows what read does, as HTCondor's
// WRITE authorization implies READ.
const (
	// ScopeRead allows looking at the user's jobs: query, history, wait.
	ScopeRead = "read"
	// ScopeWrite allows changing them: submit, hold, release, remove, edit.
	ScopeWrite = "write"
)

// Errors a token is refused with; Verify wraps them with detail.
var (
	ErrMalformed = errors.New("the token is malformed")
	ErrSignature = errors.New("the token's signature is not the pool's")
	ErrExpired   = errors.New("the token has expired")
	ErrIssuer    = errors.New("the token was issued by another agent")
	ErrRevoked   = errors.New("the token was revoked")
	ErrScope     = errors.New("the token's scopes do not allow this")
)

// Claims is what a token says.
type Claims struct {
	ID       string
	Subject  string
	Issuer   string
	IssuedAt time.Time
	Expiry   time.Time
	// Scopes are the token's scopes; none means every operation of its
	// subject's.
	Scopes []string
}

// Allows reports whether the claims' scopes allow an operation needing
// scope.
func (c Claims) Allows(scope string) bool {
	if len(c.Scopes) == 0 {
		return true
	}
	for _, s := range c.Scopes {
		if s == scope || (s == ScopeWrite && scope == ScopeRead) {
			return true
		}
	}
	return false
}

// CheckScopes refuses scopes other than those this package knows, so that a
// typing mistake is not taken for a token that allows nothing.
func CheckScopes(scopes []string) error {
	for _, s := range scopes {
		if s != ScopeRead && s != ScopeWrite {
			return fmt.Errorf("unknown scope %q: want %s or %s", s, ScopeRead, ScopeWrite)
		}
	}
	return nil
}

// NewID returns a new random token id.
func NewID() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("token id: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// Key is a signing key of the pool's.
type Key struct {
	// Name is the key's name, given in the tokens it signs ("kid").
	Name    string
	private ed25519.PrivateKey
}

// LoadOrCreateKey reads the signing key in path, making one (mode 0600)
// if there is none.
func LoadOrCreateKey(path, name string) (*Key, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("make token signing key: %w", err)
		}
		der, err := x509.MarshalPKCS8PrivateKey(priv)
		if err != nil {
			return nil, fmt.Errorf("make token signing key: %w", err)
		}
		err = atomicfile.Create(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
		if err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("write token signing key: %w", err)
		}
		// Another process may have made it first: read what is there.
		data, err = os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read token signing key: %w", err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("read token signing key: %w", err)
	}
	b, _ := pem.Decode(data)
	if b == nil || b.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("token signing key %s: no PEM private key", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("token signing key %s: %w", path, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("token signing key %s: not an Ed25519 key", path)
	}
	return &Key{Name: name, private: priv}, nil
}

// NewKey returns a key made in memory, for tests.
func NewKey(name string) (*Key, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	return &Key{Name: name, private: priv}, nil
}

// claims is the JSON form of Claims.
type claims struct {
	jwt.RegisteredClaims
	Scope string `json:"scope,omitempty"`
}

// Sign returns c as a token signed by k.
func (k *Key) Sign(c Claims) (string, error) {
	if c.ID == "" || c.Subject == "" || c.Issuer == "" || c.Expiry.IsZero() {
		return "", errors.New("sign token: id, subject, issuer and expiry are required")
	}
	t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims{
		RegisteredClaims: jwt.RegisteredClaims{
			ID:        c.ID,
			Subject:   c.Subject,
			Issuer:    c.Issuer,
			IssuedAt:  jwt.NewNumericDate(c.IssuedAt),
			ExpiresAt: jwt.NewNumericDate(c.Expiry),
		},
		Scope: strings.Join(c.Scopes, " "),
	})
	t.Header["kid"] = k.Name
	s, err := t.SignedString(k.private)
	if err != nil {
		return "", fmt.Errorf("sign token: %w", err)
	}
	return s, nil
}

// Verify checks that text is a token signed by k for issuer, unexpired at
// now, and returns its claims. A refusal wraps one of the package's errors.
func (k *Key) Verify(text, issuer string, now time.Time) (Claims, error) {
	var cl claims
	_, err := jwt.ParseWithClaims(strings.TrimSpace(text), &cl, func(t *jwt.Token) (any, error) {
		if kid, _ := t.Header["kid"].(string); kid != k.Name {
			return nil, fmt.Errorf("%w: signed with key %q, not %q", ErrSignature, kid, k.Name)
		}
		return k.private.Public(), nil
	},
		jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}),
		jwt.WithTimeFunc(func() time.Time { return now }),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithIssuer(issuer),
	)
	switch {
	case err == nil:
	case errors.Is(err, ErrSignature):
		return Claims{}, err
	case errors.Is(err, jwt.ErrTokenExpired):
		return Claims{}, fmt.Errorf("%w (at %s)", ErrExpired, expiry(cl).UTC().Format(time.RFC3339))
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		return Claims{}, ErrSignature
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return Claims{}, fmt.Errorf("%w (%q, not %q)", ErrIssuer, cl.Issuer, issuer)
	default:
		return Claims{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	out := Claims{ID: cl.ID, Subject: cl.Subject, Issuer: cl.Issuer, Expiry: expiry(cl), Scopes: strings.Fields(cl.Scope)}
	if cl.IssuedAt != nil {
		out.IssuedAt = cl.IssuedAt.Time
	}
	if out.ID == "" || out.Subject == "" {
		return Claims{}, fmt.Errorf("%w: it names no id or no subject", ErrMalformed)
	}
	if err := CheckScopes(out.Scopes); err != nil {
		return Claims{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	slices.Sort(out.Scopes)
	return out, nil
}

func expiry(c claims) time.Time {
	if c.ExpiresAt == nil {
		return time.Time{}
	}
	return c.ExpiresAt.Time
}

// Unverified reads a token's claims without checking its signature, for a
// client choosing which of its tokens to send; nothing read this way may
// be trusted.
func Unverified(text string) (Claims, error) {
	var cl claims
	if _, _, err := jwt.NewParser().ParseUnverified(strings.TrimSpace(text), &cl); err != nil {
		return Claims{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return Claims{ID: cl.ID, Subject: cl.Subject, Issuer: cl.Issuer, Expiry: expiry(cl), Scopes: strings.Fields(cl.Scope)}, nil
}
