package starter

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
)

// imagesByRef is an ImageRunner that knows some images by reference and
// records what it was asked for.
type imagesByRef struct {
	images map[string]*Image
	asked  []string
}

func (r *imagesByRef) Image(_ context.Context, ref string, _ *RegistryCredentials) (*Image, error) {
	r.asked = append(r.asked, ref)
	im, ok := r.images[ref]
	if !ok {
		return nil, io.ErrUnexpectedEOF
	}
	c := *im
	c.Release = func() error { return nil }
	return &c, nil
}

// A restore uses the image its checkpoint was made in: the same one as
// the job's reference now names, or, once its tag has moved on, the
// checkpoint's pulled by digest from the same repository. A file that
// changed cannot be pinned.
func TestPinImage(t *testing.T) {
	const oldDigest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	old := &Image{ID: "sha256:aaaa", Digest: oldDigest, Layers: []string{"/l/old"}}
	moved := &Image{ID: "sha256:bbbb", Digest: "sha256:2222222222222222222222222222222222222222222222222222222222222222", Layers: []string{"/l/new"}}
	runner := &imagesByRef{images: map[string]*Image{
		"reg.example:5000/lab/tool:1":            moved,
		"reg.example:5000/lab/tool@" + oldDigest: old,
	}}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	held := func(ref string, im *Image) *heldImage {
		c := *im
		c.Release = func() error { return nil }
		return &heldImage{ref: ref, src: strings.TrimPrefix(ref, "docker://"), runner: runner, im: &c, logger: logger}
	}

	// The checkpoint was made in the image the tag named then.
	dir := t.TempDir()
	if err := held("docker://reg.example:5000/lab/tool:1", old).record(dir); err != nil {
		t.Fatal(err)
	}
	// Unchanged: nothing is pulled.
	h, task := held("docker://reg.example:5000/lab/tool:1", old), &Task{}
	if err := h.pin(context.Background(), dir, task); err != nil || len(runner.asked) != 0 {
		t.Errorf("pin of the same image: %v, asked for %v", err, runner.asked)
	}
	// The tag moved: the checkpoint's image comes by digest.
	h, task = held("docker://reg.example:5000/lab/tool:1", moved), &Task{}
	if err := h.pin(context.Background(), dir, task); err != nil {
		t.Fatalf("pin after the tag moved: %v", err)
	}
	if want := "reg.example:5000/lab/tool@" + oldDigest; len(runner.asked) != 1 || runner.asked[0] != want {
		t.Errorf("asked for %v, want %s", runner.asked, want)
	}
	if h.im.ID != old.ID || len(task.ImageLayers) != 1 || task.ImageLayers[0] != "/l/old" {
		t.Errorf("pinned to %s with layers %v", h.im.ID, task.ImageLayers)
	}
	// A file on the submit side that changed cannot be.
	h = held("/home/alice/img.tar", moved)
	if err := h.pin(context.Background(), dir, &Task{}); err == nil || !strings.Contains(err.Error(), "no longer the one") {
		t.Errorf("pin of a changed file: %v", err)
	}
}
