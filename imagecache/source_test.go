package imagecache

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// An image reads the same from an OCI layout directory and from a
// docker-save tarball: the same configuration digest, the same layers.
func TestOpenLayoutAndTarball(t *testing.T) {
	img := image(t, layer(t, layerTar(t, entry{name: "etc/marker", body: "m"})))
	want, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "layout")
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	tarPath := filepath.Join(t.TempDir(), "img.tar")
	tag, _ := name.NewTag("example/img:1")
	if err := tarball.WriteToFile(tarPath, tag, img); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{dir, tarPath} {
		got, err := Open(context.Background(), src, Registries{})
		if err != nil {
			t.Fatalf("open %s: %v", src, err)
		}
		id, err := got.ConfigName()
		if err != nil || id != want {
			t.Errorf("%s: image %v %v, want %v", src, id, err, want)
		}
		ls, err := got.Layers()
		if err != nil || len(ls) != 1 {
			t.Errorf("%s: layers %v %v", src, ls, err)
		}
	}
	if _, err := Open(context.Background(), filepath.Join(t.TempDir(), "missing.tar"), Registries{}); err == nil {
		t.Error("a missing tarball opened")
	}
}
