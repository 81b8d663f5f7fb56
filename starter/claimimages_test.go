package starter

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A claim keeps the images its jobs ran in for its next jobs, until it
// ends; each job's copy leaves the release to the claim. An image read
// from a file that changed is let go and read again; past
// maxClaimImages, the oldest goes.
func TestClaimImages(t *testing.T) {
	released := map[string]int{}
	image := func(id string) *Image {
		return &Image{ID: id, Unpacked: 2, Release: func() error { released[id]++; return nil }}
	}
	var c claimImages
	first := c.keep("reg/a:1", fileStamp{}, image("a"))
	if first.ID != "a" || first.Unpacked != 2 {
		t.Errorf("the first job's copy: %+v", first)
	}
	_ = first.Release()
	im, ok := c.get("reg/a:1", fileStamp{})
	if !ok || im.ID != "a" || im.Unpacked != 0 {
		t.Fatalf("kept image: %+v %v", im, ok)
	}
	_ = im.Release()
	if released["a"] != 0 {
		t.Errorf("a job released the claim's image")
	}

	dir := t.TempDir()
	tar := filepath.Join(dir, "img.tar")
	if err := os.WriteFile(tar, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	s1, err := stampOf(tar)
	if err != nil {
		t.Fatal(err)
	}
	c.keep(tar, s1, image("file1"))
	if _, ok := c.get(tar, s1); !ok {
		t.Errorf("an unchanged file's image is not kept")
	}
	later := time.Now().Add(time.Second)
	if err := os.Chtimes(tar, later, later); err != nil {
		t.Fatal(err)
	}
	s2, err := stampOf(tar)
	if err != nil || s2 == s1 {
		t.Fatalf("stamp of a changed file: %+v %v", s2, err)
	}
	if _, ok := c.get(tar, s2); ok || released["file1"] != 1 {
		t.Errorf("a changed file's image: kept %v, released %d times", ok, released["file1"])
	}

	// An OCI layout is stamped by its index.
	layout := filepath.Join(dir, "layout")
	if err := os.Mkdir(layout, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(layout, "index.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	sl, err := stampOf(layout)
	var st syscall.Stat_t
	if err != nil || syscall.Stat(filepath.Join(layout, "index.json"), &st) != nil || sl.mtime != st.Mtim || sl.size != 2 {
		t.Errorf("layout stamp %+v %v", sl, err)
	}
	if _, err := stampOf(filepath.Join(dir, "missing")); err == nil {
		t.Errorf("a missing image file has a stamp")
	}

	for _, id := range []string{"b", "c", "d", "e"} {
		c.keep("reg/"+id, fileStamp{}, image(id))
	}
	if _, ok := c.get("reg/a:1", fileStamp{}); ok || released["a"] != 1 {
		t.Errorf("the oldest image beyond %d: kept %v, released %d times", maxClaimImages, ok, released["a"])
	}
	c.release()
	for _, id := range []string{"b", "c", "d", "e"} {
		if released[id] != 1 {
			t.Errorf("image %s released %d times at the claim's end", id, released[id])
		}
	}

	var none *claimImages
	if im := none.keep("x", fileStamp{}, image("x")); im.ID != "x" {
		t.Errorf("no claim: %+v", im)
	}
	if _, ok := none.get("x", fileStamp{}); ok {
		t.Errorf("no claim keeps an image")
	}
	none.release()
}
