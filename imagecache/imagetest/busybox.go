// Package imagetest builds small container images for tests: busybox
// (the machine's static /bin/busybox) and whatever files a test adds,
// written as go-containerregistry writes images.
package imagetest

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Busybox is where the static busybox is looked for.
const Busybox = "/bin/busybox"

// applets get a symbolic link to busybox in /bin.
var applets = []string{"sh", "cat", "ls", "uname", "echo", "id", "sleep", "touch", "mkdir", "rm", "test", "true"}

// NeedBusybox skips a test without a static busybox.
func NeedBusybox(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(Busybox); err != nil {
		t.Skipf("needs a static busybox at %s (scripts/setup installs busybox-static): %v", Busybox, err)
	}
}

// Image is busybox in one layer and files (path: content) in a second,
// for this machine's platform. A path ending in "/" is a directory
// everyone may write to, like /tmp, with its content its mode in octal
// (default 1777).
func Image(t testing.TB, files map[string]string) v1.Image {
	t.Helper()
	NeedBusybox(t)
	bb, err := os.ReadFile(Busybox)
	if err != nil {
		t.Fatal(err)
	}
	var base tarWriter
	for _, d := range []string{"bin", "etc", "tmp", "root"} {
		base.dir(t, d)
	}
	base.file(t, "bin/busybox", bb, 0o755)
	for _, a := range applets {
		base.symlink(t, "bin/"+a, "busybox")
	}
	var top tarWriter
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if d, ok := strings.CutSuffix(p, "/"); ok {
			mode := int64(0o1777)
			if files[p] != "" {
				m, err := strconv.ParseInt(files[p], 8, 64)
				if err != nil {
					t.Fatalf("mode of %s: %v", p, err)
				}
				mode = m
			}
			top.header(t, &tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: mode})
			continue
		}
		top.file(t, p, []byte(files[p]), 0o644)
	}
	img, err := mutate.AppendLayers(empty.Image, base.layer(t), top.layer(t))
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config.Env = []string{"PATH=/bin"}
	cf.Config.Cmd = []string{"/bin/sh"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	return img
}

// WriteTarball saves img as `docker save` would, at path.
func WriteTarball(t testing.TB, img v1.Image, path string) {
	t.Helper()
	tag, err := name.NewTag("harrier.test/busybox:latest")
	if err != nil {
		t.Fatal(err)
	}
	if err := tarball.WriteToFile(path, tag, img); err != nil {
		t.Fatal(err)
	}
}

// tarWriter collects a layer's tar stream.
type tarWriter struct {
	buf bytes.Buffer
	tw  *tar.Writer
}

func (w *tarWriter) header(t testing.TB, h *tar.Header) {
	t.Helper()
	if w.tw == nil {
		w.tw = tar.NewWriter(&w.buf)
	}
	if err := w.tw.WriteHeader(h); err != nil {
		t.Fatal(err)
	}
}

func (w *tarWriter) dir(t testing.TB, p string) {
	w.header(t, &tar.Header{Name: p + "/", Typeflag: tar.TypeDir, Mode: 0o755})
}

func (w *tarWriter) symlink(t testing.TB, p, target string) {
	w.header(t, &tar.Header{Name: p, Typeflag: tar.TypeSymlink, Linkname: target, Mode: 0o777})
}

func (w *tarWriter) file(t testing.TB, p string, b []byte, mode int64) {
	w.header(t, &tar.Header{Name: p, Typeflag: tar.TypeReg, Mode: mode, Size: int64(len(b))})
	if _, err := w.tw.Write(b); err != nil {
		t.Fatal(err)
	}
}

func (w *tarWriter) layer(t testing.TB) v1.Layer {
	t.Helper()
	if w.tw == nil {
		w.tw = tar.NewWriter(&w.buf)
	}
	if err := w.tw.Close(); err != nil {
		t.Fatal(err)
	}
	b := w.buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}
