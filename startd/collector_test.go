package startd

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

// fakeCollector records the ads a startd sends it.
type fakeCollector struct {
	wire.UnimplementedCollectorServer

	mu          sync.Mutex
	latest      map[string]string // name → newest ad text
	sent        map[string]int    // name → ads received
	leases      map[string]int32
	invalidated map[string]bool
	order       []string      // the names of the ads received, in order
	changed     chan struct{} // closed and replaced on every call
}

// startCollector serves a fake collector over TLS on 127.0.0.1 until the
// test ends and returns it with its address.
func startCollector(t *testing.T, serverTLS *tls.Config) (*fakeCollector, string) {
	t.Helper()
	c := &fakeCollector{
		latest:      map[string]string{},
		sent:        map[string]int{},
		leases:      map[string]int32{},
		invalidated: map[string]bool{},
		changed:     make(chan struct{}),
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(wire.ServerOptions(serverTLS)...)
	wire.RegisterCollectorServer(srv, c)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return c, lis.Addr().String()
}

func (c *fakeCollector) Advertise(_ context.Context, req *wire.AdvertiseRequest) (*wire.AdvertiseReply, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if req.Type == "Machine" {
		c.latest[req.Name] = req.Ad
		c.sent[req.Name]++
		c.order = append(c.order, req.Name)
		c.leases[req.Name] = req.LeaseSeconds
		delete(c.invalidated, req.Name)
	}
	c.broadcast()
	return &wire.AdvertiseReply{}, nil
}

func (c *fakeCollector) Invalidate(_ context.Context, req *wire.InvalidateRequest) (*wire.InvalidateReply, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if req.Type == "Machine" {
		c.invalidated[req.Name] = true
	}
	c.broadcast()
	return &wire.InvalidateReply{}, nil
}

// broadcast wakes every waiter; c.mu must be held.
func (c *fakeCollector) broadcast() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// waitFor waits until cond, evaluated with c.mu held, is true.
func (c *fakeCollector) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		c.mu.Lock()
		ok := cond()
		ch := c.changed
		c.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("collector never saw %s; ads: %v", what, c.snapshot())
		}
	}
}

func (c *fakeCollector) snapshot() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[string]string, len(c.latest))
	for k, v := range c.latest {
		m[k] = v
	}
	return m
}

// waitStatus waits until the newest ad of slot shows st and returns it.
func (c *fakeCollector) waitStatus(t *testing.T, slot string, st Status) *classad.ClassAd {
	t.Helper()
	var ad *classad.ClassAd
	c.waitFor(t, slot+" in "+st.String(), func() bool {
		text, ok := c.latest[slot]
		if !ok {
			return false
		}
		a, err := classad.Parse(text)
		if err != nil {
			t.Fatalf("collector got a malformed ad %q: %v", text, err)
		}
		state, _ := a.EvalString("State")
		activity, _ := a.EvalString("Activity")
		if state == string(st.State) && activity == string(st.Activity) {
			ad = a
			return true
		}
		return false
	})
	return ad
}
