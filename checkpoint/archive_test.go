package checkpoint

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// fakeImage makes an image directory of a few files, one of them large
// enough to span several zstd blocks.
func fakeImage(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "img")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	pages := make([]byte, 3<<20)
	for i := range pages[:1<<20] { // one MiB of noise, the rest zeros
		pages[i] = byte(rng.Uint32())
	}
	files := map[string][]byte{
		"pages-1.img": pages, "core-1.img": []byte("core"), "empty.img": nil,
		InfoName: []byte(`{"stats":{"frozen":5000},"inputs":[{"path":"/job/in","size":3}]}`),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func packed(t testing.TB, dir string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := Pack(&buf, dir, testSeal); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestPackUnpack(t *testing.T) {
	dir := fakeImage(t)
	var buf bytes.Buffer
	pm, err := Pack(&buf, dir, testSeal)
	if err != nil {
		t.Fatal(err)
	}
	if pm.Size() != 3<<20+4+int64(len(`{"stats":{"frozen":5000},"inputs":[{"path":"/job/in","size":3}]}`)) {
		t.Errorf("manifest size %d", pm.Size())
	}
	if buf.Len() > 3<<20/2 {
		t.Errorf("packed %d bytes: zeros not compressed", buf.Len())
	}
	out := filepath.Join(t.TempDir(), "out")
	m, err := Unpack(bytes.NewReader(buf.Bytes()), out, testSeal)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Files) != 4 || m.Info == nil || m.Info.Stats.Frozen != 5000 || len(m.Info.Inputs) != 1 {
		t.Errorf("manifest %+v info %+v", m, m.Info)
	}
	for _, f := range m.Files {
		want, _ := os.ReadFile(filepath.Join(dir, f.Name))
		got, err := os.ReadFile(filepath.Join(out, f.Name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s differs after unpacking (%v)", f.Name, err)
		}
		if fi, _ := os.Stat(filepath.Join(out, f.Name)); fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", f.Name, fi.Mode())
		}
	}
	if fi, _ := os.Stat(out); fi.Mode().Perm() != 0o700 {
		t.Errorf("image directory has mode %v, want 0700", fi.Mode())
	}
}

func TestPackRefusesOtherFiles(t *testing.T) {
	dir := fakeImage(t)
	if err := os.Symlink("..", filepath.Join(dir, "parent")); err != nil {
		t.Fatal(err)
	}
	if _, err := Pack(&bytes.Buffer{}, dir, testSeal); err == nil {
		t.Error("packed an image with a symbolic link")
	}
}

// TestCorruptImage checks that damaged images are rejected before
// anything could restore them, and that Unpack leaves nothing behind.
func TestCorruptImage(t *testing.T) {
	good := packed(t, fakeImage(t))
	flip := func(at int) []byte {
		b := bytes.Clone(good)
		b[at] ^= 0x40
		return b
	}
	cases := map[string][]byte{
		"empty":            nil,
		"not zstd":         []byte("hello, this is not an image"),
		"truncated":        good[:len(good)/2],
		"truncated at end": good[:len(good)-1],
		"flipped early":    flip(100),
		"flipped middle":   flip(len(good) / 2),
		"flipped late":     flip(len(good) - 20),
		"trailing garbage": append(bytes.Clone(good), "more"...),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := Verify(bytes.NewReader(b)); !errors.Is(err, ErrBadImage) {
				t.Errorf("Verify: %v, want ErrBadImage", err)
			}
			out := filepath.Join(t.TempDir(), "out")
			if _, err := Unpack(bytes.NewReader(b), out, testSeal); !errors.Is(err, ErrBadImage) {
				t.Errorf("Unpack: %v, want ErrBadImage", err)
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("Unpack left %s behind", out)
			}
		})
	}
}

// rawImage builds a packed image by hand, with whatever entries and
// manifest a test wants.
func rawImage(t testing.TB, entries [][2]string) []byte {
	t.Helper()
	return handPacked(t, func(tw *tar.Writer) error {
		for _, e := range entries {
			if err := tw.WriteHeader(&tar.Header{Name: e[0], Mode: 0o600, Size: int64(len(e[1])), Typeflag: tar.TypeReg}); err != nil {
				return err
			}
			if _, err := tw.Write([]byte(e[1])); err != nil {
				return err
			}
		}
		return nil
	})
}

// handPacked compresses the tar stream that write makes, as Pack does.
func handPacked(t testing.TB, write func(*tar.Writer) error) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := zstd.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(zw)
	if err := errors.Join(write(tw), tw.Close(), zw.Close()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func manifestOf(t testing.TB, files ...[2]string) string {
	t.Helper()
	m := Manifest{Version: 1}
	for _, f := range files {
		sum := sha256.Sum256([]byte(f[1]))
		m.Files = append(m.Files, FileSum{Name: f[0], Size: int64(len(f[1])), SHA256: hex.EncodeToString(sum[:])})
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestBadManifest feeds well-formed streams whose contents disagree with
// their manifest, or that try to escape the image directory.
func TestBadManifest(t *testing.T) {
	a, b := [2]string{"a.img", "aaaa"}, [2]string{"b.img", "bbbb"}
	cases := map[string][][2]string{
		"wrong size":        {a, {ManifestName, manifestOf(t, [2]string{"a.img", "aaaaa"})}},
		"missing file":      {a, {ManifestName, manifestOf(t, a, b)}},
		"unlisted file":     {a, b, {ManifestName, manifestOf(t, a)}},
		"after manifest":    {a, {ManifestName, manifestOf(t, a)}, b},
		"twice":             {a, a, {ManifestName, manifestOf(t, a, a)}},
		"escapes":           {{"../a.img", "aaaa"}, {ManifestName, manifestOf(t, [2]string{"../a.img", "aaaa"})}},
		"dot element":       {{"d/./a.img", "aaaa"}, {ManifestName, manifestOf(t, [2]string{"d/./a.img", "aaaa"})}},
		"absolute":          {{"/a.img", "aaaa"}, {ManifestName, manifestOf(t, [2]string{"/a.img", "aaaa"})}},
		"no manifest":       {a, b},
		"manifest not JSON": {a, {ManifestName, "{"}},
		"manifest version":  {a, {ManifestName, `{"version":2,"files":[]}`}},
	}
	for name, entries := range cases {
		t.Run(name, func(t *testing.T) {
			img := rawImage(t, entries)
			if _, err := Verify(bytes.NewReader(img)); !errors.Is(err, ErrBadImage) {
				t.Errorf("Verify: %v, want ErrBadImage", err)
			}
		})
	}
	good := rawImage(t, [][2]string{a, b, {ManifestName, manifestOf(t, a, b)}})
	if _, err := Verify(bytes.NewReader(good)); err != nil {
		t.Errorf("hand-made good image: %v", err)
	}

	// A file that disagrees with its sum in the manifest only: the
	// shadow, which does not recompute the sums, stores it; the machine
	// that would restore it refuses it.
	wrongSum := rawImage(t, [][2]string{a, {ManifestName, manifestOf(t, [2]string{"a.img", "aaab"})}})
	if _, err := Verify(bytes.NewReader(wrongSum)); err != nil {
		t.Errorf("Verify of a wrong sum: %v, want it stored", err)
	}
	if _, err := Unpack(bytes.NewReader(wrongSum), filepath.Join(t.TempDir(), "out"), testSeal); !errors.Is(err, ErrBadImage) || errors.Is(err, ErrForged) {
		t.Errorf("Unpack of a wrong sum: %v, want ErrBadImage for the sum", err)
	}
}

// TestVerifyWantsChecksum checks that the shadow refuses a stream without
// zstd's content checksum, which is what stands in for the files' sums
// on its side.
func TestVerifyWantsChecksum(t *testing.T) {
	zr, err := zstd.NewReader(bytes.NewReader(packed(t, fakeImage(t))))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	for _, crc := range []bool{true, false} {
		var buf bytes.Buffer
		zw, err := zstd.NewWriter(&buf, zstd.WithEncoderCRC(crc))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := zw.Write(plain); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		_, err = Verify(bytes.NewReader(buf.Bytes()))
		if crc && err != nil {
			t.Errorf("with a checksum: %v", err)
		}
		if !crc && !errors.Is(err, ErrBadImage) {
			t.Errorf("without a checksum: %v, want ErrBadImage", err)
		}
	}
}

func FuzzVerify(f *testing.F) {
	dir := filepath.Join(f.TempDir(), "img")
	os.Mkdir(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "a.img"), []byte("aaaa"), 0o600)
	os.WriteFile(filepath.Join(dir, InfoName), []byte(`{"inputs":[]}`), 0o600)
	var buf bytes.Buffer
	if _, err := Pack(&buf, dir, testSeal); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte{})
	f.Add([]byte("\x28\xb5\x2f\xfd"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Verify(bytes.NewReader(b))
		if err != nil {
			if !errors.Is(err, ErrBadImage) {
				t.Fatalf("Verify: %v does not wrap ErrBadImage", err)
			}
			return
		}
		// A whole image unpacks to exactly its manifest, or Unpack
		// refuses it as bad: Verify checks neither the seal nor the
		// sums, which zstd's checksum makes all but impossible to get
		// wrong by chance.
		out := filepath.Join(t.TempDir(), "out")
		um, err := Unpack(bytes.NewReader(b), out, testSeal)
		if errors.Is(err, ErrBadImage) {
			return
		}
		if err != nil {
			t.Fatalf("Verify accepts what Unpack fails on: %v", err)
		}
		if len(um.Files) != len(m.Files) {
			t.Fatalf("Unpack %d files, Verify %d", len(um.Files), len(m.Files))
		}
		for _, f := range um.Files {
			if !validName(f.Name) {
				t.Fatalf("unpacked %q", f.Name)
			}
		}
	})
}
