package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/sys/unix"

	"harrier.dev/harrier/imagecache/imagetest"
	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/sandbox"
)

// testRegistry is go-containerregistry's in-process registry served over
// HTTPS with a certificate of a CA of its own, which execute machines
// are given as IMAGE_REGISTRY_CA. With a user set it asks for that
// user's password (basic authentication), as a private registry does.
type testRegistry struct {
	t      testing.TB
	caFile string
	cert   tls.Certificate
	// addr is where the test itself reaches it, on loopback.
	addr     string
	srv      *http.Server
	user     string
	password string
}

// newTestRegistry starts a registry on loopback whose certificate names
// 127.0.0.1 and hosts; serveIn serves it in a host's network namespace
// too.
func newTestRegistry(t testing.TB, user, password string, hosts ...string) *testRegistry {
	t.Helper()
	dir := t.TempDir()
	ca, err := pki.CreateCA(dir, "registry")
	if err != nil {
		t.Fatal(err)
	}
	cert, key := filepath.Join(dir, "registry.pem"), filepath.Join(dir, "registry.key")
	if err := ca.Issue("registry", append([]string{"127.0.0.1"}, hosts...), cert, key); err != nil {
		t.Fatal(err)
	}
	r := &testRegistry{t: t, caFile: filepath.Join(dir, "ca.pem"), user: user, password: password}
	// The execute machines' starters read it as root; the file is
	// public like any CA certificate.
	if err := os.Chmod(r.caFile, 0o644); err != nil {
		t.Fatal(err)
	}
	if r.cert, err = tls.LoadX509KeyPair(cert, key); err != nil {
		t.Fatal(err)
	}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	r.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if u, p, ok := req.BasicAuth(); r.user != "" && (!ok || u != r.user || p != r.password) {
			w.Header().Set("WWW-Authenticate", `Basic realm="harrier-test"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, req)
	}), TLSConfig: &tls.Config{Certificates: []tls.Certificate{r.cert}}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = l.Addr().String()
	r.serve(l)
	t.Cleanup(func() { _ = r.srv.Close() })
	return r
}

func (r *testRegistry) serve(l net.Listener) {
	go func() {
		if err := r.srv.ServeTLS(l, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			r.t.Errorf("registry: %v", err)
		}
	}()
}

// serveIn serves the registry at addr in the network namespace ns too.
func (r *testRegistry) serveIn(ns, addr string) {
	r.t.Helper()
	l, err := listenInNetns(ns, addr)
	if err != nil {
		r.t.Fatal(err)
	}
	r.serve(l)
}

// listenInNetns listens at addr in the named network namespace: a
// socket belongs to the namespace it was made in, whichever thread
// later accepts on it.
func listenInNetns(ns, addr string) (net.Listener, error) {
	type result struct {
		l   net.Listener
		err error
	}
	c := make(chan result, 1)
	go func() {
		// A thread that cannot come back stays locked, and ends with the
		// goroutine.
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			c <- result{err: err}
			return
		}
		defer self.Close()
		target, err := os.Open("/var/run/netns/" + ns)
		if err != nil {
			c <- result{err: err}
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			c <- result{err: err}
			return
		}
		l, err := net.Listen("tcp", addr)
		if unix.Setns(int(self.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		c <- result{l, err}
	}()
	res := <-c
	return res.l, res.err
}

// push writes img to the registry as repo:tag ("harrier/busybox:1").
func (r *testRegistry) push(repoTag string, img v1.Image) {
	r.t.Helper()
	ref, err := name.ParseReference(r.addr + "/" + repoTag)
	if err != nil {
		r.t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(r.caFile)
	if err != nil {
		r.t.Fatal(err)
	}
	pool.AppendCertsFromPEM(pem)
	tr := remote.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	opts := []remote.Option{remote.WithTransport(tr)}
	if r.user != "" {
		opts = append(opts, remote.WithAuth(&authn.Basic{Username: r.user, Password: r.password}))
	}
	if err := remote.Write(ref, img, opts...); err != nil {
		r.t.Fatalf("push %s: %v", ref, err)
	}
}

// TestContainerRegistry pulls users' images from a registry over HTTPS
// on loopback that wants a password. Alice's credentials are in her
// ~/.docker/config.json, which the shadow reads as her: her job pulls
// and runs in the image, and her password is nowhere in the pool's
// files afterwards. Bob has none: his job goes on hold saying the
// registry refused it. An image the registry does not have, and a
// registry that does not answer, put alice's jobs on hold saying which;
// the machine's cache holds the one image pulled, nothing half-made,
// and the machine advertises it (CachedImages).
func TestContainerRegistry(t *testing.T) {
	if err := sandbox.Available(); err != nil {
		t.Skipf("containers not available: %v", err)
	}
	imagetest.NeedBusybox(t)
	const password = "reg-pw-5d1c9e"
	reg := newTestRegistry(t, "alice-reg", password)
	reg.push("harrier/private:1", imagetest.Image(t, map[string]string{"etc/harrier-test-image": "private-image\n"}))
	bin := publicBinary(t)
	p := startPoolFrom(t, bin, 1, "SANDBOX = container\nIMAGE_REGISTRY_CA = "+reg.caFile)
	alice, bob := newUser(t), newUser(t)
	// A port nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deaf := l.Addr().String()
	l.Close()

	auth := base64.StdEncoding.EncodeToString([]byte("alice-reg:" + password))
	writeFile(t, filepath.Join(alice.HomeDir, ".docker", "config.json"),
		fmt.Sprintf(`{"auths": {%q: {"auth": %q}}}`, reg.addr, auth), 0o600)
	submit := func(u *user.User, name, image string) string {
		t.Helper()
		dir := filepath.Join(u.HomeDir, name)
		writeFile(t, filepath.Join(dir, "look.sh"), "#!/bin/sh\ncat /etc/harrier-test-image\n", 0o755)
		uid, gid := lookupIDs(t, u.Username)
		chownAll(t, u.HomeDir, uid, gid)
		c := p.submitAs(t, u.Username, dir, "look.sub", fmt.Sprintf(`universe = container
container_image = docker://%s
executable = look.sh
output = out
error = err
log = look.log
queue
`, image))
		return fmt.Sprintf("%d.0", c)
	}
	good := submit(alice, "good", reg.addr+"/harrier/private:1")
	refused := submit(bob, "refused", reg.addr+"/harrier/private:1")
	missing := submit(alice, "missing", reg.addr+"/harrier/nothere:1")
	unreachable := submit(alice, "unreachable", deaf+"/harrier/private:1")

	if out, code := harrierAs(t, p.env, alice.Username, "wait", "--timeout", "90", good); code != 0 {
		t.Fatalf("wait for alice's job: exit %d: %s\n%v", code, out, p.jobs(t, "q", good))
	}
	if got := mustRead(t, filepath.Join(alice.HomeDir, "good", "out")); got != "private-image\n" {
		t.Errorf("alice's job printed %q", got)
	}
	for _, c := range []struct{ id, want string }{
		{refused, "the registry refused access to the image"},
		{refused, "no credentials for its registry"},
		{missing, "the registry has no such image"},
		{unreachable, "the registry does not answer"},
	} {
		var reason string
		eventually(t, 90*time.Second, "job "+c.id+" to be held", func() bool {
			ads := p.jobs(t, "q", c.id)
			if len(ads) == 0 {
				return false
			}
			reason, _ = ads[0]["HoldReason"].(string)
			return ads[0]["JobStatus"] == 5.0
		})
		if !strings.Contains(reason, c.want) {
			t.Errorf("job %s held for %q, want %q", c.id, reason, c.want)
		}
		t.Logf("job %s held: %s", c.id, reason)
	}

	// The machine advertises the image it now holds, by name and digest.
	eventually(t, 30*time.Second, "the machine to advertise the image it holds", func() bool {
		ads := p.jobs(t, "status")
		if len(ads) == 0 {
			return false
		}
		names, _ := ads[0]["CachedImages"].([]any)
		return len(names) == 2 && names[0] == reg.addr+"/harrier/private:1" &&
			strings.HasPrefix(names[1].(string), reg.addr+"/harrier/private@sha256:")
	})

	cache, _ := filepath.Glob(filepath.Join(p.dir, "execute", "*", "images"))
	if len(cache) != 1 {
		t.Fatalf("image caches: %v", cache)
	}
	if es, _ := os.ReadDir(filepath.Join(cache[0], "tmp")); len(es) != 0 {
		t.Errorf("half-made layers left in the cache: %v", es)
	}
	if es, _ := os.ReadDir(filepath.Join(cache[0], "layers")); len(es) != 2 {
		t.Errorf("the cache holds %d layers, want the pulled image's 2", len(es))
	}
	// The password travelled in memory only.
	_ = filepath.WalkDir(p.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || strings.Contains(path, string(filepath.Separator)+"layers"+string(filepath.Separator)) {
			return nil
		}
		b, _ := os.ReadFile(path)
		if bytes.Contains(b, []byte(password)) || bytes.Contains(b, []byte(auth)) {
			t.Errorf("%s holds alice's registry password", path)
		}
		return nil
	})
}
