package shadow_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/childproc"
	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/shadow"
	"harrier.dev/harrier/wire"
)

// The tests in this file run a real shadow (ServeClaim, fed the agent's
// commands through a pipe, serving on loopback) and play its starter by
// hand over the wire protocol, with a startd's certificate from a test
// CA: what a starter and iofs ask of a shadow, without either of them.
// The starter package's session tests run a real starter against it.

// patience bounds every wait, so that a broken shadow fails its test
// instead of hanging the run; nothing is expected to come near it.
const patience = time.Minute

const secret = "s3cret-of-the-job"

// agent plays a shadow's agent and the starters of its jobs.
type agent struct {
	t         testing.TB
	caPEM     []byte
	cert, key string // a startd's
	iwd       string
	ckptDir   string
	commands  *childproc.Sender[shadow.Command]
	input     *io.PipeWriter
	events    chan shadow.Event
}

func newAgent(t testing.TB) *agent {
	t.Helper()
	dir := t.TempDir()
	ca, err := pki.CreateCA(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	a := &agent{t: t, iwd: t.TempDir(), ckptDir: filepath.Join(t.TempDir(), "images"), events: make(chan shadow.Event, 256),
		cert: filepath.Join(dir, "startd.pem"), key: filepath.Join(dir, "startd.key")}
	if err := ca.Issue("startd@exec", []string{"127.0.0.1"}, a.cert, a.key); err != nil {
		t.Fatal(err)
	}
	if a.caPEM, err = os.ReadFile(filepath.Join(dir, pki.CACertFile)); err != nil {
		t.Fatal(err)
	}
	in, out := io.Pipe()
	a.input = out
	a.commands = childproc.NewSender[shadow.Command](out)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	logger := slog.New(slog.NewTextHandler(t.Output(), nil))
	events, report := io.Pipe()
	go func() {
		defer close(done)
		shadow.ServeClaim(ctx, in, report, logger)
		report.Close()
	}()
	go forward(events, a.events)
	t.Cleanup(func() {
		out.Close()
		cancel()
		<-done
	})
	return a
}

// forward passes the events a shadow reports on r to ch.
func forward(r io.Reader, ch chan<- shadow.Event) {
	events := childproc.NewReceiver[shadow.Event](r)
	for {
		ev, err := events.Receive()
		if err != nil {
			return
		}
		ch <- ev
	}
}

// ad returns the ad of job proc, whose executable is in the Iwd.
func (a *agent) ad(proc int, attrs ...string) string {
	exe := filepath.Join(a.iwd, "prog")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		a.t.Fatal(err)
	}
	return "[ " + strings.Join(append([]string{
		"ClusterId = 1", "ProcId = " + strconv.Itoa(proc), "Cmd = " + strconv.Quote(exe), "Iwd = " + strconv.Quote(a.iwd),
		`Out = "out"`, `Err = "out"`, `Owner = "alice"`,
	}, attrs...), "; ") + " ]"
}

func (a *agent) send(c shadow.Command) {
	a.t.Helper()
	if err := a.commands.Send(c); err != nil {
		a.t.Fatal(err)
	}
}

// submit gives the shadow a job and returns its EventReady.
func (a *agent) submit(ad string) shadow.Event {
	a.t.Helper()
	a.send(shadow.Command{Job: &shadow.Spec{JobAd: ad, Secret: secret, ListenHost: "127.0.0.1", CAPEM: a.caPEM,
		CheckpointDir: a.ckptDir, CheckpointKey: "1.0"}})
	return a.expect(shadow.EventReady)
}

func (a *agent) expect(want shadow.EventType) shadow.Event {
	a.t.Helper()
	select {
	case ev := <-a.events:
		if ev.Type != want {
			a.t.Fatalf("shadow event %+v, want %s", ev, want)
		}
		return ev
	case <-time.After(patience):
		a.t.Fatalf("no %s event from the shadow in %v", want, patience)
		return shadow.Event{}
	}
}

// dial connects to the shadow as a starter does.
func (a *agent) dial(ready shadow.Event) *grpc.ClientConn {
	a.t.Helper()
	cfg, err := pki.PinnedClientConfig(a.cert, a.key, ready.Fingerprint)
	if err != nil {
		a.t.Fatal(err)
	}
	conn, err := wire.Dial(ready.Addr, cfg)
	if err != nil {
		a.t.Fatal(err)
	}
	a.t.Cleanup(func() { conn.Close() })
	return conn
}

// attach opens the starter's session and reads the job the shadow sends.
func attach(t testing.TB, conn *grpc.ClientConn, jobID, secret string) (wire.Shadow_AttachClient, error) {
	t.Helper()
	return attachWith(t.Context(), t, conn, &wire.Hello{JobId: jobID, Secret: secret, Host: "exec"})
}

// attachWith opens a session for ctx's lifetime with hello.
func attachWith(ctx context.Context, t testing.TB, conn *grpc.ClientConn, hello *wire.Hello) (wire.Shadow_AttachClient, error) {
	t.Helper()
	stream, err := wire.NewShadowClient(conn).Attach(ctx)
	if err != nil {
		return nil, err
	}
	if err := stream.Send(&wire.StarterMessage{Body: &wire.StarterMessage_Hello{Hello: hello}}); err != nil {
		return nil, err
	}
	first, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	if first.GetJob() == nil {
		t.Fatalf("the shadow sent %v first, not the job", first)
	}
	return stream, nil
}

func mustSend(t *testing.T, stream wire.Shadow_AttachClient, m *wire.StarterMessage) {
	t.Helper()
	if err := stream.Send(m); err != nil {
		t.Fatal(err)
	}
}

func started() *wire.StarterMessage {
	return &wire.StarterMessage{Body: &wire.StarterMessage_Started{Started: &wire.Started{Pid: 42}}}
}

func exited(code int32) *wire.StarterMessage {
	return &wire.StarterMessage{Body: &wire.StarterMessage_Exited{Exited: &wire.Exited{ExitCode: code}}}
}

// TestRemoteIOThroughTheLink does, through the claim's link, what iofs
// does for a job: resolve, open, read, write and change the job's files in
// its Iwd, and no others; the run's final event counts what was done.
func TestRemoteIOThroughTheLink(t *testing.T) {
	a := newAgent(t)
	if err := os.WriteFile(filepath.Join(a.iwd, "in.txt"), []byte("input"), 0o644); err != nil {
		t.Fatal(err)
	}
	ready := a.submit(a.ad(0))
	conn := a.dial(ready)
	stream, err := attach(t, conn, "1.0", secret)
	if err != nil {
		t.Fatal(err)
	}
	mustSend(t, stream, started())
	a.expect(shadow.EventExecuting)

	ctx := t.Context()
	io := wire.NewShadowIOClient(conn)
	path := func(name string) string { return filepath.Join(a.iwd, name) }
	ok := func(what string, errno uint32, err error) {
		t.Helper()
		if err != nil || errno != 0 {
			t.Fatalf("%s: errno %d, %v", what, errno, err)
		}
	}

	// Phase one of the two-phase open: a small file comes whole.
	r, err := io.Resolve(ctx, &wire.ResolveRequest{Secret: secret, Name: "in.txt", Prefetch: 4096})
	ok("resolve", r.GetErrno(), err)
	if r.Path != path("in.txt") || !r.Whole || string(r.Data) != "input" {
		t.Errorf("resolve in.txt: %v", r)
	}
	st, err := io.Stat(ctx, &wire.PathRequest{Secret: secret, Path: a.iwd})
	ok("stat", st.GetErrno(), err)
	if st.Attr.Mode&unix.S_IFMT != unix.S_IFDIR {
		t.Errorf("stat Iwd: mode %o", st.Attr.Mode)
	}
	// A small file read whole with its open needs no handle.
	o, err := io.Open(ctx, &wire.OpenRequest{Secret: secret, Path: path("in.txt"), Flags: unix.O_RDONLY, Prefetch: 4096})
	ok("open in.txt", o.GetErrno(), err)
	if !o.Eof || o.Handle != 0 || string(o.Data) != "input" {
		t.Errorf("open in.txt with prefetch: %v", o)
	}

	// A new file, written, read back and changed through its handle.
	o, err = io.Open(ctx, &wire.OpenRequest{Secret: secret, Path: path("new.txt"), Flags: unix.O_RDWR | unix.O_CREAT, Mode: 0o644})
	ok("create", o.GetErrno(), err)
	h := o.Handle
	w, err := io.Write(ctx, &wire.WriteRequest{Secret: secret, Handle: h, Data: []byte("hello world"), Sync: wire.Sync_SYNC_DATA})
	ok("write", w.GetErrno(), err)
	rd, err := io.Read(ctx, &wire.ReadRequest{Secret: secret, Handle: h, Offset: 6, Size: 100})
	ok("read", rd.GetErrno(), err)
	if string(rd.Data) != "world" {
		t.Errorf("read %q", rd.Data)
	}
	e, err := io.Ftruncate(ctx, &wire.TruncateRequest{Secret: secret, Handle: h, Size: 5})
	ok("ftruncate", e.GetErrno(), err)
	e, err = io.Fallocate(ctx, &wire.FallocateRequest{Secret: secret, Handle: h, Offset: 0, Length: 5})
	ok("fallocate", e.GetErrno(), err)
	e, err = io.Fsync(ctx, &wire.FsyncRequest{Secret: secret, Handle: h})
	ok("fsync", e.GetErrno(), err)
	fs, err := io.Fstat(ctx, &wire.HandleRequest{Secret: secret, Handle: h})
	ok("fstat", fs.GetErrno(), err)
	if fs.Attr.Size != 5 {
		t.Errorf("size after truncate %d, want 5", fs.Attr.Size)
	}
	sa, err := io.SetAttr(ctx, &wire.SetAttrRequest{Secret: secret, Handle: h, SetMode: true, Mode: 0o600, MtimeNow: true, SetMtime: true})
	ok("setattr handle", sa.GetErrno(), err)
	if sa.Attr.Mode&0o777 != 0o600 {
		t.Errorf("mode after setattr %o", sa.Attr.Mode&0o777)
	}
	re, err := io.Reopen(ctx, &wire.ReopenRequest{Secret: secret, Handle: h, Flags: unix.O_RDONLY})
	ok("reopen", re.GetErrno(), err)
	for _, handle := range []uint64{h, re.Handle} {
		c, err := io.Close(ctx, &wire.HandleRequest{Secret: secret, Handle: handle})
		ok("close", c.GetErrno(), err)
	}
	if c, _ := io.Close(ctx, &wire.HandleRequest{Secret: secret, Handle: h}); syscall.Errno(c.GetErrno()) != syscall.EBADF {
		t.Errorf("second close: errno %d, want EBADF", c.GetErrno())
	}
	sa, err = io.SetAttr(ctx, &wire.SetAttrRequest{Secret: secret, Path: path("new.txt"), SetSize: true, Size: 2,
		SetAtime: true, AtimeNs: 1e9, SetMtime: true, MtimeNs: 2e9})
	ok("setattr path", sa.GetErrno(), err)
	if sa.Attr.Size != 2 || sa.Attr.MtimeNs != 2e9 {
		t.Errorf("after setattr by path: %v", sa.Attr)
	}

	// Names: directories, links, FIFOs, renames and removals.
	m, err := io.Mkdir(ctx, &wire.MkdirRequest{Secret: secret, Path: path("sub"), Mode: 0o755})
	ok("mkdir", m.GetErrno(), err)
	sl, err := io.Symlink(ctx, &wire.SymlinkRequest{Secret: secret, Target: "../new.txt", Path: path("sub/link")})
	ok("symlink", sl.GetErrno(), err)
	rl, err := io.Readlink(ctx, &wire.PathRequest{Secret: secret, Path: path("sub/link")})
	ok("readlink", rl.GetErrno(), err)
	if rl.Target != "../new.txt" {
		t.Errorf("readlink %q", rl.Target)
	}
	sa, err = io.SetAttr(ctx, &wire.SetAttrRequest{Secret: secret, Path: path("sub/link"), SetMtime: true, MtimeNs: 3e9})
	ok("setattr link", sa.GetErrno(), err)
	ln, err := io.Link(ctx, &wire.LinkRequest{Secret: secret, OldPath: path("new.txt"), NewPath: path("sub/hard")})
	ok("link", ln.GetErrno(), err)
	if ln.Attr.Nlink != 2 {
		t.Errorf("links after link: %d", ln.Attr.Nlink)
	}
	mk, err := io.Mknod(ctx, &wire.MknodRequest{Secret: secret, Path: path("sub/fifo"), Mode: unix.S_IFIFO | 0o644})
	ok("mknod fifo", mk.GetErrno(), err)
	if mk, _ := io.Mknod(ctx, &wire.MknodRequest{Secret: secret, Path: path("sub/dev"), Mode: unix.S_IFCHR | 0o644}); syscall.Errno(mk.GetErrno()) != syscall.EPERM {
		t.Errorf("mknod of a device: errno %d, want EPERM", mk.GetErrno())
	}
	rn, err := io.Rename(ctx, &wire.RenameRequest{Secret: secret, OldPath: path("sub/hard"), NewPath: path("sub/hard2")})
	ok("rename", rn.GetErrno(), err)
	ls, err := io.ReadDir(ctx, &wire.PathRequest{Secret: secret, Path: path("sub")})
	ok("readdir", ls.GetErrno(), err)
	var names []string
	for _, e := range ls.Entries {
		names = append(names, e.Name)
	}
	slices.Sort(names)
	if strings.Join(names, " ") != "fifo hard2 link" {
		t.Errorf("sub holds %q", names)
	}
	for _, n := range []string{"sub/fifo", "sub/hard2", "sub/link"} {
		u, err := io.Unlink(ctx, &wire.PathRequest{Secret: secret, Path: path(n)})
		ok("unlink "+n, u.GetErrno(), err)
	}
	sd, err := io.SyncDir(ctx, &wire.PathRequest{Secret: secret, Path: path("sub")})
	ok("syncdir", sd.GetErrno(), err)
	rm, err := io.Rmdir(ctx, &wire.PathRequest{Secret: secret, Path: path("sub")})
	ok("rmdir", rm.GetErrno(), err)

	// User attributes only, where the file system has them.
	x, err := io.Setxattr(ctx, &wire.XattrRequest{Secret: secret, Path: path("new.txt"), Name: "user.colour", Value: []byte("blue")})
	if err != nil {
		t.Fatal(err)
	}
	switch syscall.Errno(x.Errno) {
	case syscall.ENOTSUP:
		t.Log("no user attributes on this file system")
	case 0:
		g, err := io.Getxattr(ctx, &wire.XattrRequest{Secret: secret, Path: path("new.txt"), Name: "user.colour"})
		ok("getxattr", g.GetErrno(), err)
		if string(g.Value) != "blue" {
			t.Errorf("getxattr %q", g.Value)
		}
		l, err := io.Listxattr(ctx, &wire.XattrRequest{Secret: secret, Path: path("new.txt")})
		ok("listxattr", l.GetErrno(), err)
		if string(l.Value) != "user.colour\x00" {
			t.Errorf("listxattr %q", l.Value)
		}
		rx, err := io.Removexattr(ctx, &wire.XattrRequest{Secret: secret, Path: path("new.txt"), Name: "user.colour"})
		ok("removexattr", rx.GetErrno(), err)
	default:
		t.Errorf("setxattr: errno %d", x.Errno)
	}
	if g, _ := io.Getxattr(ctx, &wire.XattrRequest{Secret: secret, Path: path("new.txt"), Name: "trusted.x"}); syscall.Errno(g.GetErrno()) != syscall.EOPNOTSUPP {
		t.Errorf("getxattr trusted.x: errno %d, want EOPNOTSUPP", g.GetErrno())
	}
	if x, _ := io.Setxattr(ctx, &wire.XattrRequest{Secret: secret, Path: path("new.txt"), Name: "security.x"}); syscall.Errno(x.GetErrno()) != syscall.EOPNOTSUPP {
		t.Errorf("setxattr security.x: errno %d, want EOPNOTSUPP", x.GetErrno())
	}

	// Nothing outside the job's directory, nor the directory itself.
	if o, _ := io.Open(ctx, &wire.OpenRequest{Secret: secret, Path: "/etc/passwd", Flags: unix.O_RDONLY}); syscall.Errno(o.GetErrno()) != syscall.EACCES {
		t.Errorf("open /etc/passwd: errno %d, want EACCES", o.GetErrno())
	}
	if sl, _ := io.Symlink(ctx, &wire.SymlinkRequest{Secret: secret, Target: "/etc", Path: path("etc")}); sl.GetErrno() != 0 {
		t.Errorf("symlink to /etc: errno %d", sl.GetErrno())
	}
	if o, _ := io.Open(ctx, &wire.OpenRequest{Secret: secret, Path: path("etc/passwd"), Flags: unix.O_RDONLY}); syscall.Errno(o.GetErrno()) != syscall.EACCES {
		t.Errorf("open through a link out: errno %d, want EACCES", o.GetErrno())
	}
	if rm, _ := io.Rmdir(ctx, &wire.PathRequest{Secret: secret, Path: a.iwd}); syscall.Errno(rm.GetErrno()) != syscall.EBUSY {
		t.Errorf("rmdir Iwd: errno %d, want EBUSY", rm.GetErrno())
	}
	if _, err := io.Stat(ctx, &wire.PathRequest{Secret: "guess", Path: a.iwd}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("stat with a wrong secret: %v", err)
	}

	// iofs served in.txt whole from the lookup, and says so.
	acc, err := io.Account(ctx, &wire.AccountRequest{Secret: secret, Files: []*wire.FileUse{
		{Path: path("in.txt"), Opens: 1, Reads: 1, BytesRead: 5}, {Path: "/etc/passwd", Opens: 1}}})
	ok("account", acc.GetErrno(), err)

	mustSend(t, stream, exited(0))
	end := a.expect(shadow.EventExited)
	stats := map[string]shadow.FileStats{}
	for _, f := range end.Files {
		stats[f.Path] = f
	}
	if in := stats[path("in.txt")]; in.Opens != 2 || in.BytesRead != 10 {
		t.Errorf("in.txt counted %+v, want two opens (one accounted by iofs) of 5 bytes each", in)
	}
	if n := stats[path("new.txt")]; n.Opens != 2 || n.Writes != 1 || n.BytesWritten != 11 || n.BytesRead != 5 {
		t.Errorf("new.txt counted %+v", n)
	}
	if _, ok := stats["/etc/passwd"]; ok {
		t.Error("a file outside the job was counted")
	}
}

// TestBetweenJobs: the link answers no calls when it serves no job, and a
// job's files are served only to the starter holding its secret.
func TestBetweenJobs(t *testing.T) {
	a := newAgent(t)
	ready := a.submit(a.ad(0))
	conn := a.dial(ready)
	ctx := t.Context()
	client := wire.NewShadowClient(conn)
	if _, err := attach(t, conn, "1.0", "guess"); status.Code(err) != codes.PermissionDenied {
		t.Errorf("attach with a wrong secret: %v", err)
	}
	if _, err := attach(t, conn, "1.7", secret); status.Code(err) != codes.PermissionDenied {
		t.Errorf("attach for another job: %v", err)
	}
	read := func(name, secret string) ([]byte, error) {
		s, err := client.ReadFile(ctx, &wire.ReadFileRequest{Secret: secret, Name: name})
		if err != nil {
			return nil, err
		}
		var data []byte
		for {
			c, err := s.Recv()
			if errors.Is(err, io.EOF) {
				return data, nil
			}
			if err != nil {
				return nil, err
			}
			data = append(data, c.Data...)
		}
	}
	if data, err := read("executable", secret); err != nil || string(data) != "#!/bin/sh\n" {
		t.Errorf("read the executable: %q, %v", data, err)
	}
	for _, c := range []struct {
		name, secret string
		code         codes.Code
	}{
		{"executable", "guess", codes.PermissionDenied},
		{"input", secret, codes.PermissionDenied}, // the job has none
		{"/etc/passwd", secret, codes.PermissionDenied},
	} {
		if _, err := read(c.name, c.secret); status.Code(err) != c.code {
			t.Errorf("read %s with secret %q: %v, want %v", c.name, c.secret, err, c.code)
		}
	}

	stream, err := attach(t, conn, "1.0", secret)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := attach(t, conn, "1.0", secret); status.Code(err) != codes.AlreadyExists {
		t.Errorf("a second starter attached: %v", err)
	}
	mustSend(t, stream, started())
	a.expect(shadow.EventExecuting)
	mustSend(t, stream, &wire.StarterMessage{Body: &wire.StarterMessage_Usage{Usage: &wire.Usage{UserCpuSeconds: 2, MemoryBytes: 4096}}})
	if u := a.expect(shadow.EventUsage); u.UserCPU != 2 || u.Memory != 4096 {
		t.Errorf("usage %+v", u)
	}
	mustSend(t, stream, exited(0))
	a.expect(shadow.EventExited)

	// Between jobs, nothing is served.
	if _, err := read("executable", secret); status.Code(err) != codes.Unavailable {
		t.Errorf("read between jobs: %v", err)
	}
	if _, err := wire.NewShadowIOClient(conn).Stat(ctx, &wire.PathRequest{Secret: secret, Path: a.iwd}); status.Code(err) != codes.Unavailable {
		t.Errorf("stat between jobs: %v", err)
	}
}

// TestStarterLost: a starter that ends its session before the job's exit
// fails the run, to be run again.
func TestStarterLost(t *testing.T) {
	a := newAgent(t)
	conn := a.dial(a.submit(a.ad(0)))
	stream, err := attach(t, conn, "1.0", secret)
	if err != nil {
		t.Fatal(err)
	}
	mustSend(t, stream, started())
	a.expect(shadow.EventExecuting)
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if ev := a.expect(shadow.EventFailed); !strings.Contains(ev.Reason, "lost the starter") {
		t.Errorf("failed %+v", ev)
	}
}

// TestStarterReconnects: a job with a lease runs on when its session is
// lost; its starter may attach again within the lease (and no other may
// attach in its place), and the run goes on to its end. Once a lease has
// run out the run fails, and a starter that comes later is turned away.
func TestStarterReconnects(t *testing.T) {
	a := newAgent(t)
	conn := a.dial(a.submit(a.ad(0, "JobLeaseDuration = 2")))
	lose := func() {
		t.Helper()
		ctx, cancel := context.WithCancel(t.Context())
		stream, err := attachWith(ctx, t, conn, &wire.Hello{JobId: "1.0", Secret: secret, Host: "exec", Reconnect: true})
		if err != nil {
			t.Fatal(err)
		}
		a.expect(shadow.EventReconnected)
		mustSend(t, stream, &wire.StarterMessage{Body: &wire.StarterMessage_Output{Output: &wire.Output{Fd: 1, Data: []byte("more\n")}}})
		cancel() // the session breaks, as in a network outage
		a.expect(shadow.EventDisconnected)
	}
	ctx, cancel := context.WithCancel(t.Context())
	stream, err := attachWith(ctx, t, conn, &wire.Hello{JobId: "1.0", Secret: secret, Host: "exec"})
	if err != nil {
		t.Fatal(err)
	}
	mustSend(t, stream, started())
	a.expect(shadow.EventExecuting)
	mustSend(t, stream, &wire.StarterMessage{Body: &wire.StarterMessage_Output{Output: &wire.Output{Fd: 1, Data: []byte("first\n")}}})
	cancel()
	if ev := a.expect(shadow.EventDisconnected); ev.Host != "exec" || ev.Reason == "" {
		t.Errorf("disconnected %+v", ev)
	}
	if _, err := attach(t, conn, "1.0", secret); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("a fresh starter attached to a running job: %v", err)
	}
	if _, err := attachWith(t.Context(), t, conn, &wire.Hello{JobId: "1.0", Secret: "wrong", Reconnect: true}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("a starter without the secret attached again: %v", err)
	}
	lose()
	stream, err = attachWith(t.Context(), t, conn, &wire.Hello{JobId: "1.0", Secret: secret, Host: "exec", Reconnect: true})
	if err != nil {
		t.Fatal(err)
	}
	a.expect(shadow.EventReconnected)
	mustSend(t, stream, exited(0))
	if ev := a.expect(shadow.EventExited); ev.ExitCode != 0 {
		t.Errorf("exit %+v", ev)
	}
	if got, _ := os.ReadFile(filepath.Join(a.iwd, "out")); string(got) != "first\nmore\n" {
		t.Errorf("output across the sessions: %q", got)
	}

	conn = a.dial(a.submit(a.ad(1, "JobLeaseDuration = 1")))
	ctx, cancel = context.WithCancel(t.Context())
	if _, err := attachWith(ctx, t, conn, &wire.Hello{JobId: "1.1", Secret: secret, Host: "exec"}); err != nil {
		t.Fatal(err)
	}
	cancel()
	a.expect(shadow.EventDisconnected)
	if ev := a.expect(shadow.EventReconnectFailed); !strings.Contains(ev.Reason, "lease") {
		t.Errorf("reconnect failed %+v", ev)
	}
	if ev := a.expect(shadow.EventFailed); !strings.Contains(ev.Reason, "lease") {
		t.Errorf("failed %+v", ev)
	}
}

// TestOutputCannotBeWritten: a job whose output file cannot be made is
// held, as HTCondor holds it (code 12).
func TestOutputCannotBeWritten(t *testing.T) {
	a := newAgent(t)
	conn := a.dial(a.submit(a.ad(0, `Out = "no/such/dir/out"`)))
	if _, err := attach(t, conn, "1.0", secret); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("attach: %v", err)
	}
	if ev := a.expect(shadow.EventHold); ev.Code != 12 {
		t.Errorf("hold %+v, want code 12", ev)
	}
}

// TestBadSpecs: a job the shadow cannot serve fails at once, and the
// shadow serves the next.
func TestBadSpecs(t *testing.T) {
	a := newAgent(t)
	a.send(shadow.Command{Job: &shadow.Spec{JobAd: a.ad(0)}})
	if ev := a.expect(shadow.EventFailed); !strings.Contains(ev.Reason, "required") {
		t.Errorf("failed %+v", ev)
	}
	a.send(shadow.Command{Job: &shadow.Spec{JobAd: "[ oops", Secret: secret, ListenHost: "127.0.0.1", CAPEM: a.caPEM}})
	a.expect(shadow.EventFailed)
	a.send(shadow.Command{Job: &shadow.Spec{JobAd: "[ Iwd = \"/tmp\" ]", Secret: secret, ListenHost: "127.0.0.1", CAPEM: a.caPEM}})
	if ev := a.expect(shadow.EventFailed); !strings.Contains(ev.Reason, "Cmd") {
		t.Errorf("failed %+v", ev)
	}
	a.send(shadow.Command{Job: &shadow.Spec{JobAd: a.ad(0), Secret: secret, ListenHost: "127.0.0.1", CAPEM: []byte("not a CA")}})
	a.expect(shadow.EventFailed)
	// A kill with no job does nothing; the next job runs.
	a.send(shadow.Command{Kill: true, Reason: "nothing to kill"})
	conn := a.dial(a.submit(a.ad(0)))
	stream, err := attach(t, conn, "1.0", secret)
	if err != nil {
		t.Fatal(err)
	}
	mustSend(t, stream, started())
	a.expect(shadow.EventExecuting)
	mustSend(t, stream, exited(0))
	a.expect(shadow.EventExited)
}

// TestReportTransfer: a transfer the starter made without the shadow
// (to output_destination) becomes the job's transfer events, and only
// with the job's secret.
func TestReportTransfer(t *testing.T) {
	a := newAgent(t)
	client := wire.NewShadowClient(a.dial(a.submit(a.ad(0))))
	if _, err := client.ReportTransfer(t.Context(), &wire.TransferReport{Secret: "guess", Finished: true, Files: 9}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("report with a wrong secret: %v", err)
	}
	if _, err := client.ReportTransfer(t.Context(), &wire.TransferReport{Secret: secret}); err != nil {
		t.Fatal(err)
	}
	if ev := a.expect(shadow.EventTransfer); !ev.Transfer.Output || ev.Transfer.Finished {
		t.Errorf("start of the transfer: %+v, want output, not finished", ev.Transfer)
	}
	if _, err := client.ReportTransfer(t.Context(), &wire.TransferReport{Secret: secret, Finished: true, Files: 5, Bytes: 300000, Seconds: 0.5}); err != nil {
		t.Fatal(err)
	}
	if ev := a.expect(shadow.EventTransfer); !ev.Transfer.Finished || ev.Transfer.Files != 5 || ev.Transfer.Bytes != 300000 {
		t.Errorf("end of the transfer: %+v", ev.Transfer)
	}
}

// TestCheckpointStore: the images a starter sends are checked before they
// replace the job's last good one; a job without one gets none.
func TestCheckpointStore(t *testing.T) {
	a := newAgent(t)
	conn := a.dial(a.submit(a.ad(0)))
	client := wire.NewShadowClient(conn)
	ctx := t.Context()
	get := func(secret string) error {
		s, err := client.GetCheckpoint(ctx, &wire.GetCheckpointRequest{Secret: secret})
		if err != nil {
			return err
		}
		_, err = s.Recv()
		return err
	}
	if err := get(secret); status.Code(err) != codes.NotFound {
		t.Errorf("get with no image: %v", err)
	}
	if err := get("guess"); status.Code(err) != codes.PermissionDenied {
		t.Errorf("get with a wrong secret: %v", err)
	}
	put := func(secret string, data []byte) error {
		s, err := client.PutCheckpoint(ctx)
		if err != nil {
			return err
		}
		if err := s.Send(&wire.CheckpointChunk{Secret: secret, Data: data}); err != nil {
			return err
		}
		_, err = s.CloseAndRecv()
		return err
	}
	if err := put(secret, []byte("not an image")); status.Code(err) != codes.DataLoss {
		t.Errorf("put garbage: %v", err)
	}
	if err := put("guess", nil); status.Code(err) != codes.PermissionDenied {
		t.Errorf("put with a wrong secret: %v", err)
	}
	if _, err := os.Stat(filepath.Join(a.ckptDir, "1.0.ckpt")); err == nil {
		t.Error("a bad upload was stored")
	}
}

// TestCheckpointFiles: a self-checkpointing job's files are saved as a
// set that replaces the previous one, only from within its directory,
// and restored into it; without transfer_checkpoint_files, the set is
// what the job wrote in its run, but for its executable and output.
func TestCheckpointFiles(t *testing.T) {
	a := newAgent(t)
	write := func(name, data string) {
		t.Helper()
		writeIwd(t, a.iwd, name, data)
	}
	write("old-input", "written before the run")
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(a.iwd, "old-input"), past, past); err != nil {
		t.Fatal(err)
	}
	ready := a.submit(a.ad(0, `TransferCheckpoint = "progress,state"`))
	client := wire.NewShadowClient(a.dial(ready))
	stream, err := attach(t, a.dial(ready), "1.0", secret)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	save := func(secret string) (*wire.CheckpointFilesReply, error) {
		return client.SaveCheckpointFiles(ctx, &wire.CheckpointFilesRequest{Secret: secret})
	}
	restore := func() (*wire.CheckpointFilesReply, error) {
		return client.RestoreCheckpointFiles(ctx, &wire.CheckpointFilesRequest{Secret: secret})
	}
	if _, err := restore(); status.Code(err) != codes.NotFound {
		t.Errorf("restore with no files saved: %v", err)
	}
	if _, err := save("guess"); status.Code(err) != codes.PermissionDenied {
		t.Errorf("save with a wrong secret: %v", err)
	}
	if _, err := save(secret); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("save with the named files missing: %v", err)
	}
	write("progress", "5\n")
	write("state/a", "alpha")
	r, err := save(secret)
	if err != nil || r.Files != 2 || r.Bytes != 7 {
		t.Fatalf("save: %v, %v", r, err)
	}
	if ev := a.expect(shadow.EventSelfCheckpointed); ev.CheckpointFiles != 2 || ev.StoredBytes != 7 {
		t.Errorf("event %+v", ev)
	}
	saved := shadow.CheckpointFilesDir(a.ckptDir, "1.0")
	if b, _ := os.ReadFile(filepath.Join(saved, "state", "a")); string(b) != "alpha" {
		t.Errorf("saved state/a = %q", b)
	}
	// The job goes on, and is then started again from its checkpoint.
	write("progress", "7\n")
	if err := os.Remove(filepath.Join(a.iwd, "state", "a")); err != nil {
		t.Fatal(err)
	}
	if r, err := restore(); err != nil || r.Files != 2 {
		t.Fatalf("restore: %v, %v", r, err)
	}
	for name, want := range map[string]string{"progress": "5\n", "state/a": "alpha"} {
		if b, _ := os.ReadFile(filepath.Join(a.iwd, name)); string(b) != want {
			t.Errorf("restored %s = %q, want %q", name, b, want)
		}
	}
	// A link out of the job's directory is not followed, to save or
	// restore.
	outside := filepath.Join(t.TempDir(), "secret")
	writeIwd(t, filepath.Dir(outside), "secret", "not the job's")
	if err := os.Remove(filepath.Join(a.iwd, "progress")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(a.iwd, "progress")); err != nil {
		t.Fatal(err)
	}
	if _, err := save(secret); err == nil {
		t.Error("saved a checkpoint through a link out of the job's directory")
	}
	if _, err := restore(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "not the job's" {
		t.Errorf("restore wrote through a link: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(a.iwd, "progress")); string(b) != "5\n" {
		t.Errorf("progress after a restore over a link = %q", b)
	}
	mustSend(t, stream, exited(0))
	a.expect(shadow.EventExited)

	// Without transfer_checkpoint_files: what the job wrote in its run
	// (the test's agent gives every job the key 1.0).
	if err := os.Chtimes(filepath.Join(a.iwd, "progress"), past, past); err != nil {
		t.Fatal(err)
	}
	ready = a.submit(a.ad(1))
	client = wire.NewShadowClient(a.dial(ready))
	if stream, err = attach(t, a.dial(ready), "1.1", secret); err != nil {
		t.Fatal(err)
	}
	write("result", "42")
	write("out", "the job's output")
	r, err = client.SaveCheckpointFiles(ctx, &wire.CheckpointFilesRequest{Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	a.expect(shadow.EventSelfCheckpointed)
	entries, _ := os.ReadDir(shadow.CheckpointFilesDir(a.ckptDir, "1.0"))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	// progress and old-input were written before the run, state/ is a
	// directory, prog and out are the job's executable and output.
	if strings.Join(names, " ") != "result" || r.Files != 1 {
		t.Errorf("default checkpoint files %v (%d), want [result]", names, r.Files)
	}
	mustSend(t, stream, exited(0))
	a.expect(shadow.EventExited)
}

// writeIwd writes name under dir, making its directory.
func writeIwd(t *testing.T, dir, name, data string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
