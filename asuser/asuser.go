// Package asuser lets a daemon running as root open a file that a user
// named, with that user's own permissions, as HTCondor's daemons switch to
// the user's privileges before they touch a user's files.
//
// A path in a job ad (its event log, say) comes from the submitter: opened
// as root it would reach any file root can, /etc/shadow included, and a
// symbolic link planted by the user would redirect root's write. OpenFile
// instead makes the kernel check every component as the user would: the
// open runs on one locked OS thread whose file-system uid and gid
// (setfsuid, setfsgid) and supplementary groups are the user's, which also
// drops root's override of file permissions on that thread; then the
// thread's credentials are put back. Nothing else in the process changes.
package asuser

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// A Credential is a user's identity for file access.
type Credential struct {
	UID, GID uint32
	// Groups are the supplementary groups.
	Groups []uint32
}

// Lookup returns the credential of the user named name, with their
// supplementary groups.
func Lookup(name string) (Credential, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return Credential{}, fmt.Errorf("look up user %s: %w", name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return Credential{}, fmt.Errorf("look up user %s: %w", name, err)
	}
	c := Credential{UID: uint32(uid), GID: uint32(gid)}
	gids, err := u.GroupIds()
	if err != nil {
		return Credential{}, fmt.Errorf("groups of user %s: %w", name, err)
	}
	for _, g := range gids {
		n, err := strconv.ParseUint(g, 10, 32)
		if err != nil {
			return Credential{}, fmt.Errorf("groups of user %s: %w", name, err)
		}
		c.Groups = append(c.Groups, uint32(n))
	}
	return c, nil
}

// OpenFile opens path as os.OpenFile would for the user c. The last
// component is never followed if it is a symbolic link (O_NOFOLLOW), and
// the descriptor is not inherited by children. A file it creates belongs
// to the user. When the calling process is not root it can only be the
// user it is: OpenFile then opens the file plainly.
func OpenFile(c Credential, path string, flag int, perm os.FileMode) (*os.File, error) {
	flag |= unix.O_NOFOLLOW | unix.O_CLOEXEC
	var f *os.File
	err := Do(c, func() error {
		var err error
		f, err = os.OpenFile(path, flag, perm)
		return err
	})
	if err != nil && f != nil {
		// The file opened but root's credentials could not be put back.
		f.Close()
		f = nil
	}
	return f, err
}

// Do calls fn with the file-system identity of the user c: every path
// fn opens, creates, renames or removes is checked by the kernel as the
// user's, and what it creates belongs to the user. fn runs on one locked
// OS thread and must do its file work there: it must not start
// goroutines or block on others that do. When the calling process is
// not root it can only be the user it is: Do then calls fn plainly.
func Do(c Credential, fn func() error) error {
	if os.Geteuid() != 0 {
		return fn()
	}
	done := make(chan error, 1)
	// fn runs on a thread of its own, locked for the duration; if root's
	// credentials cannot be put back, the goroutine exits still locked,
	// and the runtime ends the thread rather than reuse it.
	go func() {
		runtime.LockOSThread()
		restore, err := become(c)
		if err != nil {
			done <- err
			if restore() == nil {
				runtime.UnlockOSThread()
			}
			return
		}
		err = fn()
		if rerr := restore(); rerr != nil {
			done <- rerr
			return
		}
		runtime.UnlockOSThread()
		done <- err
	}()
	return <-done
}

// become sets the calling thread's supplementary groups, fsgid and fsuid
// to c's, and returns a function that puts root's back. x/sys/unix makes
// these calls for the calling thread only (unlike package syscall, which
// changes every thread).
func become(c Credential) (restore func() error, err error) {
	oldGroups, err := unix.Getgroups()
	if err != nil {
		return func() error { return nil }, fmt.Errorf("get groups: %w", err)
	}
	oldGID, _ := unix.SetfsgidRetGid(-1)
	oldUID, _ := unix.SetfsuidRetUid(-1)
	restore = func() error {
		unix.SetfsuidRetUid(oldUID)
		unix.SetfsgidRetGid(oldGID)
		if err := unix.Setgroups(oldGroups); err != nil {
			return fmt.Errorf("restore groups: %w", err)
		}
		if u, _ := unix.SetfsuidRetUid(-1); u != oldUID {
			return fmt.Errorf("restore fsuid: still %d", u)
		}
		if g, _ := unix.SetfsgidRetGid(-1); g != oldGID {
			return fmt.Errorf("restore fsgid: still %d", g)
		}
		return nil
	}
	groups := make([]int, len(c.Groups))
	for i, g := range c.Groups {
		groups[i] = int(g)
	}
	if err := unix.Setgroups(groups); err != nil {
		return restore, fmt.Errorf("set groups of uid %d: %w", c.UID, err)
	}
	unix.SetfsgidRetGid(int(c.GID))
	unix.SetfsuidRetUid(int(c.UID))
	// setfsuid and setfsgid report no errors: check that they took.
	if g, _ := unix.SetfsgidRetGid(-1); g != int(c.GID) {
		return restore, fmt.Errorf("set fsgid %d: still %d", c.GID, g)
	}
	if u, _ := unix.SetfsuidRetUid(-1); u != int(c.UID) {
		return restore, fmt.Errorf("set fsuid %d: still %d", c.UID, u)
	}
	return restore, nil
}
