package iofs_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The benchmarks run the job's side in a separate process, as a job is: a
// goroutine blocked in a system call on the mount would hold one of the
// serving process's two Ps, and the FUSE server would compete with it.
const workerEnv = "IOFS_BENCH_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) != "" {
		if err := worker(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runWorker runs one job-side measurement and returns its result.
func runWorker(b *testing.B, args ...string) float64 {
	b.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), workerEnv+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("worker %v: %v: %s", args, err, stderr.String())
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err != nil {
		b.Fatalf("worker %v: %q", args, out)
	}
	return v
}

// cpuSeconds is the processor time of this process (iofs, the shadow's
// I/O server, the network between them) and of its finished workers (the
// job side). On a machine shared with other work it says more about iofs's
// cost than the elapsed time does.
func cpuSeconds() float64 {
	var self, children syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(self.Utime) + tv(self.Stime) + tv(children.Utime) + tv(children.Stime)
}

// worker prints one number:
//
//	read FILE               seconds to read FILE with 1 MiB reads
//	write FILE SIZE         seconds to write SIZE bytes to FILE and fsync
//	open DIR N              median µs to open DIR/f0 ... DIR/f<N-1>
//	random FILE N DIRECT    seconds for N 4 KiB reads at random offsets, after a warming pass
//	small DIR N             seconds to stat and read DIR/s0 ... DIR/s<N-1>
//	randread FILE N         seconds for N 4 KiB reads at random offsets, the file opened afresh
//	randwrite FILE N        seconds for N 4 KiB writes at random offsets, then fsync and close
//
// except for hold (see holdWrites).
func worker(args []string) error {
	num := func(i int) int64 {
		n, _ := strconv.ParseInt(args[i], 10, 64)
		return n
	}
	if args[0] == "hold" {
		return holdWrites(args[1])
	}
	start := time.Now()
	switch args[0] {
	case "read":
		f, err := os.Open(args[1])
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{f}, make([]byte, 1<<20)); err != nil {
			return err
		}
	case "write":
		f, err := os.Create(args[1])
		if err != nil {
			return err
		}
		buf := make([]byte, 1<<20)
		rand.NewChaCha8([32]byte{2}).Read(buf)
		for off := int64(0); off < num(2); off += int64(len(buf)) {
			if _, err := f.Write(buf); err != nil {
				return err
			}
		}
		if err := f.Sync(); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	case "open":
		lat := make([]time.Duration, num(2))
		for i := range lat {
			t := time.Now()
			fd, err := syscall.Open(filepath.Join(args[1], "f"+strconv.Itoa(i)), syscall.O_RDONLY, 0)
			lat[i] = time.Since(t)
			if err != nil {
				return err
			}
			syscall.Close(fd)
		}
		slices.Sort(lat)
		fmt.Println(float64(lat[len(lat)/2].Nanoseconds()) / 1000)
		return nil
	case "random":
		flags := 0
		if args[3] == "direct" {
			flags = syscall.O_DIRECT
		}
		fd, err := syscall.Open(args[1], syscall.O_RDONLY|flags, 0)
		if err != nil {
			return err
		}
		defer syscall.Close(fd)
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			return err
		}
		// Page-aligned, as O_DIRECT wants.
		mem, err := syscall.Mmap(-1, 0, 1<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
		if err != nil {
			return err
		}
		for off := int64(0); off < st.Size; off += int64(len(mem)) {
			if _, err := syscall.Pread(fd, mem, off); err != nil {
				return err
			}
		}
		rng := rand.New(rand.NewPCG(1, 2))
		start = time.Now()
		for range num(2) {
			if _, err := syscall.Pread(fd, mem[:4096], rng.Int64N(st.Size/4096)*4096); err != nil {
				return err
			}
		}
	case "randread", "randwrite":
		flags := syscall.O_RDONLY
		if args[0] == "randwrite" {
			flags = syscall.O_RDWR
		}
		fd, err := syscall.Open(args[1], flags, 0)
		if err != nil {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			return err
		}
		buf := make([]byte, 4096)
		rand.NewChaCha8([32]byte{3}).Read(buf)
		rng := rand.New(rand.NewPCG(3, 4))
		io := syscall.Pread
		if args[0] == "randwrite" {
			io = syscall.Pwrite
		}
		for range num(2) {
			if _, err := io(fd, buf, rng.Int64N(st.Size/4096)*4096); err != nil {
				return err
			}
		}
		if args[0] == "randwrite" {
			if err := syscall.Fsync(fd); err != nil {
				return err
			}
		}
		if err := syscall.Close(fd); err != nil {
			return err
		}
	case "small":
		for i := range num(2) {
			p := filepath.Join(args[1], "s"+strconv.Itoa(int(i)))
			if _, err := os.Stat(p); err != nil {
				return err
			}
			if _, err := os.ReadFile(p); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("unknown worker mode %q", args[0])
	}
	fmt.Println(time.Since(start).Seconds())
	return nil
}
