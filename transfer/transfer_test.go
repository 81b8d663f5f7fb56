package transfer

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"harrier.dev/harrier/wire"
)

// makeTree writes a tree with nested directories, empty files, links
// inside it and odd names into dir.
func makeTree(t *testing.T, dir string) {
	t.Helper()
	files := map[string]string{
		"a.txt":                      "hello\n",
		"empty":                      "",
		"with space/név ünïcode.dat": "ünïcode\n",
		"deep/er/still/leaf":         string(bytes.Repeat([]byte("x"), 3*ChunkSize+17)),
		"deep/empty-too":             "",
	}
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "a.txt"), 0o751); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "empty dir"), 0o705); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"link": "a.txt", "deep/er/up": "../empty-too", "dangling": "nowhere"} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Date(2020, 1, 2, 3, 4, 5, 600, time.UTC)
	if err := os.Chtimes(filepath.Join(dir, "a.txt"), old, old); err != nil {
		t.Fatal(err)
	}
}

// snapshot lists a tree: each name with its kind, mode, data or target.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "link " + target
		case d.IsDir():
			if rel != "." {
				out[rel] = "dir " + info.Mode().Perm().String()
			}
		default:
			data, _ := os.ReadFile(p)
			out[rel] = info.Mode().Perm().String() + " " + info.ModTime().UTC().String() + " " + string(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func openRoot(t *testing.T, dir string) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestCopyRoundTrip(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	makeTree(t, src)
	files, n, err := Copy(openRoot(t, src), openRoot(t, dst), ".", false)
	if err != nil {
		t.Fatal(err)
	}
	if files != 5 || n != int64(3*ChunkSize+17+6+len("ünïcode\n")) {
		t.Errorf("copied %d files, %d bytes", files, n)
	}
	want, got := snapshot(t, src), snapshot(t, dst)
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: got %.80q, want %.80q", name, got[name], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d entries, want %d", len(got), len(want))
	}
}

// TestDirectoryAndContents: "dir" lands as dir, "dir/" (as "") as its
// contents at the top.
func TestDirectoryAndContents(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	makeTree(t, src)
	r := &Receiver{To: openRoot(t, dst)}
	s := &Sender{Out: r.Chunk}
	from := openRoot(t, src)
	if err := s.Send(from, "deep", "deep"); err != nil {
		t.Fatal(err)
	}
	if err := s.Send(from, "with space", ""); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"deep/er/still/leaf", "név ünïcode.dat"} {
		if _, err := os.Stat(filepath.Join(dst, name)); err != nil {
			t.Error(err)
		}
	}
}

func TestLinkOutOfTreeRefused(t *testing.T) {
	for _, target := range []string{"/etc/passwd", "../outside", "sub/../../x"} {
		src, dst := t.TempDir(), t.TempDir()
		if err := os.Symlink(target, filepath.Join(src, "l")); err != nil {
			t.Fatal(err)
		}
		_, _, err := Copy(openRoot(t, src), openRoot(t, dst), ".", false)
		var fe *FileError
		if !errors.Is(err, ErrEscape) || !errors.As(err, &fe) || fe.Name != "l" {
			t.Errorf("link to %s: %v, want ErrEscape naming l", target, err)
		}
	}
}

// TestReceiverRefusesEscapes: a stream that names a file outside, or a
// link out, is refused by the receiver whatever the sender did.
func TestReceiverRefusesEscapes(t *testing.T) {
	dst := t.TempDir()
	for _, e := range []*wire.TransferEntry{
		{Name: "../x"}, {Name: "/etc/x"}, {Name: "a/./b"}, {Name: ""},
		{Name: "l", Kind: wire.TransferEntry_SYMLINK, Link: "/etc"},
		{Name: "d/l", Kind: wire.TransferEntry_SYMLINK, Link: "../../etc"},
	} {
		r := &Receiver{To: openRoot(t, dst)}
		if err := r.Chunk(&wire.TransferChunk{Entry: e, Sha256: make([]byte, 32)}); !errors.Is(err, ErrEscape) {
			t.Errorf("%+v: %v, want ErrEscape", e, err)
		}
	}
	// Through a link planted in the receiving tree, the root holds.
	if err := os.Symlink("/tmp", filepath.Join(dst, "planted")); err != nil {
		t.Fatal(err)
	}
	r := &Receiver{To: openRoot(t, dst)}
	err := r.Chunk(&wire.TransferChunk{Entry: &wire.TransferEntry{Name: "planted/x"}, Sha256: sum(nil)})
	if err == nil {
		t.Error("a file written through a link out of the tree")
	}
}

func sum(b []byte) []byte {
	h := sha256.Sum256(b)
	return h[:]
}

func TestCorruptFileNeverAppears(t *testing.T) {
	dst := t.TempDir()
	r := &Receiver{To: openRoot(t, dst)}
	err := r.Chunk(&wire.TransferChunk{Entry: &wire.TransferEntry{Name: "f", Size: 3}, Data: []byte("abc"), Sha256: sum([]byte("abd"))})
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("got %v, want ErrCorrupt", err)
	}
	// Cut short: the stream ends before the file's sum.
	r = &Receiver{To: openRoot(t, dst)}
	if err := r.Chunk(&wire.TransferChunk{Entry: &wire.TransferEntry{Name: "g", Size: 6}, Data: []byte("abc")}); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err == nil {
		t.Error("a stream cut in the middle of a file closed without error")
	}
	entries, _ := os.ReadDir(dst)
	if len(entries) != 0 {
		t.Errorf("left %v", entries)
	}
}

func TestLimit(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "big"), make([]byte, 2<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &Receiver{To: openRoot(t, dst), Limit: 1 << 20}
	s := &Sender{Out: r.Chunk}
	err := s.Send(openRoot(t, src), "big", "big")
	var fe *FileError
	if !errors.Is(err, ErrTooLarge) || !errors.As(err, &fe) || fe.Name != "big" {
		t.Fatalf("got %v, want ErrTooLarge naming big", err)
	}
}

func TestRename(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "out"), []byte("o"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, to := range []string{"results/o.txt", "../o.txt"} {
		r := &Receiver{To: openRoot(t, dst), Rename: func(string) string { return to }}
		err := (&Sender{Out: r.Chunk}).Send(openRoot(t, src), "out", "out")
		if err == nil {
			err = r.Close()
		}
		if to == "../o.txt" {
			if !errors.Is(err, ErrEscape) {
				t.Errorf("rename to %s: %v, want ErrEscape", to, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(filepath.Join(dst, to)); string(b) != "o" {
			t.Errorf("%s holds %q", to, b)
		}
	}
}

// TestArchiveRoundTrip: a tree archived into a file comes back exactly;
// a damaged archive puts no damaged file in place.
func TestArchiveRoundTrip(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	makeTree(t, src)
	var buf bytes.Buffer
	files, n, err := Archive(&buf, openRoot(t, src))
	if err != nil {
		t.Fatal(err)
	}
	if files != 5 {
		t.Errorf("archived %d files", files)
	}
	if gotFiles, gotN, err := Extract(bytes.NewReader(buf.Bytes()), openRoot(t, dst)); err != nil || gotFiles != files || gotN != n {
		t.Fatalf("extracted %d files, %d bytes (archived %d, %d): %v", gotFiles, gotN, files, n, err)
	}
	want, got := snapshot(t, src), snapshot(t, dst)
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: got %.80q, want %.80q", name, got[name], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d entries, want %d", len(got), len(want))
	}

	// One byte of the large file's data changed: it fails its sum.
	damaged := bytes.Clone(buf.Bytes())
	i := bytes.Index(damaged, bytes.Repeat([]byte("x"), 64))
	damaged[i+10] = 'y'
	again := t.TempDir()
	if _, _, err := Extract(bytes.NewReader(damaged), openRoot(t, again)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("damaged archive: %v, want ErrCorrupt", err)
	}
	if _, err := os.Stat(filepath.Join(again, "deep/er/still/leaf")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the damaged file is in place: %v", err)
	}
	// Cut short: an error, not a partial tree taken as whole.
	if _, _, err := Extract(bytes.NewReader(buf.Bytes()[:buf.Len()/2]), openRoot(t, t.TempDir())); err == nil {
		t.Error("a truncated archive extracted")
	}
}

// TestArchiveLeavesOut: top-level entries left out are not archived, nor
// what is beneath them, which need not be archivable (a FIFO here, an
// overlay's whiteouts in a job's image root), while a name deeper down
// that is the same is archived.
func TestArchiveLeavesOut(t *testing.T) {
	src := t.TempDir()
	for _, d := range []string{"private/sub", "kept/private"} {
		if err := os.MkdirAll(filepath.Join(src, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(src, "private/sub/fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"private/file", "kept/private/file", "top"} {
		if err := os.WriteFile(filepath.Join(src, f), []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := Archive(io.Discard, openRoot(t, src)); !errors.Is(err, ErrNotFile) {
		t.Fatalf("archive of a tree with a FIFO: %v, want ErrNotFile", err)
	}
	var buf bytes.Buffer
	files, _, err := Archive(&buf, openRoot(t, src), "private", "top")
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if _, _, err := Extract(&buf, openRoot(t, dst)); err != nil {
		t.Fatal(err)
	}
	got := snapshot(t, dst)
	if files != 1 || got["kept/private/file"] == "" || len(got) != 3 {
		t.Errorf("archived %d files: %q; want kept/private/file and its directories alone", files, got)
	}
}

// TestSenderNeverBlocksOnAFIFO: a FIFO put where a regular file was
// listed is refused, not opened for a read that would wait for a writer.
func TestSenderNeverBlocksOnAFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "out"), 0o644); err != nil {
		t.Fatal(err)
	}
	from, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer from.Close()
	s := &Sender{Out: func(*wire.TransferChunk) error { return nil }, buf: make([]byte, ChunkSize)}
	err = s.file(from, "out", &wire.TransferEntry{Name: "out", Size: 0})
	if !errors.Is(err, ErrNotFile) {
		t.Errorf("sending a FIFO as a file: %v, want ErrNotFile", err)
	}
}

// smallChunk is a whole small file in one chunk, as a Sender sends it.
func smallChunk(name, data string) *wire.TransferChunk {
	return &wire.TransferChunk{Entry: &wire.TransferEntry{Name: name, Size: int64(len(data)), Mode: 0o640}, Data: []byte(data), Sha256: sum([]byte(data))}
}

// noTemporaries fails if a temporary name is left beneath dir.
func noTemporaries(t *testing.T, dir string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".harrier-transfer-") {
			t.Errorf("left %s", p)
		}
		return nil
	})
}

// TestManySmallFiles: small files, written side by side, all arrive
// whole with their modes; of two entries of one name the later wins, as
// when entries were written one after the other.
func TestManySmallFiles(t *testing.T) {
	dst := t.TempDir()
	r := &Receiver{To: openRoot(t, dst)}
	const n = 500
	for i := range n {
		if err := r.Chunk(smallChunk(fmt.Sprintf("d%d/f%03d", i%7, i), fmt.Sprint("data ", i))); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []*wire.TransferChunk{smallChunk("twice", "first"), smallChunk("twice", "second"),
		smallChunk("then-link", "a file"), {Entry: &wire.TransferEntry{Name: "then-link", Kind: wire.TransferEntry_SYMLINK, Link: "twice"}}} {
		if err := r.Chunk(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if r.Files != n+3 {
		t.Errorf("counted %d files, want %d", r.Files, n+3)
	}
	for i := range n {
		p := filepath.Join(dst, fmt.Sprintf("d%d/f%03d", i%7, i))
		b, err := os.ReadFile(p)
		if err != nil || string(b) != fmt.Sprint("data ", i) {
			t.Fatalf("%s: %q, %v", p, b, err)
		}
		if info, _ := os.Stat(p); info.Mode().Perm() != 0o640 {
			t.Errorf("%s: mode %v", p, info.Mode())
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "twice")); string(b) != "second" {
		t.Errorf("twice holds %q, want the later entry", b)
	}
	if target, err := os.Readlink(filepath.Join(dst, "then-link")); err != nil || target != "twice" {
		t.Errorf("then-link: %q, %v; want the later entry, a link", target, err)
	}
	noTemporaries(t, dst)
}

// TestSmallFileFailureNamesIt: a small file that cannot be put under its
// name fails the stream, naming it, and leaves no temporary file.
func TestSmallFileFailureNamesIt(t *testing.T) {
	dst := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dst, "taken", "by-a-dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := &Receiver{To: openRoot(t, dst)}
	var err error
	for _, c := range []*wire.TransferChunk{smallChunk("a", "a"), smallChunk("taken", "x"), smallChunk("b", "b")} {
		if err = r.Chunk(c); err != nil {
			break
		}
	}
	if err == nil {
		err = r.Close()
	}
	var fe *FileError
	if !errors.As(err, &fe) || fe.Name != "taken" {
		t.Fatalf("got %v, want a FileError naming taken", err)
	}
	noTemporaries(t, dst)
}

// TestAbortLeavesNoTemporaries: a stream broken among small files and in
// the middle of a large one leaves whole files or none, and no temporary.
func TestAbortLeavesNoTemporaries(t *testing.T) {
	dst := t.TempDir()
	r := &Receiver{To: openRoot(t, dst)}
	for i := range 300 {
		if err := r.Chunk(smallChunk(fmt.Sprintf("s/f%03d", i), "whole")); err != nil {
			t.Fatal(err)
		}
	}
	big := &wire.TransferChunk{Entry: &wire.TransferEntry{Name: "big", Size: 2 * ChunkSize}, Data: make([]byte, ChunkSize)}
	if err := r.Chunk(big); err != nil {
		t.Fatal(err)
	}
	r.Abort()
	found := 0
	_ = filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			found++
			if b, _ := os.ReadFile(p); string(b) != "whole" {
				t.Errorf("%s holds %q", p, b)
			}
		}
		return nil
	})
	if found != r.Files {
		t.Errorf("%d files left, %d counted", found, r.Files)
	}
	noTemporaries(t, dst)
}

// TestLimitCountsSmallFiles: the limit holds over many small files.
func TestLimitCountsSmallFiles(t *testing.T) {
	r := &Receiver{To: openRoot(t, t.TempDir()), Limit: 1 << 20}
	data := string(make([]byte, 60<<10))
	var err error
	for i := 0; err == nil && i < 100; i++ {
		err = r.Chunk(smallChunk(fmt.Sprint("f", i), data))
	}
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
}

// TestSmallFilesAcrossMounts: small files bound for a directory on
// another file system than the top of the tree (where the workers stage
// them) still arrive, whole.
func TestSmallFilesAcrossMounts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dst := t.TempDir()
	sub := filepath.Join(dst, "mnt")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", sub, "tmpfs", 0, ""); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	defer unix.Unmount(sub, unix.MNT_DETACH)
	r := &Receiver{To: openRoot(t, dst)}
	for _, c := range []*wire.TransferChunk{smallChunk("top", "t"), smallChunk("mnt/in", "i")} {
		if err := r.Chunk(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"top": "t", "mnt/in": "i"} {
		p := filepath.Join(dst, name)
		if b, _ := os.ReadFile(p); string(b) != want {
			t.Errorf("%s holds %q", name, b)
		}
		if info, err := os.Stat(p); err != nil || info.Mode().Perm() != 0o640 {
			t.Errorf("%s: %v, %v", name, info, err)
		}
	}
	noTemporaries(t, dst)
}

// TestSmallFilesUnderATopTheyCannotStageIn: where the top of the tree
// takes no new entry (immutable here; not writable, for a user), small
// files bound below it are written beside their names.
func TestSmallFilesUnderATopTheyCannotStageIn(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("setting a directory immutable needs root")
	}
	dst := t.TempDir()
	if err := os.Mkdir(filepath.Join(dst, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	top, err := os.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer top.Close()
	const immutable = 0x10 // FS_IMMUTABLE_FL, <linux/fs.h>
	if err := unix.IoctlSetPointerInt(int(top.Fd()), unix.FS_IOC_SETFLAGS, immutable); err != nil {
		t.Skipf("set immutable: %v", err)
	}
	defer unix.IoctlSetPointerInt(int(top.Fd()), unix.FS_IOC_SETFLAGS, 0)
	r := &Receiver{To: openRoot(t, dst)}
	if err := r.Chunk(smallChunk("sub/f", "f")); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "sub/f")); string(b) != "f" {
		t.Errorf("sub/f holds %q", b)
	}
	noTemporaries(t, dst)
}
