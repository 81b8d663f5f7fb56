package imagecache

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// Whiteout names of the OCI image layout.
const (
	whiteoutPrefix = ".wh."
	opaqueWhiteout = ".wh..wh..opq"
)

// ErrHostile reports a layer that tries to reach outside its directory.
var ErrHostile = errors.New("layer entry reaches outside its directory")

// unpackLayer writes the tar stream r into the empty directory root in
// the form overlayfs reads as a lower directory, and returns the bytes
// its regular files hold. See the package documentation for what it
// refuses and strips.
func unpackLayer(r io.Reader, root string) (int64, error) {
	rootFd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("open layer directory: %w", err)
	}
	defer unix.Close(rootFd)
	var size int64
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return size, nil
		}
		if err != nil {
			return size, fmt.Errorf("read layer: %w", err)
		}
		name := path.Clean("/" + h.Name)[1:]
		if name == "" {
			continue // the layer's root itself
		}
		n, err := unpackEntry(rootFd, name, h, tr)
		if err != nil {
			return size, fmt.Errorf("layer entry %q: %w", h.Name, err)
		}
		size += n
	}
}

// unpackEntry writes one entry at the cleaned relative path name.
func unpackEntry(rootFd int, name string, h *tar.Header, r io.Reader) (int64, error) {
	dir, base := path.Split(name)
	dirFd, err := openDir(rootFd, strings.TrimSuffix(dir, "/"))
	if err != nil {
		return 0, err
	}
	defer unix.Close(dirFd)
	switch {
	case base == opaqueWhiteout:
		// dirFd is an O_PATH descriptor, which fsetxattr does not take.
		return 0, unix.Setxattr(fmt.Sprintf("/proc/self/fd/%d", dirFd), "trusted.overlay.opaque", []byte("y"), 0)
	case strings.HasPrefix(base, whiteoutPrefix):
		hidden := strings.TrimPrefix(base, whiteoutPrefix)
		if err := clear(dirFd, hidden); err != nil {
			return 0, err
		}
		// overlayfs's whiteout: a character device 0:0, made here and
		// nowhere else.
		return 0, unix.Mknodat(dirFd, hidden, unix.S_IFCHR, 0)
	}
	// Setuid and setgid bits go: nothing in an image gains privilege.
	mode := uint32(h.Mode) & 0o1777
	switch h.Typeflag {
	case tar.TypeDir:
		if err := unix.Mkdirat(dirFd, base, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return 0, err
		}
		fd, err := openDir(dirFd, base)
		if err != nil {
			return 0, err
		}
		defer unix.Close(fd)
		return 0, setOwnerMode(fd, h, mode)
	case tar.TypeReg:
		if err := clear(dirFd, base); err != nil {
			return 0, err
		}
		fd, err := unix.Openat(dirFd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return 0, err
		}
		f := os.NewFile(uintptr(fd), base)
		defer f.Close()
		n, err := io.Copy(f, r)
		if err != nil {
			return n, err
		}
		return n, setOwnerMode(fd, h, mode)
	case tar.TypeSymlink:
		// The target is kept as it is: it is resolved in the job's root,
		// never here.
		if err := clear(dirFd, base); err != nil {
			return 0, err
		}
		if err := unix.Symlinkat(h.Linkname, dirFd, base); err != nil {
			return 0, err
		}
		return 0, unix.Fchownat(dirFd, base, h.Uid, h.Gid, unix.AT_SYMLINK_NOFOLLOW)
	case tar.TypeLink:
		target := path.Clean("/" + h.Linkname)[1:]
		tdir, tbase := path.Split(target)
		tFd, err := openDir(rootFd, strings.TrimSuffix(tdir, "/"))
		if err != nil {
			return 0, err
		}
		defer unix.Close(tFd)
		if err := clear(dirFd, base); err != nil {
			return 0, err
		}
		// linkat without AT_SYMLINK_FOLLOW links the entry itself, never
		// what a symbolic link points to.
		return 0, unix.Linkat(tFd, tbase, dirFd, base, 0)
	default:
		// Devices, FIFOs and the rest: an image brings none.
		return 0, nil
	}
}

// openDir opens rel (slash-separated, relative) beneath the directory
// dirFd, making missing directories, following no symbolic link and
// never leaving dirFd's tree.
func openDir(dirFd int, rel string) (int, error) {
	fd, err := unix.Dup(dirFd)
	if err != nil {
		return -1, err
	}
	if rel == "" || rel == "." {
		return fd, nil
	}
	for _, c := range strings.Split(rel, "/") {
		if err := unix.Mkdirat(fd, c, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			unix.Close(fd)
			return -1, err
		}
		next, err := unix.Openat2(fd, c, &unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		unix.Close(fd)
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EXDEV) {
			return -1, fmt.Errorf("%w: %s is not a directory", ErrHostile, rel)
		}
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// clear removes whatever non-directory entry holds name in dirFd, so
// that a later entry replaces an earlier one, as tar does.
func clear(dirFd int, name string) error {
	err := unix.Unlinkat(dirFd, name, 0)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	if errors.Is(err, unix.EISDIR) {
		return fmt.Errorf("%s is a directory", name)
	}
	return err
}

// setOwnerMode gives the open file fd (an O_PATH descriptor of a
// directory, or a file opened for writing) the header's owner and mode.
func setOwnerMode(fd int, h *tar.Header, mode uint32) error {
	p := fmt.Sprintf("/proc/self/fd/%d", fd)
	if err := unix.Chown(p, h.Uid, h.Gid); err != nil {
		return err
	}
	return unix.Chmod(p, mode)
}
