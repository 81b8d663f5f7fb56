package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"
)

// TestInputKey names a file as CRIU does (file[mount:inode], hex), and
// no pipe; a restore writes only such a name into CRIU's configuration.
func TestInputKey(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "in"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	key, err := inputKey(f)
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	mnt, err := mountID(f)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("file[%x:%x]", mnt, st.Ino); key != want {
		t.Errorf("key %q, want %q", key, want)
	}

	conf := filepath.Join(t.TempDir(), "criu.conf")
	cfg := &configs.Config{Labels: []string{criuConfigLabel + "=" + conf}}
	if err := restoreConfig(cfg, key); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(conf); string(b) != "inherit-fd fd[0]:"+key+"\n" {
		t.Errorf("configuration %q", b)
	}
	for _, bad := range []string{"file[1:2]\nexternal mnt[]:x", "file[1:2", "pipe:[3]", ""} {
		if err := restoreConfig(cfg, bad); !errors.Is(err, ErrBadImage) {
			t.Errorf("restoreConfig(%q): %v, want ErrBadImage", bad, err)
		}
	}
	if err := restoreConfig(&configs.Config{}, key); err == nil {
		t.Error("restoreConfig without the label: no error")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if key, err := inputKey(r); err == nil {
		t.Errorf("a pipe as the input: key %q, want an error", key)
	}
}
