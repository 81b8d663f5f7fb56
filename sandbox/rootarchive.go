package sandbox

import (
	"archive/tar"
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// A job in its own image writes to its root in its overlay's upper
// directory, and CRIU restores its processes only onto the root they
// were dumped from: the image's layers, which the restoring machine has
// from its own cache by digest, under that upper directory as the dump
// left it. So the job's checkpoint image carries the upper directory as
// rootArchive, a tar of it with what overlayfs keeps there besides the
// files (owners, whiteouts as 0/0 character devices, its trusted.overlay
// attributes such as a directory's opacity), put back before the
// restore mounts the overlay. Like the rest of the checkpoint image it
// is sealed by the pool's key, so only a pool starter made it; its names
// are still kept beneath the upper directory.

// rootArchive is the name of the upper directory's archive in a
// checkpoint image. CRIU reads only the files it knows.
const rootArchive = "harrier-root.tar"

// xattrPAX prefixes an extended attribute's PAX record in a tar.
const xattrPAX = "SCHILY.xattr."

// archiveUpper writes the upper directory of a job's root, upper, into
// imageDir as rootArchive. upper was opened before the job ran (see
// makeImageRootDir), and nothing beneath it leads out of it: links in
// it are the job's own.
func archiveUpper(upper *os.Root, imageDir string) error {
	f, err := os.OpenFile(filepath.Join(imageDir, rootArchive), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("archive the job's root: %w", err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	err = writeUpper(bw, upper)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("archive the job's root: %w", err)
	}
	return nil
}

// writeUpper writes the tree beneath upper to w as a tar.
func writeUpper(w io.Writer, upper *os.Root) error {
	tw := tar.NewWriter(w)
	err := fs.WalkDir(upper.FS(), ".", func(rel string, _ fs.DirEntry, err error) error {
		if err != nil || rel == "." {
			return err
		}
		info, err := upper.Lstat(rel)
		if err != nil {
			return err
		}
		var link string
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = upper.Readlink(rel); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		// Owners by number: the restoring machine's names may differ.
		h.Name, h.Uname, h.Gname = rel, "", ""
		if info.IsDir() {
			h.Name += "/"
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			if h.PAXRecords, err = xattrRecords(upper, rel); err != nil {
				return err
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		src, err := upper.OpenFile(rel, os.O_RDONLY|unix.O_NOFOLLOW, 0)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// xattrRecords reads the extended attributes of rel beneath upper that
// overlayfs and the job may have set (trusted.overlay.*, user.*) as PAX
// records. They are read by name in its directory, opened beneath
// upper, so that no link is followed.
func xattrRecords(upper *os.Root, rel string) (map[string]string, error) {
	dir, err := upper.Open(path.Dir(rel))
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	p := inDir(dir, path.Base(rel))
	buf := make([]byte, 4096)
	n, err := unix.Llistxattr(p, buf)
	if errors.Is(err, unix.ERANGE) {
		if n, err = unix.Llistxattr(p, nil); err == nil {
			buf = make([]byte, n)
			n, err = unix.Llistxattr(p, buf)
		}
	}
	if errors.Is(err, unix.ENOTSUP) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list attributes of %s: %w", rel, err)
	}
	var recs map[string]string
	for name := range strings.SplitSeq(string(buf[:n]), "\x00") {
		if !strings.HasPrefix(name, "trusted.overlay.") && !strings.HasPrefix(name, "user.") {
			continue
		}
		v := make([]byte, 256)
		m, err := unix.Lgetxattr(p, name, v)
		if errors.Is(err, unix.ERANGE) {
			if m, err = unix.Lgetxattr(p, name, nil); err == nil {
				v = make([]byte, m)
				m, err = unix.Lgetxattr(p, name, v)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("read attribute %s of %s: %w", name, rel, err)
		}
		if recs == nil {
			recs = map[string]string{}
		}
		recs[xattrPAX+name] = string(v[:m])
	}
	return recs, nil
}

// restoreUpper makes the directory of the root of the job working in
// scratch afresh (see makeImageRootDir), puts back in its upper
// directory the one archived in imageDir, and returns it open. An image
// without an archive is refused: its job was not dumped in its own
// image.
func restoreUpper(scratch, imageDir string) (*os.File, error) {
	f, err := os.Open(filepath.Join(imageDir, rootArchive))
	if errors.Is(err, os.ErrNotExist) {
		return nil, errors.New("the checkpoint does not hold the job's root: it was not made in a container image")
	}
	if err != nil {
		return nil, fmt.Errorf("put back the job's root: %w", err)
	}
	defer f.Close()
	dir, err := makeImageRootDir(scratch)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(inDir(dir, "upper"))
	if err == nil {
		err = extractUpper(bufio.NewReaderSize(f, 1<<20), root)
		root.Close()
	}
	if err != nil {
		dir.Close()
		return nil, fmt.Errorf("put back the job's root: %w", err)
	}
	return dir, nil
}

// extractUpper writes the tar in r beneath root, with owners, modes and
// attributes. Entries come parents first, as writeUpper wrote them.
func extractUpper(r io.Reader, root *os.Root) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean(h.Name)
		if !filepath.IsLocal(name) {
			return fmt.Errorf("%q is outside the job's root", h.Name)
		}
		mode := h.FileInfo().Mode()
		var fd *os.File
		switch h.Typeflag {
		case tar.TypeDir:
			if err := root.Mkdir(name, 0o700); err != nil {
				return err
			}
			fd, err = root.Open(name)
		case tar.TypeReg:
			fd, err = root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err == nil {
				_, err = io.Copy(fd, tr)
			}
		case tar.TypeSymlink:
			err = root.Symlink(h.Linkname, name)
		case tar.TypeChar:
			// A whiteout: the file is deleted from the image's layers.
			if h.Devmajor != 0 || h.Devminor != 0 {
				return fmt.Errorf("%s: a device node that is no whiteout", name)
			}
			var dir *os.File
			if dir, err = root.Open(path.Dir(name)); err == nil {
				err = unix.Mknodat(int(dir.Fd()), path.Base(name), unix.S_IFCHR, 0)
				dir.Close()
			}
		default:
			return fmt.Errorf("%s: cannot put back a file of type %q", name, h.Typeflag)
		}
		if err != nil {
			if fd != nil {
				fd.Close()
			}
			return err
		}
		if err := root.Lchown(name, h.Uid, h.Gid); err != nil {
			return err
		}
		if fd != nil {
			err = setAttrs(fd, mode, h.PAXRecords)
			if cerr := fd.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	}
}

// setAttrs gives an extracted file or directory its mode (after its
// owner, which would clear setuid bits) and extended attributes.
func setAttrs(f *os.File, mode fs.FileMode, pax map[string]string) error {
	if err := f.Chmod(mode & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)); err != nil {
		return err
	}
	for k, v := range pax {
		attr, ok := strings.CutPrefix(k, xattrPAX)
		if !ok {
			continue
		}
		if err := unix.Fsetxattr(int(f.Fd()), attr, []byte(v), 0); err != nil {
			return fmt.Errorf("set attribute %s: %w", attr, err)
		}
	}
	return nil
}
