package imagecache

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"golang.org/x/sys/unix"
)

// needRoot skips tests that unpack as root (ownership, whiteouts as
// device nodes, trusted xattrs).
func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: unpacks layers with their owners and overlayfs whiteouts")
	}
}

// entry is one file of a test layer.
type entry struct {
	name, body, link string
	typ              byte
	mode             int64
}

// layerTar writes entries as a layer's tar stream.
func layerTar(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: e.mode, Size: int64(len(e.body))}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// layer makes a v1.Layer of a tar stream.
func layer(t testing.TB, b []byte) v1.Layer {
	t.Helper()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// image makes an image for this machine of the layers, bottom first.
func image(t testing.TB, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config.Cmd = []string{"/bin/sh"}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func newCache(t *testing.T, max int64) *Cache {
	t.Helper()
	c, err := New(t.TempDir(), max, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func twoLayers(t *testing.T) v1.Image {
	return image(t,
		layer(t, layerTar(t,
			entry{name: "etc/", typ: tar.TypeDir, mode: 0o755},
			entry{name: "etc/old", body: "old"},
			entry{name: "opt/", typ: tar.TypeDir, mode: 0o755},
			entry{name: "opt/a", body: "a"})),
		layer(t, layerTar(t,
			entry{name: "etc/.wh.old"},
			entry{name: "opt/.wh..wh..opq"},
			entry{name: "etc/marker", body: "hello"})))
}

// Eight jobs pulling one image at once unpack each layer once, and all
// of them get the same, complete layers, whiteouts in overlayfs's form.
func TestAcquireConcurrentUnpacksOnce(t *testing.T) {
	needRoot(t)
	c := newCache(t, 0)
	img := twoLayers(t)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		unpacked int
		got      []*Image
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each job opens the cache itself, as each starter does.
			c2, err := New(c.dir, 0, nil)
			if err != nil {
				t.Error(err)
				return
			}
			im, err := c2.Acquire(context.Background(), img, "")
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			unpacked += im.Unpacked
			got = append(got, im)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if unpacked != 2 {
		t.Errorf("layers unpacked by 8 concurrent pulls: %d, want 2", unpacked)
	}
	if len(got) == 0 {
		t.FailNow()
	}
	im := got[0]
	if len(im.Layers) != 2 {
		t.Fatalf("layers %v", im.Layers)
	}
	if b, err := os.ReadFile(filepath.Join(im.Layers[1], "etc/marker")); err != nil || string(b) != "hello" {
		t.Errorf("marker: %q %v", b, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(im.Layers[1], "etc/old"), &st); err != nil ||
		st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != 0 {
		t.Errorf("etc/old in the upper layer is no overlayfs whiteout: mode %o rdev %d err %v", st.Mode, st.Rdev, err)
	}
	buf := make([]byte, 8)
	if n, err := unix.Getxattr(filepath.Join(im.Layers[1], "opt"), "trusted.overlay.opaque", buf); err != nil || string(buf[:n]) != "y" {
		t.Errorf("opt is not opaque: %q %v", buf[:n], err)
	}
	if im.ID == "" || im.Config.Cmd[0] != "/bin/sh" {
		t.Errorf("image %s config %+v", im.ID, im.Config)
	}
	for _, im := range got {
		if err := im.Release(); err != nil {
			t.Error(err)
		}
	}
	again, err := c.Acquire(context.Background(), img, "")
	if err != nil {
		t.Fatal(err)
	}
	defer again.Release()
	if again.Unpacked != 0 {
		t.Errorf("a cached image unpacked %d layers again", again.Unpacked)
	}
}

// failingLayer breaks its stream half way, as a pull killed mid-way
// does.
type failingLayer struct {
	v1.Layer
	after int
}

var errInjected = errors.New("injected failure")

func (l failingLayer) Uncompressed() (io.ReadCloser, error) {
	rc, err := l.Layer.Uncompressed()
	if err != nil {
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(io.LimitReader(rc, int64(l.after)), errReader{}), rc}, nil
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errInjected }

// A pull that fails half way leaves no layer to use; one that died
// leaves a partial directory that the next pull throws away.
func TestPartialPullNeverUsed(t *testing.T) {
	needRoot(t)
	c := newCache(t, 0)
	big := layerTar(t, entry{name: "big", body: string(bytes.Repeat([]byte("x"), 64<<10))}, entry{name: "last", body: "end"})
	good := layer(t, big)
	d, _ := good.DiffID()
	img := image(t, good)
	broken, err := mutate.AppendLayers(empty.Image, failingLayer{good, 10 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(context.Background(), broken, ""); !errors.Is(err, errInjected) {
		t.Fatalf("pull broken half way: %v", err)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "layers", d.Hex)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a half-pulled layer is in the cache: %v", err)
	}
	// What a killed pull leaves behind.
	junk := filepath.Join(c.dir, "tmp", d.Hex, "fs", "junk")
	if err := os.MkdirAll(filepath.Dir(junk), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(junk, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	im, err := c.Acquire(context.Background(), img, "")
	if err != nil {
		t.Fatal(err)
	}
	defer im.Release()
	if im.Unpacked != 1 {
		t.Errorf("unpacked %d layers, want 1", im.Unpacked)
	}
	if _, err := os.Stat(filepath.Join(im.Layers[0], "junk")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dead pull's file is in the layer: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(im.Layers[0], "last")); err != nil || string(b) != "end" {
		t.Errorf("last file: %q %v", b, err)
	}
}

// lyingLayer claims another layer's diff ID.
type lyingLayer struct {
	v1.Layer
	diffID v1.Hash
}

func (l lyingLayer) DiffID() (v1.Hash, error) { return l.diffID, nil }

// A layer whose content is not what the image's configuration says is
// refused and not kept.
func TestDigestMismatchRefused(t *testing.T) {
	needRoot(t)
	c := newCache(t, 0)
	real := layer(t, layerTar(t, entry{name: "a", body: "a"}))
	other, _ := layer(t, layerTar(t, entry{name: "b", body: "b"})).DiffID()
	img, err := mutate.AppendLayers(empty.Image, lyingLayer{real, other})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(context.Background(), img, ""); !errors.Is(err, ErrDigest) {
		t.Fatalf("acquire: %v, want ErrDigest", err)
	}
	if es, _ := os.ReadDir(filepath.Join(c.dir, "layers")); len(es) != 0 {
		t.Errorf("layers kept: %v", es)
	}
}

// Over its cap, the cache evicts the least recently used image no job
// holds, never one a job holds, and keeps layers an image still names.
func TestEvictionLRU(t *testing.T) {
	needRoot(t)
	c := newCache(t, 100<<10)
	shared := layer(t, layerTar(t, entry{name: "shared", body: "s"}))
	mk := func(n string) v1.Image {
		return image(t, shared, layer(t, layerTar(t, entry{name: n, body: string(bytes.Repeat([]byte(n), 60<<10))})))
	}
	a, b, cc := mk("a"), mk("b"), mk("c")
	ctx := context.Background()
	imA, err := c.Acquire(ctx, a, "")
	if err != nil {
		t.Fatal(err)
	}
	// A is held: B's arrival puts the cache over its cap, but A stays.
	imB, err := c.Acquire(ctx, b, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(imA.Layers[1]); err != nil {
		t.Fatalf("a held image was evicted: %v", err)
	}
	if err := imA.Release(); err != nil {
		t.Fatal(err)
	}
	if err := imB.Release(); err != nil {
		t.Fatal(err)
	}
	// C comes: A, the least recently used, goes; B, younger, would
	// bring the cache within its cap after A, so it stays.
	imC, err := c.Acquire(ctx, cc, "")
	if err != nil {
		t.Fatal(err)
	}
	defer imC.Release()
	if _, err := os.Stat(imA.Layers[1]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("least recently used image kept: %v", err)
	}
	if _, err := os.Stat(imA.Layers[0]); err != nil {
		t.Errorf("a layer other images share was removed: %v", err)
	}
	if _, err := os.Stat(imC.Layers[1]); err != nil {
		t.Errorf("the image just pulled was evicted: %v", err)
	}
}

// A hostile layer cannot write outside its directory through "..",
// absolute names or symbolic links; device nodes and setuid bits do not
// survive.
func TestHostileLayer(t *testing.T) {
	needRoot(t)
	parent := t.TempDir()
	root := filepath.Join(parent, "fs")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	b := layerTar(t,
		entry{name: "../escaped", body: "x"},
		entry{name: "/abs", body: "x"},
		entry{name: "bin/su", body: "x", mode: 0o4755},
		entry{name: "bin/sg", body: "x", mode: 0o2755},
		entry{name: "dev/sda", typ: tar.TypeBlock},
		entry{name: "dev/null", typ: tar.TypeChar},
		entry{name: "fifo", typ: tar.TypeFifo},
		entry{name: "hostroot", typ: tar.TypeSymlink, link: "/"},
		entry{name: "up", typ: tar.TypeSymlink, link: "../.."},
		entry{name: "hard", typ: tar.TypeLink, link: "../../etc/passwd"},
	)
	if _, err := unpackLayer(bytes.NewReader(b), root); err != nil {
		// The hard link's target is resolved beneath the layer: there is
		// no etc/passwd there.
		if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, unix.ENOENT) {
			t.Fatalf("unpack: %v", err)
		}
	}
	for _, through := range []string{"hostroot/tmp/pwned", "up/pwned"} {
		b := layerTar(t, entry{name: "hostroot", typ: tar.TypeSymlink, link: "/"},
			entry{name: "up", typ: tar.TypeSymlink, link: "../.."}, entry{name: through, body: "x"})
		if _, err := unpackLayer(bytes.NewReader(b), root); !errors.Is(err, ErrHostile) {
			t.Errorf("write through a symbolic link %s: %v, want ErrHostile", through, err)
		}
	}
	if _, err := os.Stat("/tmp/pwned"); err == nil {
		t.Fatal("a layer wrote /tmp/pwned on the host")
	}
	es, _ := os.ReadDir(parent)
	if len(es) != 1 {
		t.Errorf("the layer wrote beside its directory: %v", es)
	}
	for _, p := range []string{"escaped", "abs"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("%s not kept inside the layer: %v", p, err)
		}
	}
	checkTame(t, root)
	for _, p := range []string{"dev/sda", "dev/null", "fifo"} {
		if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
			t.Errorf("%s was made", p)
		}
	}
}

// checkTame fails if anything under root is setuid, setgid or a device
// other than an overlayfs whiteout.
func checkTame(t testing.TB, root string) {
	t.Helper()
	_ = filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		if info.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			t.Errorf("%s keeps its setuid/setgid bit: %v", p, info.Mode())
		}
		if info.Mode()&os.ModeDevice != 0 {
			if st, ok := info.Sys().(*unix.Stat_t); !ok || st.Rdev != 0 || info.Mode()&os.ModeCharDevice == 0 {
				t.Errorf("%s is a device: %v", p, info.Mode())
			}
		}
		return nil
	})
}

// FuzzUnpackLayer feeds arbitrary tar streams to the unpacker as root:
// whatever it makes stays in the layer's directory and is tame.
func FuzzUnpackLayer(f *testing.F) {
	f.Add(layerTar(f, entry{name: "a/../../b", body: "x"}, entry{name: "l", typ: tar.TypeSymlink, link: "/etc"},
		entry{name: "l/x", body: "x"}, entry{name: "s", body: "x", mode: 0o6777}, entry{name: "d", typ: tar.TypeChar},
		entry{name: "h", typ: tar.TypeLink, link: "l"}, entry{name: ".wh.x"}, entry{name: ".wh..wh..opq"}))
	f.Fuzz(func(t *testing.T, b []byte) {
		needRoot(t)
		parent := t.TempDir()
		root := filepath.Join(parent, "fs")
		if err := os.Mkdir(root, 0o755); err != nil {
			t.Fatal(err)
		}
		_, _ = unpackLayer(bytes.NewReader(b), root)
		if es, _ := os.ReadDir(parent); len(es) != 1 {
			t.Errorf("the layer wrote beside its directory: %v", es)
		}
		checkTame(t, root)
	})
}

// bigImage is an image of 50 MiB of incompressible files in 5 layers.
func bigImage(b *testing.B) v1.Image {
	var layers []v1.Layer
	for i := range 5 {
		var es []entry
		for j := range 10 {
			body := make([]byte, 1<<20)
			for k := range body {
				body[k] = byte((k*7919 + j*104729 + i*1299709) >> 3)
			}
			es = append(es, entry{name: fmt.Sprintf("l%d/f%d", i, j), body: string(body)})
		}
		layers = append(layers, layer(b, layerTar(b, es...)))
	}
	return image(b, layers...)
}

// BenchmarkAcquire50MBCold pulls a 50 MiB image from an OCI layout
// into an empty cache: read, verify, unpack, sync.
func BenchmarkAcquire50MBCold(b *testing.B) {
	needRoot(b)
	dir := filepath.Join(b.TempDir(), "layout")
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		b.Fatal(err)
	}
	if err := p.AppendImage(bigImage(b)); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(50 << 20)
	b.ReportAllocs()
	for b.Loop() {
		c, err := New(b.TempDir(), 0, nil)
		if err != nil {
			b.Fatal(err)
		}
		img, err := Open(context.Background(), dir, Registries{})
		if err != nil {
			b.Fatal(err)
		}
		im, err := c.Acquire(context.Background(), img, "")
		if err != nil {
			b.Fatal(err)
		}
		im.Release()
	}
}

// BenchmarkAcquire50MBWarm acquires the same image once it is cached.
func BenchmarkAcquire50MBWarm(b *testing.B) {
	needRoot(b)
	dir := filepath.Join(b.TempDir(), "layout")
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		b.Fatal(err)
	}
	if err := p.AppendImage(bigImage(b)); err != nil {
		b.Fatal(err)
	}
	c, err := New(b.TempDir(), 0, nil)
	if err != nil {
		b.Fatal(err)
	}
	acquire := func() *Image {
		img, err := Open(context.Background(), dir, Registries{})
		if err != nil {
			b.Fatal(err)
		}
		im, err := c.Acquire(context.Background(), img, "")
		if err != nil {
			b.Fatal(err)
		}
		return im
	}
	acquire().Release()
	b.ReportAllocs()
	for b.Loop() {
		im := acquire()
		if im.Unpacked != 0 {
			b.Fatalf("a cached image unpacked %d layers", im.Unpacked)
		}
		im.Release()
	}
}

// TestEvictionLRUReuse: an image used again, whose record is unchanged
// and so only has its time set, counts as the most recently used.
func TestEvictionLRUReuse(t *testing.T) {
	needRoot(t)
	c := newCache(t, 150<<10) // two of the three images
	mk := func(n string) v1.Image {
		return image(t, layer(t, layerTar(t, entry{name: n, body: string(bytes.Repeat([]byte(n), 60<<10))})))
	}
	a, b, cc := mk("a"), mk("b"), mk("c")
	ctx := context.Background()
	use := func(img v1.Image) *Image {
		t.Helper()
		im, err := c.Acquire(ctx, img, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := im.Release(); err != nil {
			t.Fatal(err)
		}
		return im
	}
	imA := use(a)
	record := filepath.Join(c.dir, "images", strings.TrimPrefix(imA.ID, "sha256:")+".json")
	before, err := os.Stat(record)
	if err != nil {
		t.Fatal(err)
	}
	old := before.ModTime().Add(-time.Hour)
	if err := os.Chtimes(record, old, old); err != nil {
		t.Fatal(err)
	}
	imB := use(b)
	use(a) // A again: now the most recent, B the least
	after, err := os.Stat(record)
	if err != nil {
		t.Fatal(err)
	}
	if !after.ModTime().After(old) || !os.SameFile(before, after) {
		t.Errorf("A's record after its second use: time %v (was %v), same file %v; want a later time on the same file",
			after.ModTime(), old, os.SameFile(before, after))
	}
	imC, err := c.Acquire(ctx, cc, "")
	if err != nil {
		t.Fatal(err)
	}
	defer imC.Release()
	if _, err := os.Stat(imB.Layers[0]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the least recently used image, B, kept: %v", err)
	}
	if _, err := os.Stat(imA.Layers[0]); err != nil {
		t.Errorf("A, used again after B, was evicted: %v", err)
	}
}
