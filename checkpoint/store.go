package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Store keeps the latest good packed image of each job, on the submit
// side. A new image replaces the old one only once it has been received
// completely, checked whole against its manifest (Verify) and synced to
// disk, and the replacement is an atomic rename: a crash or a bad upload
// at any point leaves the previous good image in place. Images are
// owner-only.
//
// A Store is safe for concurrent use by jobs with different names; the
// images of one job must be put by one caller at a time.
type Store struct {
	dir string
}

// OpenStore opens (making it, owner-only, if need be) the store in dir.
// Several Stores may be open on one directory (the shadows of one
// owner's jobs): each job's uploads are its own.
func OpenStore(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("image store: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("image store: %w", err)
	}
	return &Store{dir: dir}, nil
}

// removeStale removes the uploads of job that a crash left behind. Only
// job's own: another job's upload may be on its way, from another
// Store on the same directory.
func (s *Store) removeStale(job string) error {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return err
	}
	prefix := "." + job + ".tmp"
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			if err := os.Remove(filepath.Join(s.dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// path is where job's image lives.
func (s *Store) path(job string) (string, error) {
	if job == "" || job == "." || job == ".." || strings.HasPrefix(job, ".") || strings.ContainsAny(job, "/\x00") {
		return "", fmt.Errorf("image store: bad job name %q", job)
	}
	return filepath.Join(s.dir, job+".ckpt"), nil
}

// Put reads a packed image of job from r to its end and, if it is good,
// makes it the job's image; it first removes what an upload of job cut
// short by a crash left. On an error the previous image, if any, is
// still the job's image; an error wrapping ErrBadImage says the upload
// was corrupted or incomplete.
func (s *Store) Put(job string, r io.Reader) (*Manifest, error) {
	final, err := s.path(job)
	if err != nil {
		return nil, err
	}
	if err := s.removeStale(job); err != nil {
		return nil, fmt.Errorf("image store: %w", err)
	}
	tmp, err := os.CreateTemp(s.dir, "."+job+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("image store: %w", err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	m, err := Verify(io.TeeReader(r, tmp))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), final)
	}
	if err == nil {
		err = syncDir(s.dir)
	}
	if err != nil {
		return nil, fmt.Errorf("image store: put %s: %w", job, err)
	}
	return m, nil
}

// Open opens job's image for reading; the error wraps os.ErrNotExist if
// the job has none. The open file stays readable even if Put replaces
// the image meanwhile.
func (s *Store) Open(job string) (*os.File, error) {
	p, err := s.path(job)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("image store: %w", err)
	}
	return f, nil
}

// Info returns the dump's Result kept in job's image (see PeekInfo): the
// inputs to check before the image is restored, the dump's statistics.
func (s *Store) Info(job string) (*Result, error) {
	f, err := s.Open(job)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	res, err := PeekInfo(f)
	if err != nil {
		return nil, fmt.Errorf("image store: %s: %w", job, err)
	}
	return res, nil
}

// Stamp names job's current image as a file: a new image, put in its
// place, has another stamp. What the submit side keeps beside an image
// records it, to be used with that image only.
func (s *Store) Stamp(job string) (string, error) {
	p, err := s.path(job)
	if err != nil {
		return "", err
	}
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return "", fmt.Errorf("image store: %s: %w", job, err)
	}
	return fmt.Sprintf("%d:%d:%d.%09d", st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec), nil
}

// Remove deletes job's image; a job without one is not an error.
func (s *Store) Remove(job string) error {
	p, err := s.path(job)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("image store: %w", err)
	}
	return syncDir(s.dir)
}

// syncDir makes a rename or removal in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
