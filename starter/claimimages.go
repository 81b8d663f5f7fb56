package starter

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// A claim's jobs are one owner's, and most run in the image the one
// before ran in. Reading the image again for each (its layout or
// tarball through iofs, or a registry's manifest, and the owner's
// registry credentials from the shadow) cost each start more than the
// rest of the image's handling, so a claim keeps the images its jobs
// ran in, held in the machine's cache (not evicted) until the claim
// ends. A registry reference is resolved once a claim, as Docker
// resolves one once a machine; a file on the submit side is read again
// once it changed (its size, modification or change time).

// maxClaimImages bounds the images a claim keeps.
const maxClaimImages = 4

// claimImages are the images a claim keeps, by the reference its jobs
// name. A nil *claimImages keeps none.
type claimImages struct {
	mu     sync.Mutex
	images []claimImage // oldest first
}

// claimImage is an image a claim keeps.
type claimImage struct {
	ref   string
	stamp fileStamp // of the file it was read from; zero for a registry's
	im    *Image
}

// fileStamp tells a changed file from the one read before.
type fileStamp struct {
	size         int64
	mtime, ctime syscall.Timespec
}

// stampOf is the stamp of the image file, or OCI layout, at path.
func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err == nil && fi.IsDir() {
		fi, err = os.Stat(filepath.Join(path, "index.json"))
	}
	if err != nil {
		return fileStamp{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStamp{}, errors.New("no file status")
	}
	return fileStamp{size: st.Size, mtime: st.Mtim, ctime: st.Ctim}, nil
}

// get is the image the claim keeps for ref, read from a file of stamp
// (zero for a registry's), as a job's: its Release leaves it to the
// claim. ok is false if there is none, or it was read from a file that
// has changed since (the claim lets that one go).
func (c *claimImages) get(ref string, stamp fileStamp) (*Image, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, ci := range c.images {
		if ci.ref != ref {
			continue
		}
		if ci.stamp != stamp {
			c.drop(i)
			return nil, false
		}
		return jobsCopy(ci.im, 0), true
	}
	return nil, false
}

// keep makes the claim keep im, just read for ref from a file of stamp,
// and returns it as a job's (see get). A claim that keeps none returns
// im itself.
func (c *claimImages) keep(ref string, stamp fileStamp, im *Image) *Image {
	if c == nil {
		return im
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.images) == maxClaimImages {
		c.drop(0)
	}
	c.images = append(c.images, claimImage{ref: ref, stamp: stamp, im: im})
	return jobsCopy(im, im.Unpacked)
}

// drop lets the claim's i-th image go. The caller holds c.mu.
func (c *claimImages) drop(i int) {
	_ = c.images[i].im.Release()
	c.images = append(c.images[:i], c.images[i+1:]...)
}

// release lets every image of the claim go, at its end.
func (c *claimImages) release() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.images) > 0 {
		c.drop(0)
	}
}

// jobsCopy is im for one job, for which unpacked of its layers were
// unpacked: the claim releases the image, not the job.
func jobsCopy(im *Image, unpacked int) *Image {
	c := *im
	c.Unpacked = unpacked
	c.Release = func() error { return nil }
	return &c
}
