// Package pgtest starts PostgreSQL servers for tests: a server of the
// test's own, made by initdb in a temporary directory, listening on a Unix
// socket in that directory and on no TCP port, run as an unprivileged user,
// and removed when the test ends.
//
// It needs PostgreSQL's server binaries (Debian's postgresql package,
// which scripts/setup installs). Without them a test fails, or under
// -short skips, saying so.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Superuser is the database superuser initdb makes; it connects without a
// password, over the socket only.
const Superuser = "postgres"

// Server is a PostgreSQL server a test started.
type Server struct {
	dir  string // the socket directory, holding data/ and postgres.log
	bin  string // directory of initdb and postgres
	cred *syscall.Credential
	opts Options
	cmd  *exec.Cmd     // the running server, nil when stopped
	done chan struct{} // closed when cmd has exited
	dbs  atomic.Int64  // databases made by NewDatabase
}

// Options tune a Server.
type Options struct {
	// Durable keeps fsync on, for benchmarks that compare durable commits.
	// Tests leave it off: a server's crash keeps what it acknowledged
	// anyway, and only a machine's crash would not.
	Durable bool
}

// Start initialises a cluster in a new temporary directory and starts a
// server on it, stopped and removed when t ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	bin, err := binDir()
	if err != nil {
		if testing.Short() {
			t.Skipf("needs a PostgreSQL server: %v (scripts/setup installs Debian's postgresql)", err)
		}
		t.Fatalf("needs a PostgreSQL server: %v (scripts/setup installs Debian's postgresql)", err)
	}
	cred, err := serverUser()
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: its parent is private to root, and the server runs as
	// another user. A short path keeps the socket's within its limit.
	dir, err := os.MkdirTemp("", "pg")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{dir: dir, bin: bin, cred: cred, opts: opts}
	t.Cleanup(func() {
		s.stop()
		os.RemoveAll(dir)
	})
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	initdb := s.command("initdb", "-D", s.dataDir(), "-U", Superuser, "--auth=trust",
		"--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	s.Start(t)
	return s
}

// binDir finds initdb and postgres: in the newest of Debian's versioned
// directories, else on PATH.
func binDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(d string) int {
		n, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		return n
	}
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("initdb and postgres are in neither /usr/lib/postgresql/*/bin nor PATH")
}

// serverUser returns the user to run the server as: PostgreSQL refuses to
// run as root, so root runs it as the postgres user Debian's package makes;
// anyone else runs it as themselves (nil).
func serverUser() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL does not run as root, and there is no postgres user to run it as: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func (s *Server) dataDir() string { return filepath.Join(s.dir, "data") }
func (s *Server) logPath() string { return filepath.Join(s.dir, "postgres.log") }

func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Setpgid: true}
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}
	return cmd
}

// Start starts the server again after Stop, and waits until it takes
// connections.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	if s.cmd != nil {
		t.Fatal("pgtest: server already running")
	}
	logf, err := os.OpenFile(s.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	fsync := "off"
	if s.opts.Durable {
		fsync = "on"
	}
	cmd := s.command("postgres", "-D", s.dataDir(), "-k", s.dir,
		"-c", "listen_addresses=", "-c", "unix_socket_permissions=0777",
		"-c", "fsync="+fsync, "-c", "max_connections=40", "-c", "shared_buffers=32MB")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start postgres: %v", err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func(done chan struct{}) { cmd.Wait(); close(done) }(s.done)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, err := pgx.Connect(ctx, s.DSN("postgres"))
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return
		}
		select {
		case <-s.done:
			s.cmd = nil
			t.Fatalf("postgres exited while starting: %s", s.logTail())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("postgres did not take connections within a minute: %v\n%s", err, s.logTail())
		}
	}
}

// Stop shuts the server down (a fast shutdown: sessions are ended, what
// was committed stays) and waits until it has exited.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if s.cmd == nil {
		t.Fatal("pgtest: server not running")
	}
	s.stop()
}

func (s *Server) stop() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGINT)
	<-s.done
	s.cmd = nil
}

func (s *Server) logTail() string {
	b, _ := os.ReadFile(s.logPath())
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}

// Dir is the directory of the server's socket, the host of a DSN.
func (s *Server) Dir() string { return s.dir }

// DSN returns the connection string of database db, as the superuser.
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("host=%s user=%s dbname=%s", s.dir, Superuser, db)
}

// URL returns the connection URL of database db, as the superuser.
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres:///%s?host=%s&user=%s", db, s.dir, Superuser)
}

// NewDatabase creates an empty database and returns its name.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("test%d", s.dbs.Add(1))
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		t.Fatalf("connect to create a database: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	return name
}

// Psql runs query in database db with psql, PostgreSQL's own client, as
// the superuser, and returns its unaligned output: a row a line, columns
// separated by '|', without headers.
func (s *Server) Psql(t testing.TB, db, query string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(s.bin, "psql"), "-X", "--no-align", "--tuples-only", "-v", "ON_ERROR_STOP=1",
		"-d", s.DSN(db), "-c", query)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("psql -c %q: %v\n%s", query, err, out)
	}
	return string(out)
}
