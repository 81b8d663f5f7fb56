package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// benchBusybox is the static busybox the bench's container image is made
// of: /bin/true in the image is busybox's.
const benchBusybox = "/bin/busybox"

// writeBenchImage writes, as an OCI image layout in dir, a one-layer
// image of the machine's static busybox with /bin/true, for the bench's
// jobs to run in their own image (bench throughput --image).
func writeBenchImage(dir string) error {
	bb, err := os.ReadFile(benchBusybox)
	if err != nil {
		return fmt.Errorf("the bench image needs a static busybox: %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range []string{"bin/", "tmp/"} {
		mode := int64(0o755)
		if d == "tmp/" {
			mode = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: mode}); err != nil {
			return err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "bin/busybox", Mode: 0o755, Size: int64(len(bb))}); err != nil {
		return err
	}
	if _, err := tw.Write(bb); err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/true", Linkname: "busybox"}); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		return fmt.Errorf("bench image layer: %w", err)
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		return fmt.Errorf("bench image: %w", err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("bench image layout: %w", err)
	}
	if err := p.AppendImage(img); err != nil {
		return fmt.Errorf("bench image layout: %w", err)
	}
	return nil
}
