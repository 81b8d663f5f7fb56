package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestSeal unpacks a sealed image with the seal of its own job only:
// another job's, another owner's, another pool's key, an image without
// a seal and one whose file and manifest were changed together are all
// refused as forged, and nothing is left behind.
func TestSeal(t *testing.T) {
	dir := fakeImage(t)
	good := packed(t, dir)
	otherPool, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	// The same file changed, the manifest's sum made to match, the seal
	// kept: what an owner who can rewrite the stored image can do.
	m, err := Verify(bytes.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	core := [2]string{"core-1.img", "c0re"}
	var files [][2]string
	for _, f := range m.Files {
		b, err := os.ReadFile(filepath.Join(dir, f.Name))
		if err != nil {
			t.Fatal(err)
		}
		if f.Name == core[0] {
			b = []byte(core[1])
		}
		files = append(files, [2]string{f.Name, string(b)})
	}
	var tampered Manifest
	if err := json.Unmarshal([]byte(manifestOf(t, files...)), &tampered); err != nil {
		t.Fatal(err)
	}
	tampered.Seal = m.Seal
	tb, err := json.Marshal(tampered)
	if err != nil {
		t.Fatal(err)
	}

	cases := map[string]struct {
		image []byte
		seal  *Seal
	}{
		"another job":          {good, testKey.For("submit#2.0#1700000000", "alice")},
		"another owner":        {good, testKey.For("submit#1.0#1700000000", "mallory")},
		"another pool":         {good, otherPool.For("submit#1.0#1700000000", "alice")},
		"no seal":              {rawImage(t, append(files, [2]string{ManifestName, manifestOf(t, files...)})), testSeal},
		"file and sum changed": {rawImage(t, append(files, [2]string{ManifestName, string(tb)})), testSeal},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := Verify(bytes.NewReader(c.image)); err != nil {
				t.Fatalf("Verify, which has no key: %v", err)
			}
			out := filepath.Join(t.TempDir(), "out")
			_, err := Unpack(bytes.NewReader(c.image), out, c.seal)
			if !errors.Is(err, ErrForged) || !errors.Is(err, ErrBadImage) {
				t.Errorf("Unpack: %v, want ErrForged and ErrBadImage", err)
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("Unpack left %s behind", out)
			}
		})
	}
	if _, err := Unpack(bytes.NewReader(good), filepath.Join(t.TempDir(), "out"), testKey.For("submit#1.0#1700000000", "alice")); err != nil {
		t.Errorf("the job's own seal, made anew: %v", err)
	}
	if _, err := Pack(&bytes.Buffer{}, dir, nil); err == nil {
		t.Error("packed without a seal")
	}
	if _, err := Unpack(bytes.NewReader(good), filepath.Join(t.TempDir(), "out"), nil); err == nil {
		t.Error("unpacked without checking a seal")
	}
}

// TestKeyFile makes a key file and refuses key files that others could
// read or that are not keys.
func TestKeyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "checkpoint.key")
	if err := CreateKeyFile(path); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != KeySize {
		t.Fatalf("key file %v, %v", fi, err)
	}
	k1, err := LoadKey(path)
	if err != nil {
		t.Fatal(err)
	}
	// A second pool set-up keeps the key the machines share.
	if err := CreateKeyFile(path); err != nil {
		t.Fatal(err)
	}
	k2, err := LoadKey(path)
	if err != nil || k2.b != k1.b {
		t.Fatalf("the key changed: %v", err)
	}

	bad := map[string]func(p string) error{
		"readable by others": func(p string) error { return os.WriteFile(p, k1.b[:], 0o644) },
		"short":              func(p string) error { return os.WriteFile(p, k1.b[:16], 0o600) },
		"a link":             func(p string) error { return os.Symlink(path, p) },
		"a directory":        func(p string) error { return os.Mkdir(p, 0o700) },
	}
	for name, write := range bad {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "key")
			if err := write(p); err != nil {
				t.Fatal(err)
			}
			if _, err := LoadKey(p); err == nil {
				t.Error("LoadKey accepted it")
			}
			if err := CreateKeyFile(p); err == nil {
				t.Error("CreateKeyFile accepted it")
			}
		})
	}
}
