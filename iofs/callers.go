package iofs

import "github.com/hanwen/go-fuse/v2/fuse"

// callerGuard lets only root and the job's user use the mount. A root
// starter's mount must be open to other users (allow_other) for the job to
// use it, and iofs answers every request with the rights of the job's
// owner on the submit side; without the guard, any user of the execute
// machine who finds the mount point reads the owner's files.
//
// Every request that names a file, or opens one, is checked. Requests on a
// file already open (read, write, fsync, release) are not: their handle
// was opened by a caller the guard let in, and the kernel's write-back
// sends them from its own threads. What the kernel answers from its caches
// without asking (a cached name's attributes) is not seen here; the
// contents of a file and of a directory need an open.
type callerGuard struct {
	fuse.RawFileSystem
	uid uint32 // the job's user; root is let in too
}

func (g *callerGuard) refused(h *fuse.InHeader) bool {
	return h.Uid != 0 && h.Uid != g.uid
}

func (g *callerGuard) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	if g.refused(h) {
		return fuse.EACCES
	}
	return g.RawFileSystem.Lookup(cancel, h, name, out)
}

func (g *callerGuard) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	if g.refused(&in.InHeader) {
		return fuse.EACCES
	}
	return g.RawFileSystem.GetAttr(cancel, in, out)
}

func (g *callerGuard) Statx(cancel <-chan struct{}, in *fuse.StatxIn, out *fuse.StatxOut) fuse.Status {
	if g.refused(&in.InHeader) {
		return fuse.EACCES
	}
	return g.RawFileSystem.Statx(cancel, in, out)
}

func (g *callerGuard) SetAttr(cancel <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	if g.refused(&in.InHeader) {
		return fuse.EACCES
	}
	return g.RawFileSystem.SetAttr(cancel, in, out)
}

func (g *callerGuard) Mknod(cancel <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	if g.refused(&in.InHeader) {
		return fuse.EACCES
	}
	return g.RawFileSystem.Mknod(cancel, in, name, out)
}

func (g *callerGuard) Mkdir(cancel <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	if g.refused(&in.InHeader) {
		return fuse.EACCES
	}
	return g.RawFileSystem.Mkdir(cancel, in, name, out)
}

func (g *callerGuard) Unlink(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	if g.refused(h) {
		return fuse.EACCES
	}
	return g.RawFileSystem.Unlink(cancel, h, name)
}

func (g *callerGuard) Rmdir(cancel <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	if g.refused(h) {
		return fuse.EACCES
	}
	return g.RawFileSystem.Rmdir(cancel, h, name)
}

func (g *callerGuard) Rename(cancel <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	if g.refused(&in.InHeader) {
		return fuse.EACCES
	}
	return g.RawFileSystem.Rename(cancel, in, oldName, newName)
}

func (g *callerGuard) Link(cancel <-chan struct{}, in *fuse.LinkIn, name string, out *fuse.EntryOut) fuse.Status {
	if g.refused(&in.InHeader) {
		return fuse.EACCES
	}
	return g.RawFileSystem.Link(cancel, in, name, out)
}

func (g *callerGuard) Symlink(cancel <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) fuse.Status {
	if g.refused(h) {
		return fuse.EACCES
	}
	return g.RawFileSystem.Symlink(cancel, h, target, name, out)
}

func (g *callerGuard) Readlink(cancel <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	if g.refused(h) {
		return nil, fuse.EACCES
	}
	return g.RawFileSystem.Readlink(cancel, h)
}

func (g *callerGuard) Access(cancel <-chan struct{}, in *fuse.AccessIn) fuse.Status {
	if g.refused(&in.InHeader) {
		return fuse.EACCES
	}
	return g.RawFileSystem.Access(cancel, in)
}

func (g *callerGuard) GetXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string, dest []byte) (uint32, fuse.Status) {
	if g.refused(h) {
		return 0, fuse.EACCES
	}
	return g.RawFileSystem.GetXAttr(cancel, h, attr, dest)
}

func (g *callerGuard) ListXAttr(cancel <-chan struct{}, h *fuse.InHeader, dest []byte) (uint32, fuse.Status) {
	if g.refused(h) {
		return 0, fuse.EACCES
	}
	return g.RawFileSystem.ListXAttr(cancel, h, dest)
}

func (g *callerGuard) SetXAttr(cancel <-chan struct{}, in *fuse.SetXAttrIn, attr string, data []byte) fuse.Status {
	if g.refused(&in.InHeader) {
		return fuse.EACCES
	}
	return g.RawFileSystem.SetXAttr(cancel, in, attr, data)
}

func (g *callerGuard) RemoveXAttr(cancel <-chan struct{}, h *fuse.InHeader, attr string) fuse.Status {
	if g.refused(h) {
		return fuse.EACCES
	}
	return g.RawFileSystem.RemoveXAttr(cancel, h, attr)
}

func (g *callerGuard) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	if g.refused(&in.InHeader) {
		return fuse.EACCES
	}
	return g.RawFileSystem.Create(cancel, in, name, out)
}

func (g *callerGuard) Tmpfile(cancel <-chan struct{}, in *fuse.CreateIn, out *fuse.CreateOut) fuse.Status {
	if g.refused(&in.InHeader) {
		return fuse.EACCES
	}
	return g.RawFileSystem.Tmpfile(cancel, in, out)
}

func (g *callerGuard) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if g.refused(&in.InHeader) {
		return fuse.EACCES
	}
	return g.RawFileSystem.Open(cancel, in, out)
}

func (g *callerGuard) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if g.refused(&in.InHeader) {
		return fuse.EACCES
	}
	return g.RawFileSystem.OpenDir(cancel, in, out)
}

func (g *callerGuard) StatFs(cancel <-chan struct{}, h *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	if g.refused(h) {
		return fuse.EACCES
	}
	return g.RawFileSystem.StatFs(cancel, h, out)
}
