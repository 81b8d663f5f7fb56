package checkpoint

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// A checkpoint image is stored by the job's shadow, which runs as the
// job's owner: the owner can change any byte of it. Yet a restore hands
// the image to CRIU, as root, and CRIU restores whatever credentials,
// namespaces and mounts the image describes. So every image is sealed by
// the starter that made it, with a key that only the pool's execute
// machines hold (root's, mode 0600), and a starter restores only an
// image whose seal it can verify.
//
// The seal is an HMAC-SHA256 of the image's manifest: the job it was
// made for (its GlobalJobId and owner, so that an image of one job
// cannot be passed off as another's) and the name, size and SHA-256 of
// every file. Unpack checks every file against the manifest before it
// accepts the image, so the seal covers every byte CRIU will read, for
// the price of one HMAC over a few kilobytes instead of a second pass
// over the image.

// KeySize is the size of a pool's checkpoint key in bytes.
const KeySize = 32

// ErrForged reports an image whose seal is missing or does not verify
// with this machine's key for the job at hand: it was not made by one
// of the pool's starters for this job, or it was changed since. An
// error wrapping it also wraps ErrBadImage.
var ErrForged = errors.New("the image is not sealed by this pool's starters for this job")

// Key is a pool's checkpoint key.
type Key struct {
	b [KeySize]byte
}

// NewKey returns a new random key.
func NewKey() (*Key, error) {
	var k Key
	if _, err := rand.Read(k.b[:]); err != nil {
		return nil, fmt.Errorf("checkpoint key: %w", err)
	}
	return &k, nil
}

// CreateKeyFile writes a new random key to path, owner-only, unless a
// file is there already (then it is left alone, and must pass LoadKey).
func CreateKeyFile(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		_, err := LoadKey(path)
		return err
	}
	if err != nil {
		return fmt.Errorf("create checkpoint key: %w", err)
	}
	k, err := NewKey()
	if err == nil {
		_, err = f.Write(k.b[:])
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("create checkpoint key %s: %w", path, err)
	}
	return nil
}

// LoadKey reads a key file. It must be a regular file of KeySize bytes
// that belongs to this process's user and that nobody else may read or
// write: whoever reads it can forge images that every execute machine of
// the pool restores as root.
func LoadKey(path string) (*Key, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("checkpoint key: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("checkpoint key: %w", err)
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("checkpoint key %s: not a regular file", path)
	case fi.Mode().Perm()&0o077 != 0:
		return nil, fmt.Errorf("checkpoint key %s: mode %v lets others at it (want 0600)", path, fi.Mode().Perm())
	case st == nil || int(st.Uid) != os.Geteuid():
		return nil, fmt.Errorf("checkpoint key %s: not owned by uid %d", path, os.Geteuid())
	case fi.Size() != KeySize:
		return nil, fmt.Errorf("checkpoint key %s: %d bytes, want %d", path, fi.Size(), KeySize)
	}
	var k Key
	if _, err := io.ReadFull(f, k.b[:]); err != nil {
		return nil, fmt.Errorf("checkpoint key %s: %w", path, err)
	}
	return &k, nil
}

// Seal seals and checks the images of one job with a pool's key.
type Seal struct {
	key *Key
	job []byte // the job's identity, as hashed first
}

// For returns the Seal of the images of the job with the given
// GlobalJobId and owner.
func (k *Key) For(globalJobID, owner string) *Seal {
	var b []byte
	b = append(b, "harrier checkpoint image seal 1\x00"...)
	b = appendField(b, globalJobID)
	b = appendField(b, owner)
	return &Seal{key: k, job: b}
}

// appendField appends s with its length first, so that no two field
// lists hash alike.
func appendField(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// sum is the seal of an image holding files, in hex.
func (s *Seal) sum(files []FileSum) string {
	h := hmac.New(sha256.New, s.key.b[:])
	h.Write(s.job)
	var b []byte
	for _, f := range files {
		b = appendField(b[:0], f.Name)
		b = binary.AppendVarint(b, f.Size)
		b = appendField(b, f.SHA256)
		b = appendField(b, f.Link)
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// check verifies the seal of the manifest m, whose files have been
// checked against it.
func (s *Seal) check(m *Manifest) error {
	got, err := hex.DecodeString(m.Seal)
	if err != nil || m.Seal == "" {
		return fmt.Errorf("%w: %w (no seal)", ErrBadImage, ErrForged)
	}
	want, _ := hex.DecodeString(s.sum(m.Files))
	if !hmac.Equal(got, want) {
		return fmt.Errorf("%w: %w", ErrBadImage, ErrForged)
	}
	return nil
}
