package imagecache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sys/unix"
)

// ErrDigest reports a layer whose content is not what its image says.
var ErrDigest = errors.New("layer content does not match its digest")

// ErrPlatform reports an image built for another operating system or
// architecture.
var ErrPlatform = errors.New("image is for another platform")

// Cache is an execute machine's image store (see the package
// documentation). Its methods are safe for concurrent use, also by
// several processes opening the same directory.
type Cache struct {
	dir      string
	maxBytes int64
	log      *slog.Logger
}

// New opens the cache in dir, making it if needed. maxBytes caps the
// cache's unpacked size (0: no cap); images that jobs hold are never
// evicted, so it is exceeded while they need more.
func New(dir string, maxBytes int64, log *slog.Logger) (*Cache, error) {
	if log == nil {
		log = slog.Default()
	}
	for _, d := range []string{"layers", "images", "locks", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, fmt.Errorf("image cache: %w", err)
		}
	}
	return &Cache{dir: dir, maxBytes: maxBytes, log: log}, nil
}

// Image is an image in the cache, held for a job until Release.
type Image struct {
	// ID is the digest of the image's configuration ("sha256:…"), the
	// same wherever the image came from.
	ID string
	// Digest is the digest of its manifest, by which a registry serves
	// exactly this image ("name@sha256:…").
	Digest string
	// Layers are the directories of its layers, bottom first.
	Layers []string
	// Config is what the image says about running it (entrypoint,
	// environment, working directory).
	Config v1.Config
	// Unpacked counts the layers this Acquire fetched and unpacked; the
	// others were in the cache already.
	Unpacked int
	lock     *os.File
}

// Release says that the job no longer uses the image.
func (im *Image) Release() error { return im.lock.Close() }

// record is an image's file in images/.
type record struct {
	Layers []string  `json:"layers"` // diff ID hex, bottom first
	Config v1.Config `json:"config"`
	// Names are the registry references the image was pulled as, newest
	// first, at most maxNames: "registry/repo:tag" and
	// "registry/repo@sha256:…", as machines advertise them (Names).
	Names []string `json:"names,omitempty"`
}

// maxNames bounds the names an image's record keeps.
const maxNames = 4

// Acquire makes img's layers ready in the cache and holds it for a job:
// it is not evicted until Release. Layers already there are used as
// they are; the others are fetched, verified and unpacked, each once
// whoever else pulls it at the same time. ref is the registry reference
// img was read from ("" for a file): the image is recorded under it and
// under its digest in the same repository.
func (c *Cache) Acquire(ctx context.Context, img v1.Image, ref string) (*Image, error) {
	id, err := img.ConfigName()
	if err != nil {
		return nil, fmt.Errorf("read image configuration: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("read image configuration: %w", err)
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, fmt.Errorf("read image manifest: %w", err)
	}
	if (cf.OS != "" && cf.OS != "linux") || (cf.Architecture != "" && cf.Architecture != runtime.GOARCH) {
		return nil, fmt.Errorf("%w: %s/%s, this machine is linux/%s", ErrPlatform, cf.OS, cf.Architecture, runtime.GOARCH)
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("read image layers: %w", err)
	}
	// The configuration names the layers' diff IDs: asking the layers
	// themselves would read and hash some of them (an OCI layout's) even
	// when they are cached.
	if len(cf.RootFS.DiffIDs) != len(layers) {
		return nil, fmt.Errorf("image configuration names %d layers, its manifest %d", len(cf.RootFS.DiffIDs), len(layers))
	}
	rec := record{Config: cf.Config, Names: refNames(ref, digest)}
	for _, d := range cf.RootFS.DiffIDs {
		if d.Algorithm != "sha256" || len(d.Hex) != 64 || strings.Trim(d.Hex, "0123456789abcdef") != "" {
			return nil, fmt.Errorf("image configuration: bad layer digest %s", d)
		}
		rec.Layers = append(rec.Layers, d.Hex)
	}
	lock, err := c.hold(id.Hex, rec)
	if err != nil {
		return nil, err
	}
	im := &Image{ID: id.String(), Digest: digest.String(), Config: cf.Config, lock: lock}
	for i, l := range layers {
		made, err := c.ensureLayer(ctx, l, rec.Layers[i])
		if err != nil {
			lock.Close()
			return nil, err
		}
		if made {
			im.Unpacked++
		}
		im.Layers = append(im.Layers, filepath.Join(c.dir, "layers", rec.Layers[i], "fs"))
	}
	if err := c.Evict(); err != nil {
		c.log.Warn("cannot evict images", "err", err)
	}
	return im, nil
}

// hold records the image and takes its shared lock, under the cache lock
// so that no eviction runs in between.
func (c *Cache) hold(idHex string, rec record) (*os.File, error) {
	cl, err := lockFile(filepath.Join(c.dir, "cache.lock"), unix.LOCK_EX, true)
	if err != nil {
		return nil, fmt.Errorf("image cache: %w", err)
	}
	defer cl.Close()
	p := filepath.Join(c.dir, "images", idHex+".json")
	// Names it was pulled as before stay, after this pull's.
	was, err := os.ReadFile(p)
	if err == nil {
		var old record
		if json.Unmarshal(was, &old) == nil {
			for _, n := range old.Names {
				if !contains(rec.Names, n) && len(rec.Names) < maxNames {
					rec.Names = append(rec.Names, n)
				}
			}
		}
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	// The record's time is the image's last use, for eviction. An
	// unchanged record (a machine's jobs using the same image again and
	// again) only has its time set: a new file each job cost more.
	if bytes.Equal(b, was) {
		now := time.Now()
		if err := os.Chtimes(p, now, now); err != nil {
			return nil, fmt.Errorf("record image: %w", err)
		}
	} else {
		if err := os.WriteFile(p+".tmp", b, 0o600); err != nil {
			return nil, fmt.Errorf("record image: %w", err)
		}
		if err := os.Rename(p+".tmp", p); err != nil {
			return nil, fmt.Errorf("record image: %w", err)
		}
	}
	lock, err := lockFile(filepath.Join(c.dir, "images", idHex+".lock"), unix.LOCK_SH, true)
	if err != nil {
		return nil, fmt.Errorf("image cache: %w", err)
	}
	return lock, nil
}

// ensureLayer unpacks layer l (diff ID hex d) unless it is there. It
// reports whether it unpacked it.
func (c *Cache) ensureLayer(ctx context.Context, l v1.Layer, d string) (bool, error) {
	lk, err := lockFile(filepath.Join(c.dir, "locks", d), unix.LOCK_EX, true)
	if err != nil {
		return false, fmt.Errorf("image cache: %w", err)
	}
	defer lk.Close()
	final := filepath.Join(c.dir, "layers", d)
	if _, err := os.Stat(final); err == nil {
		return false, nil
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	// A pull that died left this; no one else works on it while we hold
	// the layer's lock.
	tmp := filepath.Join(c.dir, "tmp", d)
	if err := os.RemoveAll(tmp); err != nil {
		return false, fmt.Errorf("unpack layer %s: %w", d, err)
	}
	if err := c.unpack(ctx, l, d, tmp); err != nil {
		_ = os.RemoveAll(tmp)
		return false, fmt.Errorf("unpack layer sha256:%s: %w", d, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		_ = os.RemoveAll(tmp)
		return false, fmt.Errorf("unpack layer %s: %w", d, err)
	}
	if err := syncDir(filepath.Join(c.dir, "layers")); err != nil {
		return false, fmt.Errorf("unpack layer %s: %w", d, err)
	}
	c.log.Info("image layer unpacked", "layer", "sha256:"+d)
	return true, nil
}

// unpack fetches, verifies and unpacks l into tmp/fs, and writes its
// size beside it, all on disk before it returns.
func (c *Cache) unpack(ctx context.Context, l v1.Layer, d, tmp string) error {
	fsDir := filepath.Join(tmp, "fs")
	if err := os.MkdirAll(fsDir, 0o755); err != nil {
		return err
	}
	rc, err := l.Uncompressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	h := sha256.New()
	r := io.TeeReader(ctxReader{ctx, rc}, h)
	n, err := unpackLayer(r, fsDir)
	if err != nil {
		return err
	}
	// What follows the tar's end (padding) counts in the digest too.
	if _, err := io.Copy(io.Discard, r); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != d {
		return fmt.Errorf("%w: got sha256:%s", ErrDigest, got)
	}
	if err := os.WriteFile(filepath.Join(tmp, "size"), []byte(strconv.FormatInt(n, 10)), 0o600); err != nil {
		return err
	}
	f, err := os.Open(tmp)
	if err != nil {
		return err
	}
	defer f.Close()
	// One syncfs rather than an fsync per file.
	return unix.Syncfs(int(f.Fd()))
}

// Evict removes the least recently used images no job holds until the
// cache is within its cap, then every layer no image names.
func (c *Cache) Evict() error {
	cl, err := lockFile(filepath.Join(c.dir, "cache.lock"), unix.LOCK_EX, true)
	if err != nil {
		return fmt.Errorf("image cache: %w", err)
	}
	defer cl.Close()
	sizes, total, err := c.layerSizes()
	if err != nil {
		return err
	}
	imgs, err := c.records()
	if err != nil {
		return err
	}
	if c.maxBytes > 0 && total > c.maxBytes {
		sort.Slice(imgs, func(i, j int) bool { return imgs[i].used < imgs[j].used })
		kept := imgs[:0]
		for i, im := range imgs {
			if total <= c.maxBytes {
				kept = append(kept, imgs[i:]...)
				break
			}
			if !c.dropImage(im.id) {
				kept = append(kept, im)
				continue
			}
			// Only what no other image shares frees space.
			total -= unshared(im, imgs, sizes)
		}
		imgs = kept
	}
	named := map[string]bool{}
	for _, im := range imgs {
		for _, l := range im.rec.Layers {
			named[l] = true
		}
	}
	for d := range sizes {
		if !named[d] {
			if err := c.removeLayer(d); err != nil {
				return err
			}
		}
	}
	return nil
}

// cachedImage is an image record read back.
type cachedImage struct {
	id   string
	used int64 // modification time, ns
	rec  record
	gone bool
}

// unshared is the size of im's layers that no other remaining image names;
// it marks im gone.
func unshared(im cachedImage, imgs []cachedImage, sizes map[string]int64) int64 {
	for i := range imgs {
		if imgs[i].id == im.id {
			imgs[i].gone = true
		}
	}
	var n int64
	for _, l := range im.rec.Layers {
		shared := false
		for _, o := range imgs {
			if !o.gone && contains(o.rec.Layers, l) {
				shared = true
			}
		}
		if !shared {
			n += sizes[l]
		}
	}
	return n
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// dropImage removes an image's record unless a job holds it.
func (c *Cache) dropImage(id string) bool {
	p := filepath.Join(c.dir, "images", id)
	lk, err := lockFile(p+".lock", unix.LOCK_EX, false)
	if err != nil {
		return false
	}
	defer lk.Close()
	if err := os.Remove(p + ".json"); err != nil && !errors.Is(err, os.ErrNotExist) {
		c.log.Warn("cannot evict image", "image", "sha256:"+id, "err", err)
		return false
	}
	_ = os.Remove(p + ".lock")
	c.log.Info("image evicted", "image", "sha256:"+id)
	return true
}

// removeLayer takes a layer out of layers/ at once (a rename), then
// deletes its files.
func (c *Cache) removeLayer(d string) error {
	lk, err := lockFile(filepath.Join(c.dir, "locks", d), unix.LOCK_EX, true)
	if err != nil {
		return fmt.Errorf("image cache: %w", err)
	}
	defer lk.Close()
	gone := filepath.Join(c.dir, "tmp", d)
	_ = os.RemoveAll(gone)
	if err := os.Rename(filepath.Join(c.dir, "layers", d), gone); err != nil {
		return fmt.Errorf("remove layer %s: %w", d, err)
	}
	if err := os.RemoveAll(gone); err != nil {
		return fmt.Errorf("remove layer %s: %w", d, err)
	}
	return nil
}

// layerSizes reads the size of every layer in the cache, and their sum.
func (c *Cache) layerSizes() (map[string]int64, int64, error) {
	es, err := os.ReadDir(filepath.Join(c.dir, "layers"))
	if err != nil {
		return nil, 0, fmt.Errorf("image cache: %w", err)
	}
	sizes := map[string]int64{}
	var total int64
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(c.dir, "layers", e.Name(), "size"))
		if err != nil {
			return nil, 0, fmt.Errorf("image cache: %w", err)
		}
		n, _ := strconv.ParseInt(string(b), 10, 64)
		sizes[e.Name()] = n
		total += n
	}
	return sizes, total, nil
}

// records reads every image record.
func (c *Cache) records() ([]cachedImage, error) {
	es, err := os.ReadDir(filepath.Join(c.dir, "images"))
	if err != nil {
		return nil, fmt.Errorf("image cache: %w", err)
	}
	var out []cachedImage
	for _, e := range es {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		p := filepath.Join(c.dir, "images", e.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("image cache: %w", err)
		}
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("image cache: %w", err)
		}
		var rec record
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, fmt.Errorf("image record %s: %w", p, err)
		}
		out = append(out, cachedImage{id: id, used: info.ModTime().UnixNano(), rec: rec})
	}
	return out, nil
}

// refNames are the names an image pulled as ref with manifest digest
// gets: ref's full name and its digest's in the same repository.
func refNames(ref string, digest v1.Hash) []string {
	if ref == "" || filepath.IsAbs(ref) {
		return nil
	}
	r, err := name.ParseReference(strings.TrimPrefix(ref, "docker://"))
	if err != nil {
		return nil
	}
	byDigest := r.Context().Digest(digest.String()).Name()
	if r.Name() == byDigest {
		return []string{byDigest}
	}
	return []string{r.Name(), byDigest}
}

// NormalName is how a job's image reference ("docker://name:tag",
// "name", "registry/name@sha256:…") appears among the names machines
// advertise; "" for a file or what is no reference.
func NormalName(ref string) string {
	if ref == "" || filepath.IsAbs(ref) || strings.HasPrefix(ref, ".") {
		return ""
	}
	r, err := name.ParseReference(strings.TrimPrefix(ref, "docker://"))
	if err != nil {
		return ""
	}
	return r.Name()
}

// Names lists the names of the images in the cache in dir, most
// recently used first, at most max: what a machine advertises it holds.
// It only reads, and takes no lock: a name may be of an image being
// evicted.
func Names(dir string, max int) ([]string, error) {
	c := &Cache{dir: dir}
	imgs, err := c.records()
	if err != nil {
		return nil, err
	}
	sort.Slice(imgs, func(i, j int) bool { return imgs[i].used > imgs[j].used })
	var out []string
	for _, im := range imgs {
		for _, n := range im.rec.Names {
			if len(out) == max {
				return out, nil
			}
			out = append(out, n)
		}
	}
	return out, nil
}

// InExecuteDir is the directory of the image cache of the startd whose
// execute directory is executeDir, shared by its starters.
func InExecuteDir(executeDir string) string { return filepath.Join(executeDir, "images") }

// syncDir makes the directory's entries durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// ctxReader stops reading when ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (r ctxReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}
