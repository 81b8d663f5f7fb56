package token

import (
	"encoding/base64"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

func sample(t *testing.T, k *Key, scopes ...string) (string, Claims) {
	t.Helper()
	c := Claims{ID: "id1", Subject: "alice", Issuer: "agent@h", IssuedAt: t0, Expiry: t0.Add(time.Hour), Scopes: scopes}
	s, err := k.Sign(c)
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

func TestSignVerify(t *testing.T) {
	k, _ := NewKey("POOL")
	s, c := sample(t, k, "read")
	got, err := k.Verify(s, "agent@h", t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != c.ID || got.Subject != "alice" || !got.Expiry.Equal(c.Expiry) || !got.IssuedAt.Equal(t0) || len(got.Scopes) != 1 {
		t.Fatalf("claims %+v, want %+v", got, c)
	}
	if !got.Allows(ScopeRead) || got.Allows(ScopeWrite) {
		t.Errorf("a read token: Allows(read)=%v Allows(write)=%v", got.Allows(ScopeRead), got.Allows(ScopeWrite))
	}
	if w := (Claims{Scopes: []string{ScopeWrite}}); !w.Allows(ScopeRead) {
		t.Error("write does not imply read")
	}
	if all := (Claims{}); !all.Allows(ScopeWrite) {
		t.Error("a token without scopes does not allow write")
	}
}

func TestRefusals(t *testing.T) {
	k, _ := NewKey("POOL")
	other, _ := NewKey("POOL")
	otherName, _ := NewKey("OTHER")
	s, _ := sample(t, k)
	forged, _ := sample(t, other)
	forgedName, _ := sample(t, otherName)
	parts := strings.Split(s, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	edited := parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(payload), "alice", "bobby", 1))) + "." + parts[2]
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","kid":"POOL"}`)) + "." + parts[1] + "."
	for _, c := range []struct {
		name, text, issuer string
		at                 time.Time
		want               error
	}{
		{"expired", s, "agent@h", t0.Add(2 * time.Hour), ErrExpired},
		{"other key", forged, "agent@h", t0, ErrSignature},
		{"other key name", forgedName, "agent@h", t0, ErrSignature},
		{"edited payload", edited, "agent@h", t0, ErrSignature},
		{"alg none", none, "agent@h", t0, ErrSignature},
		{"other issuer", s, "agent@x", t0, ErrIssuer},
		{"garbage", "not a token", "agent@h", t0, ErrMalformed},
		{"empty", "", "agent@h", t0, ErrMalformed},
	} {
		_, err := k.Verify(c.text, c.issuer, c.at)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

func TestKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "POOL.key")
	k1, err := LoadOrCreateKey(path, "POOL")
	if err != nil {
		t.Fatal(err)
	}
	k2, err := LoadOrCreateKey(path, "POOL")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := sample(t, k1)
	if _, err := k2.Verify(s, "agent@h", t0); err != nil {
		t.Fatalf("the reloaded key does not verify what the first signed: %v", err)
	}
}

func TestRegistry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	r, err := OpenRegistry(path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	a := Claims{ID: "a", Subject: "alice", Issuer: "agent@h", IssuedAt: now, Expiry: now.Add(time.Hour)}
	b := Claims{ID: "b", Subject: "bob", Issuer: "agent@h", IssuedAt: now, Expiry: now.Add(time.Hour)}
	for _, c := range []Claims{a, b} {
		if err := r.Add(c, 1); err != nil {
			t.Fatal(err)
		}
	}
	a2 := a
	a2.ID = "a2"
	if err := r.Add(a2, 1); !errors.Is(err, ErrTooMany) {
		t.Errorf("alice's second token with a limit of one: %v", err)
	}
	if err := r.Check(Claims{ID: "zz", Subject: "alice"}); !errors.Is(err, ErrRevoked) {
		t.Errorf("an unrecorded token: %v", err)
	}
	asBob := func(s string) bool { return s == "bob" }
	if _, err := r.Revoke("a", "", asBob, now); err == nil {
		t.Error("bob revoked alice's token")
	}
	if ids, err := r.Revoke("", "bob", asBob, now); err != nil || len(ids) != 1 || ids[0] != "b" {
		t.Fatalf("revoke all of bob: %v %v", ids, err)
	}
	// The revocation is durable.
	r2, err := OpenRegistry(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := r2.Check(b); !errors.Is(err, ErrRevoked) {
		t.Errorf("bob's revoked token after reopening: %v", err)
	}
	if err := r2.Check(a); err != nil {
		t.Errorf("alice's token: %v", err)
	}
	if got := r2.List("alice"); len(got) != 1 || got[0].ID != "a" {
		t.Errorf("alice's list: %+v", got)
	}
}

// FuzzVerify feeds the parser arbitrary tokens: it must refuse them with
// one of the package's errors, never panic, and accept only what the key
// signed.
func FuzzVerify(f *testing.F) {
	k, _ := NewKey("POOL")
	c := Claims{ID: "id1", Subject: "alice", Issuer: "agent@h", IssuedAt: t0, Expiry: t0.Add(time.Hour)}
	s, _ := k.Sign(c)
	f.Add(s)
	f.Add("a.b.c")
	f.Add("")
	f.Add(strings.Replace(s, ".", "..", 1))
	f.Fuzz(func(t *testing.T, text string) {
		got, err := k.Verify(text, "agent@h", t0)
		if err == nil {
			if strings.TrimSpace(text) != s || got.Subject != "alice" {
				t.Fatalf("accepted %q as %+v", text, got)
			}
			return
		}
		for _, e := range []error{ErrMalformed, ErrSignature, ErrExpired, ErrIssuer} {
			if errors.Is(err, e) {
				return
			}
		}
		t.Fatalf("refused with an error of no kind: %v", err)
	})
}

// BenchmarkVerify is what checking a token costs the agent on every
// remote call, beside the registry's check that follows it.
func BenchmarkVerify(b *testing.B) {
	k, _ := NewKey("POOL")
	now := time.Now()
	c := Claims{ID: "id1", Subject: "alice", Issuer: "agent@h", IssuedAt: now, Expiry: now.Add(time.Hour), Scopes: []string{ScopeRead}}
	s, err := k.Sign(c)
	if err != nil {
		b.Fatal(err)
	}
	r, err := OpenRegistry(filepath.Join(b.TempDir(), "tokens"))
	if err != nil {
		b.Fatal(err)
	}
	if err := r.Add(c, 0); err != nil {
		b.Fatal(err)
	}
	b.Run("signature", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := k.Verify(s, "agent@h", now); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("registry", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := r.Check(c); err != nil {
				b.Fatal(err)
			}
		}
	})
}
