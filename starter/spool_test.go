package starter

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestSpoolRefusesWhatTheJobPutInItsPlace: the spool files live in a
// directory the job's user owns, and the starter reads and appends to
// them as root; a link out, a hard link to another file or a FIFO in
// their place is refused, and nothing is written through it.
func TestSpoolRefusesWhatTheJobPutInItsPlace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the spool files are the root starter's")
	}
	outside := filepath.Join(t.TempDir(), "passwd")
	if err := os.WriteFile(outside, []byte("root:x:0:0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	name := spoolNames[1]
	for _, tc := range []struct {
		what  string
		plant func(scratch string) error
	}{
		{"a symbolic link out", func(s string) error { return os.Symlink(outside, filepath.Join(s, name)) }},
		{"a hard link", func(s string) error {
			other := filepath.Join(s, "other")
			if err := os.WriteFile(other, []byte("kept\n"), 0o644); err != nil {
				return err
			}
			return os.Link(other, filepath.Join(s, name))
		}},
		{"a FIFO", func(s string) error { return syscall.Mkfifo(filepath.Join(s, name), 0o666) }},
	} {
		scratch := t.TempDir()
		if err := tc.plant(scratch); err != nil {
			t.Fatal(err)
		}
		sp := &outputSpool{scratch: scratch, spooled: [3]bool{1: true}}
		if f, err := sp.open(1, false); err == nil {
			f.Close()
			t.Errorf("%s in place of the spool was opened to append", tc.what)
		}
		if err := sp.sendHome(newSender(nil, 0)); err == nil {
			t.Errorf("%s in place of the spool was read to send home", tc.what)
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != "root:x:0:0\n" {
		t.Errorf("the file outside was changed: %q", b)
	}

	// The starter's own spool works.
	scratch := t.TempDir()
	sp := &outputSpool{scratch: scratch, spooled: [3]bool{1: true}}
	f, err := sp.open(1, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("line\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if f, err = sp.open(1, false); err != nil {
		t.Fatalf("reopen the spool: %v", err)
	}
	f.Close()
}
