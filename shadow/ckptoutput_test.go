package shadow

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"harrier.dev/harrier/checkpoint"
	"harrier.dev/harrier/wire"
)

// TestOutputCutBackToCheckpoint: where the output files ended at an
// image's checkpoint is kept with it, and a restore from that image cuts
// the files back there; the mark of another image is not used.
func TestOutputCutBackToCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		name           string
		out, err       string // the files' names; equal: one file
		stdout, stderr int64  // the job's output at the checkpoint
		wantOut        string
		wantErr        string
	}{
		{"apart", "out", "err", 4, 2, "old:abcd", "old:xy"},
		{"one file", "both", "both", 4, 2, "old:abcdxy", "old:abcdxy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			store, err := checkpoint.OpenStore(filepath.Join(dir, "store"))
			if err != nil {
				t.Fatal(err)
			}
			s := &Shadow{spec: &Spec{CheckpointDir: filepath.Join(dir, "store"), CheckpointKey: "1.0"}, logger: slog.New(slog.DiscardHandler)}
			image := filepath.Join(dir, "store", "1.0.ckpt")
			writeImage := func(data string) {
				tmp := image + ".new"
				if err := os.WriteFile(tmp, []byte(data), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(tmp, image); err != nil { // a new file, as Store.Put makes
					t.Fatal(err)
				}
			}
			for _, name := range []string{tc.out, tc.err} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte("old:"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			f := &jobFiles{output: filepath.Join(dir, tc.out), errPath: filepath.Join(dir, tc.err)}
			open := func() *outputs {
				o, err := f.openOutputs(true)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { o.close() })
				return o
			}
			// The job starts: the files are 4 bytes long.
			o := open()
			base, err := o.base()
			if err != nil {
				t.Fatal(err)
			}
			s.outBase = base
			for _, w := range []struct {
				fd   int
				data string
			}{{1, "abcd"}, {2, "xy"}, {1, "AFTER"}, {2, "LATER"}} {
				if err := o.write(w.fd, []byte(w.data)); err != nil {
					t.Fatal(err)
				}
			}
			writeImage("image one")
			if err := s.markOutput(store, &wire.CheckpointInfo{StdoutBytes: &tc.stdout, StderrBytes: &tc.stderr}); err != nil {
				t.Fatal(err)
			}
			// Restored from it: what came after is gone.
			if err := s.rollBackOutput(open()); err != nil {
				t.Fatal(err)
			}
			read := func(name string) string { b, _ := os.ReadFile(filepath.Join(dir, name)); return string(b) }
			if got := read(tc.out); got != tc.wantOut {
				t.Errorf("output after the restore: %q, want %q", got, tc.wantOut)
			}
			if got := read(tc.err); got != tc.wantErr {
				t.Errorf("error after the restore: %q, want %q", got, tc.wantErr)
			}
			// Another image in its place (a crash between it and its
			// mark): the mark is not its own and nothing is cut.
			o = open()
			if err := o.write(1, []byte("MORE")); err != nil {
				t.Fatal(err)
			}
			writeImage("image two")
			if err := s.rollBackOutput(open()); err != nil {
				t.Fatal(err)
			}
			if got := read(tc.out); got != tc.wantOut+"MORE" {
				t.Errorf("output cut back by another image's mark: %q", got)
			}
		})
	}
}
