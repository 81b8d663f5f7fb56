package shadow

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"harrier.dev/harrier/classad"
)

// TestOutputsSharedFile: a job whose Out and Err are one file writes both
// streams to it, in order, and the file is closed once, without error.
func TestOutputsSharedFile(t *testing.T) {
	iwd := t.TempDir()
	ad, err := classad.Parse(`[ Cmd = "/bin/true"; Iwd = ` + strconv.Quote(iwd) + `; Out = "both"; Err = "both" ]`)
	if err != nil {
		t.Fatal(err)
	}
	f, err := newJobFiles(ad)
	if err != nil {
		t.Fatal(err)
	}
	o, err := f.openOutputs(false)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		fd   int
		data string
	}{{1, "out "}, {2, "err "}, {1, "out"}, {3, "nowhere"}} {
		if err := o.write(w.fd, []byte(w.data)); err != nil {
			t.Errorf("write fd %d: %v", w.fd, err)
		}
	}
	if err := o.close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if err := o.close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(iwd, "both")); string(b) != "out err out" {
		t.Errorf("the file holds %q", b)
	}
}

// TestOutputsAppendAndTruncate: a restored job appends to its output; one
// that starts afresh instead empties it first.
func TestOutputsAppendAndTruncate(t *testing.T) {
	iwd := t.TempDir()
	out, errPath := filepath.Join(iwd, "out"), filepath.Join(iwd, "err")
	for _, p := range []string{out, errPath} {
		if err := os.WriteFile(p, []byte("first run\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := &jobFiles{executable: "/bin/true", output: out, errPath: errPath}
	o, err := f.openOutputs(true)
	if err != nil {
		t.Fatal(err)
	}
	_ = o.write(1, []byte("restored\n"))
	if b, _ := os.ReadFile(out); string(b) != "first run\nrestored\n" {
		t.Errorf("appended output %q", b)
	}
	if err := o.truncate(); err != nil {
		t.Fatal(err)
	}
	_ = o.write(2, []byte("afresh\n"))
	if err := o.close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(errPath); string(b) != "afresh\n" {
		t.Errorf("error output after truncate %q", b)
	}
	if _, err := (&jobFiles{output: filepath.Join(iwd, "no", "dir")}).openOutputs(false); err == nil {
		t.Error("an output in a missing directory was opened")
	}
}
