package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Write replaces a file whole with the mode asked for and leaves no
// temporary file; Create refuses to replace one.
func TestWriteAndCreate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	for _, data := range []string{"first", "second, longer"} {
		if err := Write(path, []byte(data), 0o640); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != data {
			t.Errorf("after Write(%q): %q, %v", data, got, err)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("mode: %v, %v; want 0640", fi.Mode(), err)
	}
	if err := Create(path, []byte("third"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Create over an existing file: %v, want fs.ErrExist", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "second, longer" {
		t.Errorf("a refused Create changed the file: %q", got)
	}
	fresh := filepath.Join(dir, "fresh")
	if err := Create(fresh, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("the directory holds %v, want only state and fresh", entries)
	}
	if err := Write(filepath.Join(dir, "missing", "x"), nil, 0o600); err == nil {
		t.Error("Write into a missing directory succeeded")
	}
}
