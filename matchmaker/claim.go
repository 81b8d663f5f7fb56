package matchmaker

import (
	"crypto/rand"
	"encoding/hex"
)

// newClaimID returns a fresh claim id: 128 random bits in hex. The startd
// accepts a claim only with the id the negotiator gave it, so the id must
// not be guessable by anyone who did not receive the match.
func newClaimID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails, per crypto/rand
	return hex.EncodeToString(b[:])
}
