package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// ImageRootDir, in a job's scratch directory, holds the upper and work
// directories of the overlay that is its root when it runs in its own
// image. It is root's alone (0700): the job sees its scratch directory
// at JobScratchDir but cannot enter this, and its writes to its root
// count against its disk like its other files. A checkpoint carries it
// in an archive of its own (see Job.Checkpoint) and a restore makes it
// afresh: an archive of the scratch directory leaves it out.
const ImageRootDir = ".harrier_root"

// imageRootsDir holds the mount points of the jobs' overlay roots of
// stateRoot, and beside each (as NAME.mnt) the top layer of that root,
// which holds the directories the container mounts things at: on the
// memory file system if there is one (see memStateDir), where a
// directory costs microseconds, not the milliseconds an execute
// machine's busy disk file system takes.
func imageRootsDir(stateRoot string) string {
	if dir := memStateDir(memStateParents); dir != "" {
		return filepath.Join(dir, "roots", stateRootKey(stateRoot))
	}
	return diskImageRootsDir(stateRoot)
}

// diskImageRootsDir is where the image roots go on a machine without a
// usable memory file system.
func diskImageRootsDir(stateRoot string) string { return filepath.Join(stateRoot, "roots") }

// allImageRootsDirs are the places image roots of stateRoot may have
// been left.
func allImageRootsDirs(stateRoot string) []string {
	dirs := []string{diskImageRootsDir(stateRoot)}
	if dir := imageRootsDir(stateRoot); dir != dirs[0] {
		dirs = append(dirs, dir)
	}
	return dirs
}

// mountPointsLayer is the name of the top layer beside a root's mount
// point.
func mountPointsLayer(target string) string { return target + ".mnt" }

// makeImageRootDir makes the directory of the job's root in its
// scratch directory afresh, root's alone, with its upper and work
// directories, and returns it open. Whatever had the name (an input of
// the job's, say) is removed first. The scratch directory is the job's
// user's, who may rename what is in it: so everything done with the
// root's directory afterwards goes through this descriptor, never the
// name, lest a directory of the machine's be used in its place.
func makeImageRootDir(scratch string) (*os.File, error) {
	if scratch == "" {
		return nil, errors.New("a job in a container image needs a scratch directory")
	}
	name := filepath.Join(scratch, ImageRootDir)
	if err := os.RemoveAll(name); err != nil {
		return nil, fmt.Errorf("prepare image root: %w", err)
	}
	if err := os.Mkdir(name, 0o700); err != nil {
		return nil, fmt.Errorf("prepare image root: %w", err)
	}
	dir, err := os.OpenFile(name, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("prepare image root: %w", err)
	}
	// Only root can have made a directory of root's there in between.
	var st unix.Stat_t
	err = unix.Fstat(int(dir.Fd()), &st)
	if err == nil && (int(st.Uid) != os.Geteuid() || st.Mode&0o7777 != 0o700) {
		err = fmt.Errorf("%s is not the directory made for it", name)
	}
	for _, d := range []struct {
		name string
		mode uint32
	}{{"upper", 0o755}, {"work", 0o700}} {
		if err == nil {
			err = unix.Mkdirat(int(dir.Fd()), d.name, d.mode)
		}
		// The upper directory is the image's root directory's stand-in:
		// the slot user must be able to walk into "/", whatever the umask.
		if err == nil {
			err = unix.Fchmodat(int(dir.Fd()), d.name, d.mode, 0)
		}
	}
	if err != nil {
		dir.Close()
		return nil, fmt.Errorf("prepare image root: %w", err)
	}
	return dir, nil
}

// inDir names what is called name in the open directory dir, through
// the descriptor.
func inDir(dir *os.File, name string) string {
	return fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), name)
}

// mountImageRoot mounts the overlay root of container id, running task t
// in its image, with the upper and work directories of rootDir (see
// makeImageRootDir), and returns its mount point. mountPoints are the
// directories the container mounts things at: they are made in a layer
// of their own above the image's, so that neither the container's init
// nor the overlay makes them, one by one, in the job's upper directory.
func mountImageRoot(stateRoot, id string, t *Task, rootDir *os.File, mountPoints []string) (string, error) {
	target := filepath.Join(imageRootsDir(stateRoot), id)
	// A leftover of this container's name can only be a dead job's.
	if err := unmountImageRoot(target); err != nil {
		return "", err
	}
	top := mountPointsLayer(target)
	for _, d := range []string{target, top} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", fmt.Errorf("prepare image root: %w", err)
		}
	}
	// The slot user must be able to walk into "/".
	if err := os.Chmod(top, 0o755); err != nil {
		return "", fmt.Errorf("prepare image root: %w", err)
	}
	// overlayfs lists the top layer first.
	lower := slices.Clone(t.ImageLayers)
	slices.Reverse(lower)
	for _, l := range lower {
		if strings.ContainsAny(l, ":,") {
			return "", fmt.Errorf("image layer directory %q cannot be named in overlay options", l)
		}
	}
	for _, p := range mountPoints {
		if err := makeMountPoint(top, lower, p); err != nil {
			return "", fmt.Errorf("prepare image root: mount point %s: %w", p, err)
		}
	}
	opts := fmt.Sprintf("lowerdir=%s:%s,upperdir=%s,workdir=%s", top, strings.Join(lower, ":"),
		inDir(rootDir, "upper"), inDir(rootDir, "work"))
	if err := unix.Mount("overlay", target, "overlay", unix.MS_NODEV|unix.MS_NOSUID, opts); err != nil {
		return "", fmt.Errorf("mount the job's image root: %w", err)
	}
	return target, nil
}

// makeMountPoint makes the directory p (absolute, clean) in the top
// layer top, above the image's layers (top first), each of its
// directories with the owner and mode it has in the image, so that the
// job sees the image's directories as they were. A path the image
// leads elsewhere (a symbolic link, say /home -> var/home) is left to
// the container's init, which follows it within the root.
func makeMountPoint(top string, layers []string, p string) error {
	dir, in := top, layeredDir{layers: layers}
	for _, name := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		dir = filepath.Join(dir, name)
		var ok bool
		if in, ok = in.child(name); !ok {
			return nil
		}
		if err := os.Mkdir(dir, 0o700); errors.Is(err, os.ErrExist) {
			continue
		} else if err != nil {
			return err
		}
		if err := os.Chown(dir, in.uid, in.gid); err != nil {
			return err
		}
		if err := os.Chmod(dir, in.mode); err != nil {
			return err
		}
	}
	return nil
}

// layeredDir is a directory of an image as overlayfs shows it: the mode
// and owner the topmost layer holding it gives it (root's 0755 if none
// does, or one hides it with a whiteout), and the layers' directories
// that make it up, top first.
type layeredDir struct {
	mode     os.FileMode
	uid, gid int
	layers   []string
}

// child looks for name in the directory, in each of its layers' where
// the image has it, top first, as overlayfs does; ok is false if the
// topmost is not a directory. It never follows a symbolic link.
func (d layeredDir) child(name string) (c layeredDir, ok bool) {
	found := false
	for _, l := range d.layers {
		p := filepath.Join(l, name)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			continue
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			if !found && (st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != 0) {
				return layeredDir{}, false
			}
			break // a whiteout, or what the directory above hides
		}
		if !found {
			found = true
			c.mode = os.FileMode(st.Mode&0o777) | unixModeBits(st.Mode)
			c.uid, c.gid = int(st.Uid), int(st.Gid)
		}
		c.layers = append(c.layers, p)
		if opaque(p) {
			break
		}
	}
	if !found {
		return layeredDir{mode: 0o755}, true
	}
	return c, true
}

// opaque reports whether an unpacked layer's directory hides the layers
// below it (see imagecache's unpacking of ".wh..wh..opq").
func opaque(dir string) bool {
	var b [1]byte
	n, err := unix.Lgetxattr(dir, "trusted.overlay.opaque", b[:])
	return err == nil && n == 1 && b[0] == 'y'
}

// unixModeBits are the set-ID and sticky bits of a stat mode, as
// os.FileMode has them.
func unixModeBits(m uint32) os.FileMode {
	var fm os.FileMode
	if m&unix.S_ISUID != 0 {
		fm |= os.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		fm |= os.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		fm |= os.ModeSticky
	}
	return fm
}

// unmountImageRoot unmounts and removes a job's overlay mount point and
// its top layer, if there are.
func unmountImageRoot(target string) error {
	err := unix.Unmount(target, unix.MNT_DETACH)
	if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount image root %s: %w", target, err)
	}
	if err := os.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove image root %s: %w", target, err)
	}
	if err := os.RemoveAll(mountPointsLayer(target)); err != nil {
		return fmt.Errorf("remove image root %s: %w", target, err)
	}
	return nil
}
