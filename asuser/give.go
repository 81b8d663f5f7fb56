package asuser

import (
	"io/fs"
	"os"
	"path/filepath"
)

// GiveTree gives dir, and everything in it, to uid and gid: what root made
// for a user's job (its scratch directory and inputs) before the user may
// touch it, for no link is followed. A directory for which keep reports
// true stays as it is, with everything in it.
func GiveTree(dir string, uid, gid int, keep func(path string) bool) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if keep != nil && d.IsDir() && keep(p) {
			return filepath.SkipDir
		}
		return os.Lchown(p, uid, gid)
	})
}
