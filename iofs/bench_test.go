package iofs_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"harrier.dev/harrier/iofs"
)

// Sizes of the benchmark files; see docs/iofs-bench.md.
const (
	benchSeqSize    = 1 << 30
	benchRandomSize = 256 << 20
	benchSmallFiles = 10000
	// The 4 KiB random I/O of BenchmarkRandom4K: 64 MiB in a 256 MiB file.
	benchRandomOps = 16384
	// BenchmarkSQLite's one-row transactions.
	benchSQLiteTxns = 300
)

func makeFile(b *testing.B, p string, size int64) {
	b.Helper()
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	rng := rand.NewChaCha8([32]byte{1})
	for off := int64(0); off < size; off += int64(len(buf)) {
		rng.Read(buf)
		if _, err := f.Write(buf[:min(int64(len(buf)), size-off)]); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// noPassFile and noPassNode are go-fuse's loopback file system with FUSE
// passthrough hidden: every byte goes through the Go process, as in iofs,
// but without the network. They are the reference for FUSE's own cost.
type noPassFile struct{ *fs.LoopbackFile }

func (f *noPassFile) PassthroughFd() (int, bool) { return -1, false }

// noPassNode is a loopback node whose files refuse passthrough; its
// children are too.
type noPassNode struct{ *fs.LoopbackNode }

func (n *noPassNode) WrapChild(_ context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	return &noPassNode{ops.(*fs.LoopbackNode)}
}

func (n *noPassNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, ff, e := n.LoopbackNode.Open(ctx, flags)
	if e != 0 {
		return nil, 0, e
	}
	return &noPassFile{fh.(*fs.LoopbackFile)}, ff, 0
}

func (n *noPassNode) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	in, fh, ff, e := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if e != 0 {
		return nil, nil, 0, e
	}
	return in, &noPassFile{fh.(*fs.LoopbackFile)}, ff, 0
}

func mountLoopback(b *testing.B, dir string) string {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		b.Fatal(err)
	}
	r := &fs.LoopbackRoot{Path: dir, Dev: st.Dev}
	root := &noPassNode{&fs.LoopbackNode{RootData: r}}
	r.RootNode = root
	mnt := b.TempDir()
	srv, err := fs.Mount(mnt, root, &fs.Options{MountOptions: fuse.MountOptions{DirectMount: true, MaxWrite: 1 << 20, MaxReadAhead: 1 << 20, DisableSplice: true}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Unmount() })
	return mnt
}

// nullNode is a FUSE file system that keeps nothing, mounted with iofs's
// options: every file reads as benchSeqSize bytes it does not fill in,
// and every write is taken and dropped. It measures what FUSE alone costs
// on this machine: no FUSE server can go faster.
type nullNode struct{ fs.Inode }

var (
	_ fs.NodeLookuper  = (*nullNode)(nil)
	_ fs.NodeCreater   = (*nullNode)(nil)
	_ fs.NodeGetattrer = (*nullNode)(nil)
	_ fs.NodeSetattrer = (*nullNode)(nil)
	_ fs.NodeOpener    = (*nullNode)(nil)
	_ fs.NodeReader    = (*nullNode)(nil)
	_ fs.NodeWriter    = (*nullNode)(nil)
	_ fs.NodeFsyncer   = (*nullNode)(nil)
	_ fs.NodeFlusher   = (*nullNode)(nil)
)

func (n *nullNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	out.Attr.Mode, out.Attr.Size = syscall.S_IFREG|0o644, benchSeqSize
	return n.NewInode(ctx, &nullNode{}, fs.StableAttr{Mode: syscall.S_IFREG}), 0
}

func (n *nullNode) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	out.Attr.Mode = syscall.S_IFREG | 0o644
	return n.NewInode(ctx, &nullNode{}, fs.StableAttr{Mode: syscall.S_IFREG}), nil, 0, 0
}

func (n *nullNode) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if n.IsRoot() {
		out.Mode = syscall.S_IFDIR | 0o755
		return 0
	}
	out.Mode, out.Size = syscall.S_IFREG|0o644, benchSeqSize
	return 0
}

func (n *nullNode) Setattr(ctx context.Context, fh fs.FileHandle, _ *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return n.Getattr(ctx, fh, out)
}

func (n *nullNode) Open(context.Context, uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, 0, 0
}

func (n *nullNode) Read(_ context.Context, _ fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	return fuse.ReadResultData(dest[:max(0, min(int64(len(dest)), benchSeqSize-off))]), 0
}

func (n *nullNode) Write(_ context.Context, _ fs.FileHandle, data []byte, _ int64) (uint32, syscall.Errno) {
	return uint32(len(data)), 0
}

func (n *nullNode) Fsync(context.Context, fs.FileHandle, uint32) syscall.Errno { return 0 }
func (n *nullNode) Flush(context.Context, fs.FileHandle) syscall.Errno         { return 0 }

// mountNull mounts nullNode as iofs.Mount mounts iofs: the same FUSE
// options, read-ahead and dirty-page limit.
func mountNull(b *testing.B) string {
	mnt := b.TempDir()
	srv, err := fs.Mount(mnt, &nullNode{}, &fs.Options{MountOptions: fuse.MountOptions{
		DirectMount: true, MaxWrite: 1 << 20, MaxReadAhead: 1 << 20, MaxBackground: 32, DisableSplice: true,
		ExtraCapabilities: fuse.CAP_WRITEBACK_CACHE,
	}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Unmount() })
	var st unix.Stat_t
	if err := unix.Stat(mnt, &st); err != nil {
		b.Fatal(err)
	}
	for name, v := range map[string]int{"read_ahead_kb": 16 << 10, "max_bytes": 256 << 20} {
		p := fmt.Sprintf("/sys/class/bdi/%d:%d/%s", unix.Major(st.Dev), unix.Minor(st.Dev), name)
		if err := os.WriteFile(p, []byte(strconv.Itoa(v)), 0); err != nil {
			b.Fatal(err)
		}
	}
	return mnt
}

// seqDirs returns the directories to compare: the submit-side directory
// itself, go-fuse loopback without passthrough over it, the null FUSE
// server, and iofs. Each is
// made by its sub-benchmark: the loopback is mounted for its own run only,
// so that its page cache (a whole copy of the file) is gone before iofs
// runs.
func seqDirs(e *env) []struct {
	name string
	dir  func(*testing.B) string
} {
	return []struct {
		name string
		dir  func(*testing.B) string
	}{
		{"direct", func(*testing.B) string { return e.submit }},
		{"loopback-nopassthrough", func(b *testing.B) string { return mountLoopback(b, e.submit) }},
		{"null", mountNull},
		{"iofs", func(*testing.B) string { return e.mnt }},
	}
}

// The benchmarks below run once per invocation (use -benchtime=1x or a
// count like -benchtime=20000x); see docs/iofs-bench.md.

func BenchmarkSequentialRead(b *testing.B) {
	e := newEnv(b, "")
	makeFile(b, filepath.Join(e.submit, "big"), benchSeqSize)
	for _, d := range seqDirs(e) {
		b.Run(d.name, func(b *testing.B) {
			dir := d.dir(b)
			if dir != e.submit {
				// Through FUSE, from the daemon: -count's earlier runs
				// leave pages cached, which iofs keeps across opens.
				dropCache(b, filepath.Join(dir, "big"))
			}
			var secs float64
			cpu := cpuSeconds()
			for b.Loop() {
				secs += runWorker(b, "read", filepath.Join(dir, "big"))
			}
			b.ReportMetric(float64(b.N)*benchSeqSize/secs/1e6, "MB/s")
			b.ReportMetric((cpuSeconds()-cpu)/float64(b.N), "cpu-s/GiB")
		})
	}
}

func BenchmarkSequentialWrite(b *testing.B) {
	e := newEnv(b, "")
	for _, d := range seqDirs(e) {
		b.Run(d.name, func(b *testing.B) {
			dir := d.dir(b)
			var secs float64
			cpu := cpuSeconds()
			for b.Loop() {
				secs += runWorker(b, "write", filepath.Join(dir, "out"), strconv.Itoa(benchSeqSize))
			}
			b.ReportMetric(float64(b.N)*benchSeqSize/secs/1e6, "MB/s")
			b.ReportMetric((cpuSeconds()-cpu)/float64(b.N), "cpu-s/GiB")
		})
	}
}

// BenchmarkTwoPhaseOpen opens b.N names the kernel has not seen: a lookup
// (phase one, which brings the attributes along) and an open (phase two).
func BenchmarkTwoPhaseOpen(b *testing.B) {
	e := newEnv(b, "")
	for i := range b.N {
		if err := os.WriteFile(filepath.Join(e.submit, "f"+strconv.Itoa(i)), nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	b.ReportMetric(runWorker(b, "open", e.mnt, strconv.Itoa(b.N)), "median-µs")
}

// BenchmarkRandomRead4K reads 4 KiB at random offsets of a 256 MiB file
// mapped with buffer, after one pass has warmed it. "pagecache" reads as
// programs do; "odirect" bypasses the kernel's cache, so every read is
// served by iofs's block cache.
func BenchmarkRandomRead4K(b *testing.B) {
	e := newEnv(b, fmt.Sprintf(`BufferFiles = "*.dat = (%d,65536)"`, benchRandomSize+(1<<20)))
	makeFile(b, filepath.Join(e.submit, "r.dat"), benchRandomSize)
	const reads = 200000
	for _, mode := range []string{"pagecache", "direct"} {
		b.Run(mode, func(b *testing.B) {
			var secs float64
			for b.Loop() {
				secs += runWorker(b, "random", e.path("r.dat"), strconv.Itoa(reads), mode)
			}
			b.ReportMetric(float64(b.N)*reads/secs, "reads/s")
		})
	}
}

// BenchmarkSmallFiles stats and reads 10,000 files of 1 KiB.
func BenchmarkSmallFiles(b *testing.B) {
	e := newEnv(b, "")
	data := make([]byte, 1024)
	for i := range benchSmallFiles {
		if err := os.WriteFile(filepath.Join(e.submit, "s"+strconv.Itoa(i)), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	var secs float64
	cpu := cpuSeconds()
	for b.Loop() {
		secs += runWorker(b, "small", e.mnt, strconv.Itoa(benchSmallFiles))
	}
	b.ReportMetric(float64(b.N)*benchSmallFiles/secs, "files/s")
	b.ReportMetric((cpuSeconds()-cpu)/float64(b.N*benchSmallFiles)*1e6, "cpu-µs/file")
}

// BenchmarkRandom4K reads and writes 4 KiB at random offsets of a 256 MiB
// remote file, as fio's randread and randwrite do: each run opens the file
// afresh; writes end with fsync and close. "direct" is the submit-side
// file itself in the same run.
func BenchmarkRandom4K(b *testing.B) {
	e := newEnv(b, "")
	makeFile(b, filepath.Join(e.submit, "r"), benchRandomSize)
	for _, op := range []string{"randread", "randwrite"} {
		for _, d := range []struct{ name, dir string }{{"direct", e.submit}, {"iofs", e.mnt}, {"iofs-reopened", e.mnt}} {
			if d.name == "iofs-reopened" && op != "randread" {
				continue
			}
			b.Run(op+"/"+d.name, func(b *testing.B) {
				switch d.name {
				case "iofs":
					// Cold: -count's earlier runs leave pages cached.
					dropCache(b, filepath.Join(d.dir, "r"))
				case "iofs-reopened":
					// The file was read whole through iofs before and has
					// not changed since: the kernel's pages of it are kept.
					runWorker(b, "read", filepath.Join(d.dir, "r"))
					b.ResetTimer()
				}
				var secs float64
				cpu := cpuSeconds()
				for b.Loop() {
					secs += runWorker(b, op, filepath.Join(d.dir, "r"), strconv.Itoa(benchRandomOps))
				}
				b.ReportMetric(float64(b.N)*benchRandomOps*4096/secs/(1<<20), "MiB/s")
				b.ReportMetric((cpuSeconds()-cpu)/float64(b.N*benchRandomOps)*1e6, "cpu-µs/op")
			})
		}
	}
}

// BenchmarkSQLite runs the sqlite3 program on a database on the submit
// side, directly and through iofs: 300 transactions of one row each, in
// WAL and in rollback-journal (DELETE) mode, with sqlite's default
// synchronous setting (every commit is fsynced). It runs as a job does,
// as an unprivileged user (nobody, when the benchmark is root's): sqlite
// run by root gives each new journal file the database's owner, one
// more call for the file system a job never makes.
func BenchmarkSQLite(b *testing.B) {
	if _, err := exec.LookPath("sqlite3"); err != nil {
		b.Skip("sqlite3 not installed (scripts/setup installs it)")
	}
	var cred *syscall.Credential
	opts := iofs.Options{HTTPClient: http.DefaultClient}
	if os.Geteuid() == 0 {
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
		opts.JobUID = cred.Uid
	}
	e := newEnvWith(b, "", opts)
	if cred != nil {
		// The submit directory open to that user, and the way to it and
		// to the mount.
		mode := os.FileMode(0o777)
		for d := e.submit; d != os.TempDir() && d != "/"; d, mode = filepath.Dir(d), 0o755 {
			if err := os.Chmod(d, mode); err != nil {
				b.Fatal(err)
			}
		}
	}
	sqlite := func(db string) *exec.Cmd {
		cmd := exec.Command("sqlite3", db)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		return cmd
	}
	var script strings.Builder
	script.WriteString("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);\n")
	for i := range benchSQLiteTxns {
		fmt.Fprintf(&script, "BEGIN; INSERT INTO t(v) VALUES ('row %d'); COMMIT;\n", i)
	}
	n := 0 // names every run's database, across -count's runs
	for _, mode := range []string{"wal", "delete"} {
		for _, d := range []struct{ name, dir string }{{"direct", e.submit}, {"iofs", e.mnt}} {
			b.Run(mode+"/"+d.name, func(b *testing.B) {
				var secs float64
				for b.Loop() {
					n++
					db := filepath.Join(d.dir, fmt.Sprintf("%s-%s-%d.db", d.name, mode, n))
					// The journal mode is set first, on its own, as an
					// application sets it once.
					pragma := sqlite(db)
					pragma.Args = append(pragma.Args, "PRAGMA journal_mode="+mode+";")
					if out, err := pragma.CombinedOutput(); err != nil {
						b.Fatalf("sqlite3: %v: %s", err, out)
					}
					cmd := sqlite(db)
					cmd.Stdin = strings.NewReader(script.String())
					start := time.Now()
					if out, err := cmd.CombinedOutput(); err != nil {
						b.Fatalf("sqlite3: %v: %s", err, out)
					}
					secs += time.Since(start).Seconds()
				}
				b.ReportMetric(secs/float64(b.N), "s/300txn")
				b.ReportMetric(float64(b.N)*benchSQLiteTxns/secs, "txn/s")
			})
		}
	}
}

// dropCache drops the kernel's cached pages of a file on a FUSE mount, so
// that reading it goes to the daemon.
func dropCache(b *testing.B, p string) {
	fd, err := syscall.Open(p, syscall.O_RDONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED); err != nil {
		b.Fatal(err)
	}
}
