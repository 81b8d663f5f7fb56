package iofs_test

import (
	"bufio"
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// cachedWrite is one of the writes of holdWrites.
type cachedWrite struct {
	off int
	p   []byte
}

// syncTestSize is the size of TestSyncBringsCachedWrites's files.
const syncTestSize = 1 << 20

// cachedWrites are small writes at random offsets, none page-aligned: the
// kernel reads the rest of each page first.
func cachedWrites() []cachedWrite {
	rng := rand.New(rand.NewPCG(1, 2))
	ws := make([]cachedWrite, 200)
	for i := range ws {
		ws[i] = cachedWrite{off: rng.IntN(syncTestSize - 100), p: bytes.Repeat([]byte{byte('A' + rng.IntN(26))}, 1+rng.IntN(99))}
	}
	return ws
}

const mappedText = "stored through a mapping"

// holdWrites is the worker of TestSyncBringsCachedWrites: it writes
// through the kernel's page cache without closing, fsyncing or unmapping
// (small writes to DIR/random open for writing only, an append to DIR/log,
// a store into a shared mapping of DIR/mapped), says "ready" and keeps the
// files open until its standard input ends.
func holdWrites(dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, "random"), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	for _, w := range cachedWrites() {
		if _, err := f.WriteAt(w.p, int64(w.off)); err != nil {
			return err
		}
	}
	log, err := os.OpenFile(filepath.Join(dir, "log"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := log.WriteString("second\n"); err != nil {
		return err
	}
	mf, err := os.OpenFile(filepath.Join(dir, "mapped"), os.O_RDWR, 0)
	if err != nil {
		return err
	}
	m, err := unix.Mmap(int(mf.Fd()), 0, syncTestSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return err
	}
	copy(m[3*4096+10:], mappedText)
	os.Stdout.WriteString("ready\n")
	// Hold everything open until the test has synced and read it.
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	unix.Munmap(m)
	f.Close()
	log.Close()
	mf.Close()
	return nil
}

// TestSyncBringsCachedWrites has a job write through the kernel's page
// cache (which caches writes) and keep its files open and mapped:
// Server.Sync, as a checkpoint calls it, brings all of it to the submit
// side. The job runs in its own process: a page fault on the mount by
// the process that serves it could wait on a stopped world.
func TestSyncBringsCachedWrites(t *testing.T) {
	e := newEnv(t, "")
	orig := bytes.Repeat([]byte("0123456789abcdef"), syncTestSize/16)
	e.writeSubmit("random", string(orig))
	e.writeSubmit("log", "first\n")
	e.writeSubmit("mapped", string(orig))
	want := bytes.Clone(orig)
	for _, w := range cachedWrites() {
		copy(want[w.off:], w.p)
	}
	wantMapped := bytes.Clone(orig)
	copy(wantMapped[3*4096+10:], mappedText)

	cmd := exec.Command(os.Args[0], "hold", e.mnt)
	cmd.Env = append(os.Environ(), workerEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "ready\n" {
		t.Fatalf("worker: %q, %v", line, err)
	}

	if err := e.fs.Sync(context.Background()); err != nil {
		t.Fatalf("sync: %v", err)
	}
	for _, c := range []struct {
		name string
		want []byte
	}{{"random", want}, {"log", []byte("first\nsecond\n")}, {"mapped", wantMapped}} {
		got, err := os.ReadFile(filepath.Join(e.submit, c.name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, c.want) {
			t.Errorf("%s on the submit side after Sync: %d bytes, not what the job wrote (%d bytes)", c.name, len(got), len(c.want))
		}
	}
}
