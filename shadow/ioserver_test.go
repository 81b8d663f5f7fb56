package shadow

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

func mappingFor(t testing.TB, iwd, attrs string) *Mapping {
	t.Helper()
	ad, err := classad.Parse("[ Iwd = " + strconv.Quote(iwd) + "; " + attrs + " ]")
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMapping(ad)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMappingResolve(t *testing.T) {
	m := mappingFor(t, "/home/u/run", `
		FileRemaps = "in.dat = /data/in.dat ; web = http://h.example/p?q=1 ; tmp = local:scratch ; sub = other/dir ; out.dat = remote:/data/out.dat";
		LocalFiles = "scratch/*,*.tmp"; CompressFiles = "*.gz"; FetchFiles = "config";
		AppendFiles = "log.txt"; BufferFiles = "*.dat = (1048576,4096) ; big/* = (65536, 65536)";
		BufferSize = 524288; BufferBlockSize = 32768`)
	for _, c := range []struct{ name, want string }{
		{".", "remote:/home/u/run"},
		{"plain", "buffer:remote:/home/u/run/plain"},
		{"/home/u/run/plain", "buffer:remote:/home/u/run/plain"},
		{"in.dat", "buffer:remote:/data/in.dat"},
		{"web", "buffer:http://h.example/p?q=1"},
		{"tmp", "local:scratch"},
		{"tmp/x", "local:scratch/x"},
		{"sub/a/b", "buffer:remote:/home/u/run/other/dir/a/b"},
		{"scratch/x", "local:scratch/x"},
		{"d/f.tmp", "local:d/f.tmp"},
		{"data.gz", "compress:remote:/home/u/run/data.gz"},
		{"config", "fetch:remote:/home/u/run/config"},
		{"log.txt", "append:remote:/home/u/run/log.txt"},
	} {
		p, err := m.Resolve(c.name)
		if err != nil {
			t.Errorf("resolve %q: %v", c.name, err)
			continue
		}
		if p.String() != c.want {
			t.Errorf("resolve %q = %s, want %s", c.name, p, c.want)
		}
	}
	p, _ := m.Resolve("x.dat")
	if p.BufferSize != 1048576 || p.BufferBlockSize != 4096 {
		t.Errorf("x.dat buffer %d/%d, want the buffer_files sizes", p.BufferSize, p.BufferBlockSize)
	}
	p, _ = m.Resolve("other")
	if p.BufferSize != 524288 || p.BufferBlockSize != 32768 {
		t.Errorf("other buffer %d/%d, want buffer_size and buffer_block_size", p.BufferSize, p.BufferBlockSize)
	}
	for _, name := range []string{"..", "../x", "a/../../x", "/etc/passwd", "/home/u/run2/x"} {
		if _, err := m.Resolve(name); err == nil {
			t.Errorf("resolve %q succeeded", name)
		}
	}
	roots := m.roots()
	if len(roots) != 4 || roots[3] != "/home/u/run" {
		t.Errorf("roots %v, want the three remote remap targets, then Iwd", roots)
	}
}

func TestMappingErrors(t *testing.T) {
	for _, attrs := range []string{
		`FileRemaps = "novalue"`,
		`FileRemaps = "x = ftp://h/p"`,
		`FileRemaps = "../x = /y"`,
		`BufferFiles = "*.dat = (1,2,3)"`,
		`BufferFiles = "*.dat = (100,1000)"`,
		`LocalFiles = "[x"`,
	} {
		ad, err := classad.Parse(`[ Iwd = "/w"; ` + attrs + ` ]`)
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewMapping(ad)
		if err == nil {
			t.Errorf("%s: no error", attrs)
		}
		if m == nil {
			t.Errorf("%s: no mapping for the rest", attrs)
		}
	}
	ad, _ := classad.Parse(`[ Iwd = "relative" ]`)
	if _, err := NewMapping(ad); err == nil {
		t.Error("a relative Iwd was accepted")
	}
}

func FuzzMapping(f *testing.F) {
	f.Add("in.dat = /data/in.dat ; x = http://h/p", "*.dat = (1048576,4096)", "scratch/*,*.tmp", "a/b/c")
	f.Add("a=b;;c = local:../../etc", "big/* = (65536, 65536)", "[", "../x")
	f.Add("/w/in = remote:rel", "x", "*", "/w/in")
	f.Fuzz(func(t *testing.T, remaps, buffers, locals, name string) {
		ad := classad.New()
		ad.SetString("Iwd", "/w")
		ad.SetString("FileRemaps", remaps)
		ad.SetString("BufferFiles", buffers)
		ad.SetString("LocalFiles", locals)
		m, _ := NewMapping(ad)
		if m == nil {
			t.Fatal("no mapping for an absolute Iwd")
		}
		p, err := m.Resolve(name)
		if err != nil {
			return
		}
		switch p.Base() {
		case methodLocal:
			if filepath.IsAbs(p.Path) || p.Path == ".." || len(p.Path) > 2 && p.Path[:3] == "../" {
				t.Errorf("local name %q escapes the scratch directory", p.Path)
			}
		case methodRemote:
			if !filepath.IsAbs(p.Path) || filepath.Clean(p.Path) != p.Path {
				t.Errorf("remote path %q is not clean and absolute", p.Path)
			}
		}
	})
}

// newTestServer serves a fresh job directory.
func newTestServer(t *testing.T, attrs string) (*IOServer, string) {
	iwd := t.TempDir()
	return NewIOServer(mappingFor(t, iwd, attrs), "s3cret"), iwd
}

func TestIOServerStatsAndRemap(t *testing.T) {
	s, iwd := newTestServer(t, "")
	ctx := context.Background()
	if err := os.WriteFile(filepath.Join(iwd, "a"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(iwd, "a")
	o, err := s.Open(ctx, &wire.OpenRequest{Secret: "s3cret", Path: p, Flags: syscall.O_RDWR})
	if err != nil || o.Errno != 0 {
		t.Fatal(o, err)
	}
	if r, _ := s.Read(ctx, &wire.ReadRequest{Secret: "s3cret", Handle: o.Handle, Size: 100}); string(r.Data) != "hello" {
		t.Errorf("read %q", r.Data)
	}
	if w, _ := s.Write(ctx, &wire.WriteRequest{Secret: "s3cret", Handle: o.Handle, Offset: 5, Data: []byte(" world")}); w.Errno != 0 || w.Written != 6 {
		t.Errorf("write: %v", w)
	}
	if c, _ := s.Close(ctx, &wire.HandleRequest{Secret: "s3cret", Handle: o.Handle}); c.Errno != 0 {
		t.Errorf("close: %v", c)
	}
	if r, _ := s.Read(ctx, &wire.ReadRequest{Secret: "s3cret", Handle: o.Handle, Size: 1}); syscall.Errno(r.Errno) != syscall.ESTALE {
		t.Errorf("read after close: errno %d, want ESTALE", r.Errno)
	}
	st := s.Stats()
	if len(st) != 1 || st[0].Path != p || st[0].Opens != 1 || st[0].BytesRead != 5 || st[0].BytesWritten != 6 || st[0].Seeks != 0 {
		t.Errorf("stats %+v", st)
	}

	// A new mapping applies to the next resolve.
	other := t.TempDir()
	s.SetMapping(mappingFor(t, iwd, `FileRemaps = "a = `+other+`/b"`))
	r, _ := s.Resolve(ctx, &wire.ResolveRequest{Secret: "s3cret", Name: "a"})
	if r.Physical != "remote:"+other+"/b" || syscall.Errno(r.StatErrno) != syscall.ENOENT {
		t.Errorf("after the remap: %v", r)
	}
	// The target of a remap is reachable, its neighbours are not.
	c, _ := s.Open(ctx, &wire.OpenRequest{Secret: "s3cret", Path: other + "/b", Flags: syscall.O_WRONLY | syscall.O_CREAT, Mode: 0o600})
	if c.Errno != 0 {
		t.Errorf("create the remap target: errno %d", c.Errno)
	}
	c, _ = s.Open(ctx, &wire.OpenRequest{Secret: "s3cret", Path: other + "/c", Flags: syscall.O_WRONLY | syscall.O_CREAT, Mode: 0o600})
	if syscall.Errno(c.Errno) != syscall.EACCES {
		t.Errorf("create next to the remap target: errno %d, want EACCES", c.Errno)
	}
	s.CloseFiles()
}

// TestFsyncAfterWrites: an fsync sent with writes still on their way
// waits until as many as its client counted are made, and no longer than
// its caller waits.
func TestFsyncAfterWrites(t *testing.T) {
	s, iwd := newTestServer(t, "")
	ctx := context.Background()
	o, err := s.Open(ctx, &wire.OpenRequest{Secret: "s3cret", Path: filepath.Join(iwd, "f"), Flags: syscall.O_RDWR | syscall.O_CREAT, Mode: 0o644})
	if err != nil || o.Errno != 0 {
		t.Fatal(o, err)
	}
	defer s.CloseFiles()
	write := func(off int64) {
		if w, err := s.Write(ctx, &wire.WriteRequest{Secret: "s3cret", Handle: o.Handle, Offset: off, Data: []byte("x")}); err != nil || w.Errno != 0 {
			t.Errorf("write: %v %v", w, err)
		}
	}
	write(0)
	synced := make(chan *wire.ErrnoReply)
	go func() {
		r, err := s.Fsync(ctx, &wire.FsyncRequest{Secret: "s3cret", Handle: o.Handle, AfterWrites: 2, DataOnly: true})
		if err != nil {
			t.Error(err)
		}
		synced <- r
	}()
	select {
	case <-synced:
		t.Fatal("the fsync did not wait for the second write")
	case <-time.After(100 * time.Millisecond):
	}
	write(1)
	if r := <-synced; r.GetErrno() != 0 {
		t.Errorf("fsync: errno %d", r.GetErrno())
	}
	// A write that never comes: the caller's deadline ends the wait.
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := s.Fsync(cctx, &wire.FsyncRequest{Secret: "s3cret", Handle: o.Handle, AfterWrites: 3}); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("fsync after a write that never came: %v, want DeadlineExceeded", err)
	}
}

// TestMtimeAloneIsNoWrite: a Write that carries the file's mtime and no
// data sets the time and counts no write in the job's statistics.
func TestMtimeAloneIsNoWrite(t *testing.T) {
	s, iwd := newTestServer(t, "")
	ctx := context.Background()
	p := filepath.Join(iwd, "f")
	o, err := s.Open(ctx, &wire.OpenRequest{Secret: "s3cret", Path: p, Flags: syscall.O_RDWR | syscall.O_CREAT, Mode: 0o644})
	if err != nil || o.Errno != 0 {
		t.Fatal(o, err)
	}
	defer s.CloseFiles()
	when := time.Date(2020, 2, 2, 2, 2, 2, 0, time.UTC)
	if w, err := s.Write(ctx, &wire.WriteRequest{Secret: "s3cret", Handle: o.Handle, SetMtime: true, MtimeNs: when.UnixNano()}); err != nil || w.Errno != 0 {
		t.Fatalf("write: %v %v", w, err)
	}
	if st, err := os.Stat(p); err != nil || !st.ModTime().Equal(when) {
		t.Errorf("mtime %v, %v; want %v", st.ModTime(), err, when)
	}
	if st := s.Stats(); len(st) != 1 || st[0].Writes != 0 {
		t.Errorf("stats %+v, want no write", st)
	}
}

func TestIOServerSecret(t *testing.T) {
	s, iwd := newTestServer(t, "")
	if _, err := s.Stat(context.Background(), &wire.PathRequest{Secret: "guess", Path: iwd}); err == nil {
		t.Error("stat with a wrong secret succeeded")
	}
	if _, err := s.Resolve(context.Background(), &wire.ResolveRequest{Name: "x"}); err == nil {
		t.Error("resolve without a secret succeeded")
	}
}

func TestSeekCounter(t *testing.T) {
	type acc struct {
		off int64
		n   int
	}
	for _, c := range []struct {
		name     string
		accesses []acc
		want     int64
	}{
		{"sequential", []acc{{0, 10}, {10, 10}, {20, 5}, {25, 0}}, 0},
		{"read-ahead out of order", []acc{{0, 10}, {20, 10}, {10, 10}, {40, 10}, {30, 10}}, 0},
		{"one jump", []acc{{0, 10}, {100, 10}, {110, 10}}, 1},
		{"first access elsewhere", []acc{{4096, 10}}, 1},
		{"back to the start, soon: not told from the first read", []acc{{0, 10}, {10, 10}, {500, 10}, {0, 10}}, 1},
		{"random", []acc{{0, 4}, {400, 4}, {40, 4}, {4000, 4}}, 3},
	} {
		var sc seekCounter
		var got int64
		for _, a := range c.accesses {
			got += sc.add(a.off, a.n)
		}
		if got != c.want {
			t.Errorf("%s: %d seeks, want %d", c.name, got, c.want)
		}
	}
}
