package checkpoint

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// An image travels as a zstd stream of a tar archive: the image
// directory's files in name order, then ManifestName, the list of every
// file with its size and SHA-256, sealed with the pool's key (see Seal).
// The manifest comes last so that Pack makes one pass; a reader checks
// every file against it before the image counts as good, and a reader
// that restores checks the seal too.
//
// An image may hold subdirectories (the pre-dumps of a pre-copy
// checkpoint, pre.1/, pre.2/, ...) and relative symbolic links that stay
// inside it (CRIU's "parent" link from a dump to the pre-dump it builds
// on). Directories travel implicitly, as the paths of their files; a
// link travels as a tar symlink entry and is listed in the manifest
// with its target. The stream is untrusted input: a reader refuses a
// link that is absolute, that climbs out of the image, or that climbs
// after descending (which could climb out through another link), and
// any entry below a link.

// ManifestName is the last entry of a packed image.
const ManifestName = "MANIFEST"

// maxManifest bounds the manifest a reader accepts.
const maxManifest = 1 << 20

// ErrBadImage reports a packed image that is corrupted, truncated or
// not an image at all.
var ErrBadImage = errors.New("bad checkpoint image")

// Manifest lists the files of an image.
type Manifest struct {
	Version int       `json:"version"`
	Files   []FileSum `json:"files"`
	// Seal is the HMAC of the files and the job they belong to, in hex
	// (see Seal).
	Seal string `json:"seal,omitempty"`
	// Info is the dump's Result when the image holds InfoName.
	Info *Result `json:"-"`
}

// FileSum is one file of an image.
type FileSum struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// Link is the target of a symbolic link, which has no size or sum.
	Link string `json:"link,omitempty"`
}

// Size is the total size of the image's files, uncompressed.
func (m *Manifest) Size() int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Size
	}
	return n
}

// Pack writes the image in dir to w, compressed and sealed with seal,
// and returns its manifest. The image directory must hold only regular
// files, directories and symbolic links that stay inside it (see
// validLink).
func Pack(w io.Writer, dir string, seal *Seal) (*Manifest, error) {
	if seal == nil {
		return nil, errors.New("pack: no seal")
	}
	zw, err := zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		return nil, fmt.Errorf("pack: %w", err)
	}
	tw := tar.NewWriter(zw)
	m := &Manifest{Version: 1}
	buf := make([]byte, 1<<20)
	// WalkDir visits in lexical order, and does not follow links.
	err = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		switch {
		case name == ManifestName:
			return fmt.Errorf("%s is not a regular image file", name)
		case e.IsDir():
			return nil
		case e.Type()&fs.ModeSymlink != 0:
			sum, err := packLink(tw, p, name)
			if err != nil {
				return err
			}
			m.Files = append(m.Files, sum)
			return nil
		case !e.Type().IsRegular():
			return fmt.Errorf("%s is not a regular image file", name)
		}
		sum, err := packFile(tw, p, name, buf)
		if err != nil {
			return err
		}
		m.Files = append(m.Files, sum)
		return nil
	})
	if err != nil {
		zw.Close()
		return nil, fmt.Errorf("pack %s: %w", dir, err)
	}
	m.Seal = seal.sum(m.Files)
	mb, err := json.Marshal(m)
	if err != nil {
		zw.Close()
		return nil, fmt.Errorf("pack: %w", err)
	}
	hdr := &tar.Header{Name: ManifestName, Mode: 0o600, Size: int64(len(mb)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	err = tw.WriteHeader(hdr)
	if err == nil {
		_, err = tw.Write(mb)
	}
	if err == nil {
		err = tw.Close()
	}
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", dir, err)
	}
	return m, nil
}

// packLink appends the symbolic link at path, named name in the image,
// to tw; the link must pass validLink, as a reader checks.
func packLink(tw *tar.Writer, path, name string) (FileSum, error) {
	target, err := os.Readlink(path)
	if err != nil {
		return FileSum{}, err
	}
	if !validLink(name, target) {
		return FileSum{}, fmt.Errorf("link %s -> %s leaves the image", name, target)
	}
	hdr := &tar.Header{Name: name, Linkname: target, Mode: 0o777, Typeflag: tar.TypeSymlink, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return FileSum{}, err
	}
	return FileSum{Name: name, Link: target}, nil
}

// packFile appends one file to tw and returns its sum.
func packFile(tw *tar.Writer, path, name string, buf []byte) (FileSum, error) {
	f, err := os.Open(path)
	if err != nil {
		return FileSum{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return FileSum{}, err
	}
	hdr := &tar.Header{Name: name, Mode: 0o600, Size: fi.Size(), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return FileSum{}, err
	}
	h := sha256.New()
	n, err := io.CopyBuffer(io.MultiWriter(tw, h), io.LimitReader(f, fi.Size()), buf)
	if err != nil {
		return FileSum{}, fmt.Errorf("%s: %w", name, err)
	}
	if n != fi.Size() {
		return FileSum{}, fmt.Errorf("%s: changed while packed", name)
	}
	return FileSum{Name: name, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// Verify reads a packed image from r to its end and checks that it is
// whole: a zstd stream that carries its content checksum (Pack's does)
// and whose checksums hold, a well-formed tar archive of image files
// whose names, sizes and links are exactly its manifest's, nothing after
// the manifest. The error wraps ErrBadImage if it is not. It keeps
// nothing, and it neither recomputes the files' SHA-256 nor checks the
// seal: it is for the shadow, which holds no key, and which receives the
// image through TLS, whose authentication already covers every byte in
// transit; zstd's checksum covers the packer's output. Only the machine
// that restores must trust the image, and Unpack, which checks every
// sum and the seal, is what makes it so.
func Verify(r io.Reader) (*Manifest, error) {
	r, err := withChecksum(r)
	if err != nil {
		return nil, err
	}
	return readImage(r, false, func(string) (io.WriteCloser, error) { return nopCloser{io.Discard}, nil },
		func(string, string) error { return nil })
}

// zstdMagic starts every zstd frame.
const zstdMagic = "\x28\xb5\x2f\xfd"

// withChecksum checks that the zstd stream on r begins with a frame that
// carries a content checksum (bit 2 of its header descriptor), and
// returns r as it was. Pack writes one frame.
func withChecksum(r io.Reader) (io.Reader, error) {
	var head [len(zstdMagic) + 1]byte
	n, err := io.ReadFull(r, head[:])
	if err != nil || string(head[:len(zstdMagic)]) != zstdMagic {
		return nil, bad(errors.New("not a zstd stream"))
	}
	if head[len(zstdMagic)]&(1<<2) == 0 {
		return nil, bad(errors.New("the zstd stream carries no checksum"))
	}
	return io.MultiReader(bytes.NewReader(head[:n]), r), nil
}

// Unpack reads a packed image from r into dir, which must not exist, and
// checks it against its manifest and the manifest's seal. The directory
// and its files are owner-only. On any error dir is removed; an error
// wrapping ErrBadImage says the image itself is bad, one also wrapping
// ErrForged that its seal is not seal's. Everything is made through an
// os.Root of dir, so that nothing lands outside it even if a link check
// missed.
func Unpack(r io.Reader, dir string, seal *Seal) (*Manifest, error) {
	if seal == nil {
		return nil, errors.New("unpack: no seal to check")
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("unpack: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("unpack: %w", err), os.RemoveAll(dir))
	}
	defer root.Close()
	parent := func(name string) error {
		if d := path.Dir(name); d != "." {
			return root.MkdirAll(d, 0o700)
		}
		return nil
	}
	m, err := readImage(r, true, func(name string) (io.WriteCloser, error) {
		if err := parent(name); err != nil {
			return nil, err
		}
		return root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	}, func(name, target string) error {
		if err := parent(name); err != nil {
			return err
		}
		return root.Symlink(target, name)
	})
	if err == nil {
		err = seal.check(m)
	}
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	return m, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// readImage decompresses and walks a packed image, handing each file to
// a writer from create and each symbolic link to link, and checks the
// files' names, sizes and links against the manifest, and with sums
// their SHA-256 too.
func readImage(r io.Reader, sums bool, create func(name string) (io.WriteCloser, error), link func(name, target string) error) (*Manifest, error) {
	// With sums, one goroutine decodes ahead while this one hashes and
	// writes; without, there is too little to do here for the hand-off
	// between the two to pay (docs/checkpoint-bench.md).
	decoders := 1
	if sums {
		decoders = 2
	}
	zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(decoders))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadImage, err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	var (
		got   []FileSum
		links []string // the names of the links so far
		info  []byte
		m     *Manifest
		buf   = make([]byte, 1<<20)
	)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, bad(err)
		}
		if m != nil {
			return nil, bad(fmt.Errorf("%s after the manifest", hdr.Name))
		}
		if (hdr.Typeflag != tar.TypeReg && hdr.Typeflag != tar.TypeSymlink) || !validName(hdr.Name) {
			return nil, bad(fmt.Errorf("entry %q is not an image file", hdr.Name))
		}
		if hdr.Name == ManifestName && hdr.Typeflag == tar.TypeReg {
			if m, err = readManifest(tr, hdr.Size); err != nil {
				return nil, err
			}
			continue
		}
		if slices.ContainsFunc(got, func(f FileSum) bool { return f.Name == hdr.Name }) {
			return nil, bad(fmt.Errorf("%s twice", hdr.Name))
		}
		if slices.ContainsFunc(links, func(l string) bool { return strings.HasPrefix(hdr.Name, l+"/") }) {
			return nil, bad(fmt.Errorf("%s is below a link", hdr.Name))
		}
		if hdr.Typeflag == tar.TypeSymlink {
			if !validLink(hdr.Name, hdr.Linkname) {
				return nil, bad(fmt.Errorf("link %s -> %s leaves the image", hdr.Name, hdr.Linkname))
			}
			if err := link(hdr.Name, hdr.Linkname); err != nil {
				return nil, fmt.Errorf("unpack %s: %w", hdr.Name, err)
			}
			links = append(links, hdr.Name)
			got = append(got, FileSum{Name: hdr.Name, Link: hdr.Linkname})
			continue
		}
		w, err := create(hdr.Name)
		if err != nil {
			return nil, fmt.Errorf("unpack %s: %w", hdr.Name, err)
		}
		dsts := []io.Writer{w}
		h := sha256.New()
		if sums {
			dsts = append(dsts, h)
		}
		var keep bytes.Buffer
		if hdr.Name == InfoName && hdr.Size <= maxManifest {
			dsts = append(dsts, &keep)
		}
		dst := dsts[0]
		if len(dsts) > 1 {
			dst = io.MultiWriter(dsts...)
		}
		n, err := io.CopyBuffer(dst, tr, buf)
		if cerr := w.Close(); err == nil && cerr != nil {
			return nil, fmt.Errorf("unpack %s: %w", hdr.Name, cerr)
		}
		if err != nil {
			return nil, bad(fmt.Errorf("%s: %w", hdr.Name, err))
		}
		if hdr.Name == InfoName {
			info = keep.Bytes()
		}
		sum := FileSum{Name: hdr.Name, Size: n}
		if sums {
			sum.SHA256 = hex.EncodeToString(h.Sum(nil))
		}
		got = append(got, sum)
	}
	if m == nil {
		return nil, bad(errors.New("no manifest: the image is truncated"))
	}
	// Read to the end of the stream so that zstd checks its own sums.
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return nil, bad(err)
	}
	want := m.Files
	if !sums {
		want = withoutSums(m.Files)
	}
	if !slices.Equal(got, want) {
		return nil, bad(mismatch(got, want))
	}
	if info != nil {
		m.Info = new(Result)
		if err := json.Unmarshal(info, m.Info); err != nil {
			return nil, bad(fmt.Errorf("%s: %w", InfoName, err))
		}
	}
	return m, nil
}

// ErrNoInfo reports a packed image without the dump's Result (InfoName).
var ErrNoInfo = errors.New("the image holds no dump information")

// PeekInfo reads the dump's Result (InfoName) from a packed image, reading
// only as far as that file (it sorts before the memory pages). It does not
// check the image against its manifest: it is meant for images already
// verified, as a Store keeps them.
func PeekInfo(r io.Reader) (*Result, error) {
	zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadImage, err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil, ErrNoInfo
		}
		if err != nil {
			return nil, bad(err)
		}
		switch hdr.Name {
		case ManifestName:
			return nil, ErrNoInfo
		case InfoName:
			if hdr.Size > maxManifest {
				return nil, bad(fmt.Errorf("%s of %d bytes", InfoName, hdr.Size))
			}
			var res Result
			if err := json.NewDecoder(tr).Decode(&res); err != nil {
				return nil, bad(fmt.Errorf("%s: %w", InfoName, err))
			}
			return &res, nil
		}
	}
}

// readManifest decodes the manifest entry.
func readManifest(r io.Reader, size int64) (*Manifest, error) {
	if size > maxManifest {
		return nil, bad(fmt.Errorf("manifest of %d bytes", size))
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, bad(err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, bad(fmt.Errorf("manifest: %w", err))
	}
	if m.Version != 1 {
		return nil, bad(fmt.Errorf("manifest version %d", m.Version))
	}
	return &m, nil
}

// validName accepts the names of an image directory's files: relative
// slash-separated paths with no empty, "." or ".." element.
func validName(name string) bool {
	if name == "" || strings.ContainsRune(name, 0) {
		return false
	}
	for _, e := range strings.Split(name, "/") {
		if e == "" || e == "." || e == ".." {
			return false
		}
	}
	return true
}

// validLink accepts the target of the link name in an image when it
// stays inside the image: relative, some ".." first, no more of them
// than name has directories above it, then only plain names. Climbing
// only first, from the link's own directory (a real one: nothing is
// unpacked below a link), means a target cannot climb out through
// another link, which is itself held to the same rule.
func validLink(name, target string) bool {
	if target == "" || strings.ContainsRune(target, 0) || path.IsAbs(target) {
		return false
	}
	depth := strings.Count(name, "/")
	elems := strings.Split(target, "/")
	up := 0
	for up < len(elems) && elems[up] == ".." {
		up++
	}
	if up > depth {
		return false
	}
	for _, e := range elems[up:] {
		if e == "" || e == "." || e == ".." {
			return false
		}
	}
	return true
}

// withoutSums returns a copy of files without their SHA-256, to compare
// with files read without computing it.
func withoutSums(files []FileSum) []FileSum {
	out := slices.Clone(files)
	for i := range out {
		out[i].SHA256 = ""
	}
	return out
}

// mismatch says how the files read differ from the manifest.
func mismatch(got, want []FileSum) error {
	byName := make(map[string]FileSum, len(got))
	for _, f := range got {
		byName[f.Name] = f
	}
	for _, w := range want {
		g, ok := byName[w.Name]
		switch {
		case !ok:
			return fmt.Errorf("%s is missing", w.Name)
		case g.Size != w.Size:
			return fmt.Errorf("%s has %d bytes, the manifest says %d", w.Name, g.Size, w.Size)
		case g.SHA256 != w.SHA256:
			return fmt.Errorf("%s: checksum mismatch", w.Name)
		}
		delete(byName, w.Name)
	}
	for name := range byName {
		return fmt.Errorf("%s is not in the manifest", name)
	}
	return errors.New("files out of order")
}

func bad(err error) error { return fmt.Errorf("%w: %v", ErrBadImage, err) }
