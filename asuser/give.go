package asuser

import (
	"io/fs"
	"os"
	"path/filepath"
)

// GiveTree gives dir, and everything in it, to uid and gid: what root made
// for a user's job (its scratch directory and inputs). A directory for
// which keep reports true stays as it is, with everything in it. No link
// is followed, and nothing outside dir changes owner even while a
// process of the user's renames things in it and puts links in their
// place: the walk and every change of owner stay beneath dir (os.Root).
func GiveTree(dir string, uid, gid int, keep func(path string) bool) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	return fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if keep != nil && d.IsDir() && keep(filepath.Join(dir, p)) {
			return filepath.SkipDir
		}
		return root.Lchown(p, uid, gid)
	})
}
