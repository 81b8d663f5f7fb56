package checkpoint

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// failingReader delivers part of an image, then fails, as a dropped
// connection would.
type failingReader struct {
	r io.Reader
	n int
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("connection reset")
	}
	if len(p) > f.n {
		p = p[:f.n]
	}
	n, err := f.r.Read(p)
	f.n -= n
	return n, err
}

func readStored(t *testing.T, s *Store, job string) []byte {
	t.Helper()
	f, err := s.Open(job)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestStoreReplacesAtomically(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "images")
	s, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("store directory has mode %v", fi.Mode())
	}
	if _, err := s.Open("12.0"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open before Put: %v, want ErrNotExist", err)
	}
	imgDir := fakeImage(t)
	first := packed(t, imgDir)
	if _, err := s.Put("12.0", bytes.NewReader(first)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readStored(t, s, "12.0"), first) {
		t.Fatal("stored image differs from the one put")
	}
	fi, err := os.Stat(filepath.Join(dir, "12.0.ckpt"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("stored image mode %v %v, want 0600", fi.Mode(), err)
	}

	// Failed and bad uploads leave the good image in place.
	held, err := s.Open("12.0") // a transfer to a starter in progress
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	os.WriteFile(filepath.Join(imgDir, "core-1.img"), []byte("second"), 0o600)
	second := packed(t, imgDir)
	for name, r := range map[string]io.Reader{
		"dropped":   &failingReader{r: bytes.NewReader(second), n: len(second) / 2},
		"truncated": bytes.NewReader(second[:len(second)-10]),
		"corrupted": bytes.NewReader(append(bytes.Clone(second[:100]), second[101:]...)),
	} {
		if _, err := s.Put("12.0", r); err == nil {
			t.Errorf("%s upload accepted", name)
		}
		if !bytes.Equal(readStored(t, s, "12.0"), first) {
			t.Fatalf("%s upload replaced the good image", name)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".*")); len(m) != 0 {
		t.Errorf("failed uploads left %v", m)
	}

	// A good one replaces it; a reader of the old one is not disturbed.
	m, err := s.Put("12.0", bytes.NewReader(second))
	if err != nil {
		t.Fatal(err)
	}
	if m.Info == nil || len(m.Info.Inputs) != 1 {
		t.Errorf("Put's manifest info %+v", m.Info)
	}
	if !bytes.Equal(readStored(t, s, "12.0"), second) {
		t.Fatal("good upload did not replace the image")
	}
	old, err := io.ReadAll(held)
	if err != nil || !bytes.Equal(old, first) {
		t.Errorf("reader of the replaced image got %d bytes, %v", len(old), err)
	}

	// A crash mid-upload leaves a temporary file; the job's next upload
	// removes it. Another job's, which may be on its way through
	// another Store on the same directory (another shadow of the same
	// owner), stays.
	os.WriteFile(filepath.Join(dir, ".12.0.tmp123"), []byte("partial"), 0o600)
	os.WriteFile(filepath.Join(dir, ".12.1.tmp456"), []byte("on its way"), 0o600)
	s, err = OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put("12.0", bytes.NewReader(second)); err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".*")); len(m) != 1 || filepath.Base(m[0]) != ".12.1.tmp456" {
		t.Errorf("after another upload of 12.0 the store holds %v, want 12.1's upload alone", m)
	}

	if err := s.Remove("12.0"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Open("12.0"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open after Remove: %v", err)
	}
	if err := s.Remove("12.0"); err != nil {
		t.Errorf("second Remove: %v", err)
	}
	for _, bad := range []string{"", ".", "..", "../x", "a/b", ".hidden"} {
		if _, err := s.Put(bad, bytes.NewReader(second)); err == nil {
			t.Errorf("Put accepted job name %q", bad)
		}
	}
}

func TestStoreInfo(t *testing.T) {
	s, err := OpenStore(filepath.Join(t.TempDir(), "images"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Info("7.0"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Info without an image: %v, want ErrNotExist", err)
	}
	imgDir := fakeImage(t)
	if _, err := s.Put("7.0", bytes.NewReader(packed(t, imgDir))); err != nil {
		t.Fatal(err)
	}
	res, err := s.Info("7.0")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Inputs) != 1 || res.Inputs[0] != (Input{Path: "/job/in", Size: 3}) || res.Stats.Frozen != 5000 {
		t.Errorf("Info = %+v", res)
	}
	// An image without the dump's information says so.
	if err := os.Remove(filepath.Join(imgDir, InfoName)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put("7.0", bytes.NewReader(packed(t, imgDir))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Info("7.0"); !errors.Is(err, ErrNoInfo) {
		t.Errorf("Info of an image without %s: %v, want ErrNoInfo", InfoName, err)
	}
}

// TestStoreConcurrentJobs uploads one job's image while another Store on
// the same directory (another shadow of the same owner) opens and puts
// another job's: both images are kept.
func TestStoreConcurrentJobs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "images")
	img := packed(t, fakeImage(t))
	s1, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := s1.Put("3.0", pr)
		done <- err
	}()
	if _, err := pw.Write(img[:len(img)/2]); err != nil {
		t.Fatal(err)
	}
	// 3.0's upload is half-way.
	s2, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Put("3.1", bytes.NewReader(img)); err != nil {
		t.Fatal(err)
	}
	if _, err := pw.Write(img[len(img)/2:]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatalf("the upload of 3.0 while 3.1's was put: %v", err)
	}
	for _, job := range []string{"3.0", "3.1"} {
		if !bytes.Equal(readStored(t, s2, job), img) {
			t.Errorf("%s's image is not the one put", job)
		}
	}
}
