package checkpoint

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"
)

// memJobConfig runs this test binary in the container as a job holding
// memory.
func memJobConfig(b testing.TB, id, jobDir string, mib int) *configs.Config {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cfg := containerConfig(b, id, jobDir, int64(mib)<<21+64<<20)
	dst := filepath.Join(testRootfs, "harrier-ckpt-test")
	if err := os.WriteFile(dst, nil, 0o755); err != nil {
		b.Fatal(err)
	}
	cfg.Mounts = append(cfg.Mounts, &configs.Mount{Source: exe, Destination: "/harrier-ckpt-test",
		Device: "bind", Flags: unix.MS_BIND | unix.MS_RDONLY})
	return cfg
}

// waitOutput waits until the job has printed more than n bytes.
func waitOutput(b testing.TB, out *syncBuffer, n int) {
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if s := out.String(); len(s) > n {
			if strings.Contains(s, "corrupted") {
				b.Fatalf("job output: %s", s)
			}
			return
		}
	}
	b.Fatalf("job prints nothing: %q", out.String())
}

func median(d []float64) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkMigrate checkpoints a job holding 64, 256 or 1024 MiB of
// touched (incompressible) memory, sends the image through Pack and
// Unpack over an in-process pipe (no TLS, no network), and restores it;
// each iteration migrates the job restored by the one before. Metrics
// are medians over the iterations, with the job's network namespace
// dumped or (loopback-only) not. Images go to a temporary directory,
// or below $HARRIER_CHECKPOINT_BENCH_DIR (to compare disks with tmpfs).
func BenchmarkMigrate(b *testing.B) {
	needCRIU(b)
	for _, mib := range []int{64, 256, 1024} {
		for _, loopbackOnly := range []bool{false, true} {
			name := fmt.Sprintf("%dMiB/netns", mib)
			if loopbackOnly {
				name = fmt.Sprintf("%dMiB/loopback-only", mib)
			}
			b.Run(name, func(b *testing.B) { benchMigrate(b, mib, loopbackOnly) })
		}
	}
}

func benchMigrate(b *testing.B, mib int, loopbackOnly bool) {
	b.ReportAllocs()
	ctx := context.Background()
	tmp, root, jobDir := jobDirs(b)
	images := tmp
	if d := os.Getenv("HARRIER_CHECKPOINT_BENCH_DIR"); d != "" {
		var err error
		if images, err = os.MkdirTemp(d, "ckpt-bench"); err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(images)
	}
	id := fmt.Sprintf("ckpt-bench%d-%v", mib, loopbackOnly)
	cfg := memJobConfig(b, id, jobDir, mib)
	args := []string{"/harrier-ckpt-test", fmt.Sprint(mib)}
	env := []string{roleEnv + "=memjob"}
	j := startJob(b, root, id, cfg, args, env)
	defer func() { j.stop(b) }()
	waitOutput(b, j.out, 0)

	var frozen, memdump, memwrite, dumpWall, image, packedSize, transfer, restoreWall, restoreStat []float64
	i := 0
	for b.Loop() {
		i++
		img := filepath.Join(images, fmt.Sprintf("img%d", i))
		res, err := Dump(ctx, j.c, DumpOptions{ImageDir: img, LoopbackOnly: loopbackOnly})
		if err != nil {
			b.Fatal(err)
		}
		j.gone(b)
		frozen = append(frozen, ms(res.Stats.Frozen))
		memdump = append(memdump, ms(res.Stats.MemDump))
		memwrite = append(memwrite, ms(res.Stats.MemWrite))
		dumpWall = append(dumpWall, ms(res.Wall))

		pr, pw := io.Pipe()
		counter := &countWriter{w: pw}
		start := time.Now()
		go func() {
			_, err := Pack(counter, img, testSeal)
			pw.CloseWithError(err)
		}()
		received := img + ".received"
		m, err := Unpack(pr, received, testSeal)
		if err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		image = append(image, float64(m.Size())/(1<<20))
		packedSize = append(packedSize, float64(counter.n)/(1<<20))
		transfer = append(transfer, float64(m.Size())/1e6/took.Seconds())

		p, out := newProcess(args, env)
		c, rres, err := Restore(ctx, RestoreOptions{Root: root, ID: id, Config: cfg, Process: p, ImageDir: received})
		if err != nil {
			b.Fatal(err)
		}
		j = &job{c: c, p: p, out: out}
		restoreWall = append(restoreWall, ms(rres.Wall))
		restoreStat = append(restoreStat, ms(rres.Stats.Restore))
		waitOutput(b, out, 0) // it runs again
		os.RemoveAll(img)
		os.RemoveAll(received)
	}
	b.ReportMetric(median(frozen), "frozen-ms")
	b.ReportMetric(median(memdump), "memdump-ms")
	b.ReportMetric(median(memwrite), "memwrite-ms")
	b.ReportMetric(median(dumpWall), "dump-ms")
	b.ReportMetric(median(image), "image-MiB")
	b.ReportMetric(median(packedSize), "packed-MiB")
	b.ReportMetric(median(transfer), "transfer-MB/s")
	b.ReportMetric(median(restoreWall), "restore-ms")
	b.ReportMetric(median(restoreStat), "criu-restore-ms")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// BenchmarkCompress compares the image codec (zstd, fastest level) with
// gzip at its fastest level on 64 MiB of incompressible and of
// text-like data.
func BenchmarkCompress(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	noise := make([]byte, 64<<20)
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	var text bytes.Buffer
	for i := 0; text.Len() < 64<<20; i++ {
		fmt.Fprintf(&text, "%d record %x value=%d\n", i, rng.Uint64(), rng.IntN(1000))
	}
	codecs := map[string]func(io.Writer) io.WriteCloser{
		"zstd": func(w io.Writer) io.WriteCloser {
			zw, _ := zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedFastest))
			return zw
		},
		"gzip": func(w io.Writer) io.WriteCloser {
			zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
			return zw
		},
	}
	for _, codec := range []string{"zstd", "gzip"} {
		for _, data := range []struct {
			name string
			b    []byte
		}{{"noise", noise}, {"text", text.Bytes()[:64<<20]}} {
			b.Run(codec+"/"+data.name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(data.b)))
				var n int64
				for b.Loop() {
					cw := &countWriter{w: io.Discard}
					zw := codecs[codec](cw)
					if _, err := zw.Write(data.b); err != nil {
						b.Fatal(err)
					}
					if err := zw.Close(); err != nil {
						b.Fatal(err)
					}
					n = cw.n
				}
				b.ReportMetric(float64(n)/float64(len(data.b)), "ratio")
			})
		}
	}
}

// pagesImage makes an image directory holding one 256 MiB pages file of
// incompressible data, like the memory job's.
func pagesImage(b *testing.B) string {
	dir := filepath.Join(b.TempDir(), "img")
	if err := os.Mkdir(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	pages := make([]byte, 256<<20)
	for i := 0; i < len(pages); i += 8 {
		v := rng.Uint64()
		for k := range 8 {
			pages[i+k] = byte(v >> (8 * k))
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "pages-1.img"), pages, 0o600); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkPack is the sending side alone: read, checksum, compress.
func BenchmarkPack(b *testing.B) {
	dir := pagesImage(b)
	b.ReportAllocs()
	b.SetBytes(256 << 20)
	for b.Loop() {
		if _, err := Pack(io.Discard, dir, testSeal); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerify is the shadow's side alone: decompress and checksum.
func BenchmarkVerify(b *testing.B) {
	dir := pagesImage(b)
	var buf bytes.Buffer
	if _, err := Pack(&buf, dir, testSeal); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(256 << 20)
	for b.Loop() {
		if _, err := Verify(bytes.NewReader(buf.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUnpack is the execute side: decompress, checksum, write.
func BenchmarkUnpack(b *testing.B) {
	dir := pagesImage(b)
	var buf bytes.Buffer
	if _, err := Pack(&buf, dir, testSeal); err != nil {
		b.Fatal(err)
	}
	out := b.TempDir()
	b.ReportAllocs()
	b.SetBytes(256 << 20)
	i := 0
	for b.Loop() {
		i++
		d := filepath.Join(out, fmt.Sprint(i))
		if _, err := Unpack(bytes.NewReader(buf.Bytes()), d, testSeal); err != nil {
			b.Fatal(err)
		}
		os.RemoveAll(d)
	}
}

// BenchmarkPrivateMounts measures what a restore pays for running in a
// private mount namespace: a thread of its own that unshares its mount
// namespace and makes every mount a slave, against the baseline of a
// thread of its own alone (both threads end with their goroutine).
func BenchmarkPrivateMounts(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("unsharing the mount namespace needs root")
	}
	b.Run("thread", func(b *testing.B) {
		for b.Loop() {
			done := make(chan struct{})
			go func() {
				runtime.LockOSThread()
				close(done)
			}()
			<-done
		}
	})
	b.Run("private-mounts", func(b *testing.B) {
		for b.Loop() {
			if err := inPrivateMounts(func() error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRestoreChecks measures what a restore pays for trusting
// nothing of an image but its processes, on the image of a job holding
// 256 MiB: checking the seal of the unpacked image's manifest (Unpack
// has summed its files anyway), and checking the privileges of its
// processes in CRIU's own records (inventory, pstree, ids and core
// images) before CRIU runs. Compare with BenchmarkMigrate's unpack and
// restore of the same job.
func BenchmarkRestoreChecks(b *testing.B) {
	needCRIU(b)
	ctx := context.Background()
	tmp, root, jobDir := jobDirs(b)
	id := "ckpt-bench-checks"
	cfg := memJobConfig(b, id, jobDir, 256)
	args := []string{"/harrier-ckpt-test", "256"}
	j := startJob(b, root, id, cfg, args, []string{roleEnv + "=memjob"})
	defer j.stop(b)
	waitOutput(b, j.out, 0)
	img := filepath.Join(tmp, "img")
	if _, err := Dump(ctx, j.c, DumpOptions{ImageDir: img, LeaveRunning: true, LoopbackOnly: true}); err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	m, err := Pack(&buf, img, testSeal)
	if err != nil {
		b.Fatal(err)
	}
	p, _ := newProcess(args, nil)
	want, err := privilegesOf(cfg, p)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("seal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := testSeal.check(m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("privileges", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := checkPrivileges(img, want); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStorePut is the shadow's side with its disk: check the image
// and write it to a new file of the store, synced.
func BenchmarkStorePut(b *testing.B) {
	dir := pagesImage(b)
	var buf bytes.Buffer
	if _, err := Pack(&buf, dir, testSeal); err != nil {
		b.Fatal(err)
	}
	s, err := OpenStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(256 << 20)
	for b.Loop() {
		if _, err := s.Put("1.0", bytes.NewReader(buf.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
}
