package iofs_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestAppendWhileReadElsewhere: a job appends lines to a log and, between
// appends, reads the whole log through another open (as a program tailing
// its own log does). Every line must be there, in order, on both sides:
// a read that missed the last line would have had the kernel write its
// stale page back over it at the next append.
func TestAppendWhileReadElsewhere(t *testing.T) {
	e := newEnv(t, "")
	f, err := os.OpenFile(e.path("app.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want strings.Builder
	for i := 1; i <= 20; i++ {
		line := fmt.Sprintf("%d\n", i)
		if _, err := f.WriteString(line); err != nil {
			t.Fatal(err)
		}
		want.WriteString(line)
		got, err := os.ReadFile(e.path("app.log"))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want.String() {
			t.Fatalf("after append %d the job reads %q, want %q", i, got, want.String())
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got := e.readSubmit("app.log"); got != want.String() {
		t.Errorf("the submit side holds %q, want %q", got, want.String())
	}
}

// TestReadSeesWritesOfAnotherDescriptor: a file open for reading before
// the job writes it through another descriptor reads what was written,
// though its open brought the file's first bytes along; so does a file
// open for reading and writing, and one read through the buffer method.
func TestReadSeesWritesOfAnotherDescriptor(t *testing.T) {
	e := newEnv(t, `BufferFiles = "buffered.dat"`)
	for _, tc := range []struct {
		test, name string
		flag       int
	}{
		{"read-only", "small.dat", os.O_RDONLY},
		{"read-write", "small.dat", os.O_RDWR},
		{"buffer", "buffered.dat", os.O_RDONLY},
	} {
		t.Run(tc.test, func(t *testing.T) {
			e.writeSubmit(tc.name, "old contents\n")
			r, err := os.OpenFile(e.path(tc.name), tc.flag, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			w, err := os.OpenFile(e.path(tc.name), os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if _, err := w.WriteAt([]byte("NEW"), 0); err != nil {
				t.Fatal(err)
			}
			// Written back, and the kernel's clean pages dropped: the
			// read below reaches iofs.
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
			if err := unix.Fadvise(int(r.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 64)
			n, err := r.ReadAt(buf, 0)
			if n == 0 {
				t.Fatal(err)
			}
			if got := string(buf[:n]); got != "NEW contents\n" {
				t.Errorf("read %q, want %q", got, "NEW contents\n")
			}
		})
	}
}
