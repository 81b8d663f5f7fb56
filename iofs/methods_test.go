package iofs_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/iofs"
	"harrier.dev/harrier/shadow"
)

func gz(t *testing.T, s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func gunzip(t *testing.T, data []byte) string {
	r, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("submit-side file is not gzip: %v", err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestCompress(t *testing.T) {
	e := newEnv(t, `CompressFiles = "*.gz"`)
	if err := os.WriteFile(filepath.Join(e.submit, "in.gz"), gz(t, "hello compressed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := e.run(t, "cat", "in.gz"); got != "hello compressed\n" {
		t.Errorf("the job reads %q", got)
	}
	e.run(t, "sh", "-c", "seq 1 1000 > out.gz")
	raw, err := os.ReadFile(filepath.Join(e.submit, "out.gz"))
	if err != nil {
		t.Fatal(err)
	}
	want := e.run(t, "seq", "1", "1000")
	if got := gunzip(t, raw); got != want {
		t.Errorf("submit side holds %d bytes decompressing to %d bytes, want %d", len(raw), len(got), len(want))
	}
	if len(raw) >= len(want) {
		t.Errorf("submit-side file is %d bytes for %d bytes written: not compressed", len(raw), len(want))
	}
}

// TestCompressOpenFileSize: an open compressed file has the size of its
// contents as the job reads them, though its name was looked up (and its
// attributes cached) before: programs read st_size bytes, and CRIU checks
// that size at a restore against the one it saw at the dump.
func TestCompressOpenFileSize(t *testing.T) {
	e := newEnv(t, `CompressFiles = "*.gz"`)
	text := strings.Repeat("the same line again\n", 100)
	if err := os.WriteFile(filepath.Join(e.submit, "in.gz"), gz(t, text), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(e.path("in.gz")); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(e.path("in.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != int64(len(text)) {
		t.Errorf("the open file has size %d, want %d", fi.Size(), len(text))
	}
	data, err := io.ReadAll(f)
	if err != nil || string(data) != text {
		t.Errorf("the job reads %d bytes, %v; want the %d of the contents", len(data), err, len(text))
	}
}

func TestFetch(t *testing.T) {
	e := newEnv(t, `FetchFiles = "config"`)
	e.writeSubmit("config", "a=1\nb=2\n")
	f, err := os.OpenFile(e.path("config"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("A"), 0); err != nil {
		t.Fatal(err)
	}
	// The job works on its copy: the submit side is untouched until close.
	if got := e.readSubmit("config"); got != "a=1\nb=2\n" {
		t.Errorf("before close the submit side has %q", got)
	}
	buf := make([]byte, 8)
	if _, err := f.ReadAt(buf, 0); err != nil || string(buf) != "A=1\nb=2\n" {
		t.Errorf("the job reads its copy as %q, %v", buf, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got := e.readSubmit("config"); got != "A=1\nb=2\n" {
		t.Errorf("after close the submit side has %q", got)
	}
	var opens int64
	for _, s := range e.io.Stats() {
		if strings.HasSuffix(s.Path, "/config") {
			opens = s.Opens
		}
	}
	if opens != 1 {
		t.Errorf("the shadow opened config %d times, want 1 (one copy in, one back)", opens)
	}
}

func TestAppend(t *testing.T) {
	e := newEnv(t, `AppendFiles = "log.txt"`)
	e.writeSubmit("log.txt", "one\n")
	f, err := os.OpenFile(e.path("log.txt"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Without append these would overwrite the start of the file.
	if _, err := f.WriteAt([]byte("two\n"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("three\n"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got := e.readSubmit("log.txt"); got != "one\ntwo\nthree\n" {
		t.Errorf("submit side: %q", got)
	}
}

func TestBuffer(t *testing.T) {
	e := newEnv(t, `BufferFiles = "*.dat = (1048576,65536)"`)
	data := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	if err := os.WriteFile(filepath.Join(e.submit, "in.dat"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(e.path("in.dat"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read through the buffer: %d bytes, %v", len(got), err)
	}

	// 1000 small sequential writes reach the shadow as a few large ones.
	f, err := os.Create(e.path("out.dat"))
	if err != nil {
		t.Fatal(err)
	}
	line := []byte(strings.Repeat("x", 99) + "\n")
	for range 1000 {
		if _, err := f.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got := e.readSubmit("out.dat"); got != strings.Repeat(string(line), 1000) {
		t.Errorf("submit side has %d bytes, want %d", len(got), 100000)
	}
	found := false
	for _, s := range e.io.Stats() {
		if strings.HasSuffix(s.Path, "/out.dat") {
			found = true
			t.Logf("%+v", s)
			if s.Writes > 4 || s.BytesWritten != 100000 {
				t.Errorf("the shadow saw %d writes of %d bytes for 1000 writes of 100 bytes", s.Writes, s.BytesWritten)
			}
		}
	}
	if !found {
		t.Error("no statistics for out.dat")
	}
}

func TestLocal(t *testing.T) {
	e := newEnv(t, `LocalFiles = "scratch/*"`)
	if err := os.MkdirAll(filepath.Join(e.local, "scratch"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.local, "scratch", "tmp.txt"), []byte("on the execute machine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.writeSubmit("scratch/tmp.txt", "on the submit machine\n")
	if got := e.run(t, "cat", "scratch/tmp.txt"); got != "on the execute machine\n" {
		t.Errorf("the job reads %q", got)
	}
	e.run(t, "sh", "-c", "echo new > scratch/new.txt")
	if _, err := os.Stat(filepath.Join(e.local, "scratch", "new.txt")); err != nil {
		t.Errorf("local file not created on the execute side: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.submit, "scratch", "new.txt")); !os.IsNotExist(err) {
		t.Errorf("local file reached the submit side: %v", err)
	}
}

func TestRemapAndHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "x", fileTime, strings.NewReader("served over http\n"))
	}))
	defer srv.Close()
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "big.in"), []byte("outside the job directory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, `FileRemaps = "in.dat = `+filepath.Join(data, "big.in")+` ; web.txt = `+srv.URL+`/f"`)
	if got := e.run(t, "cat", "in.dat"); got != "outside the job directory\n" {
		t.Errorf("remapped file reads %q", got)
	}
	if got := e.run(t, "cat", "web.txt"); got != "served over http\n" {
		t.Errorf("http file reads %q", got)
	}
	if got := e.run(t, "tail", "-c", "5", "web.txt"); got != "http\n" {
		t.Errorf("http range read: %q", got)
	}
	if err := os.WriteFile(e.path("web.txt"), []byte("x"), 0o644); err == nil {
		t.Error("writing an http file succeeded")
	}

	// By default iofs does not fetch from the execute machine itself.
	guarded := newEnvWith(t, `FileRemaps = "web.txt = `+srv.URL+`/f"`, iofs.Options{})
	if _, err := os.ReadFile(guarded.path("web.txt")); !errors.Is(err, syscall.EACCES) {
		t.Errorf("reading from a loopback URL with the default client: %v, want EACCES", err)
	}
}

// TestChangesReachTheJob changes a file and then the mapping on the submit
// side while iofs is mounted; with a short cache timeout the job sees both
// at its next open.
func TestChangesReachTheJob(t *testing.T) {
	e := newEnvWith(t, "", iofs.Options{Timeout: time.Millisecond})
	e.writeSubmit("small", "one")
	if got := e.run(t, "cat", "small"); got != "one" {
		t.Fatalf("first read: %q", got)
	}
	e.writeSubmit("small", "two")
	e.waitFor(t, "small", "two")

	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "elsewhere"), []byte("three"), 0o644); err != nil {
		t.Fatal(err)
	}
	ad, err := classad.Parse(`[ Iwd = "` + e.submit + `"; FileRemaps = "small = ` + other + `/elsewhere" ]`)
	if err != nil {
		t.Fatal(err)
	}
	m, err := shadow.NewMapping(ad)
	if err != nil {
		t.Fatal(err)
	}
	e.io.SetMapping(m)
	e.waitFor(t, "small", "three")
}

// waitFor reads name until it holds want: the kernel's and iofs's caches
// expire after a millisecond, but a read may start just before.
func (e *env) waitFor(t *testing.T, name, want string) {
	t.Helper()
	var got string
	for range 100 {
		data, err := os.ReadFile(e.path(name))
		if err != nil {
			t.Fatal(err)
		}
		if got = string(data); got == want {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(got) > 64 || len(want) > 64 {
		t.Errorf("%s reads %d bytes (%.32q...), want %d (%.32q...)", name, len(got), got, len(want), want)
		return
	}
	t.Errorf("%s reads %q, want %q", name, got, want)
}
