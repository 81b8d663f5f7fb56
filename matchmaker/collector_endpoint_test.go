package matchmaker

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/wire"
)

func TestEndpointRejectsBadInput(t *testing.T) {
	e := &collectorEndpoint{collector: NewCollector(newFakeClock()), kick: func() {}, defaultLease: time.Minute}
	ctx := asAgent
	for name, call := range map[string]func() error{
		"no type": func() error {
			_, err := e.Advertise(ctx, &wire.AdvertiseRequest{Name: "x", Ad: "[ a = 1 ]"})
			return err
		},
		"no name": func() error {
			_, err := e.Advertise(ctx, &wire.AdvertiseRequest{Type: "Submitter", Ad: "[ a = 1 ]"})
			return err
		},
		"job ad via Advertise": func() error {
			_, err := e.Advertise(ctx, &wire.AdvertiseRequest{Type: "job", Name: "1.0", Ad: jobText(1, 0, "a", "")})
			return err
		},
		"job without ProcId": func() error {
			_, err := e.AdvertiseJobs(ctx, &wire.AdvertiseJobsRequest{Agent: "ag", Ads: []string{`[ ClusterId = 1 ]`}})
			return err
		},
		"no agent": func() error {
			_, err := e.AdvertiseJobs(ctx, &wire.AdvertiseJobsRequest{Ads: []string{jobText(1, 0, "a", "")}})
			return err
		},
		"bad constraint": func() error {
			_, err := e.Query(ctx, &wire.QueryRequest{Type: TypeMachine, Constraint: "(("})
			return err
		},
	} {
		if err := call(); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v, want InvalidArgument", name, err)
		}
	}
	// A rejected job set leaves the previous one in place.
	if _, err := e.AdvertiseJobs(ctx, &wire.AdvertiseJobsRequest{Agent: "ag", Ads: []string{jobText(1, 0, "a", "")}}); err != nil {
		t.Fatal(err)
	}
	e.AdvertiseJobs(ctx, &wire.AdvertiseJobsRequest{Agent: "ag", Ads: []string{jobText(2, 0, "a", ""), "[ oops"}})
	if reply, _ := e.Query(ctx, &wire.QueryRequest{Type: TypeJob}); len(reply.Ads) != 1 {
		t.Errorf("after a rejected set: %d jobs, want the previous 1", len(reply.Ads))
	}
}

func TestEndpointNamesAdFromItsName(t *testing.T) {
	e := &collectorEndpoint{collector: NewCollector(newFakeClock()), kick: func() {}, defaultLease: time.Minute}
	ctx := asAgent
	if _, err := e.Advertise(ctx, &wire.AdvertiseRequest{Type: "Scheduler", Ad: `[ Name = "agent@a"; Addr = "x" ]`}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Invalidate(ctx, &wire.InvalidateRequest{Type: "Scheduler", Name: "agent@a"}); err != nil {
		t.Fatal(err)
	}
	if reply, _ := e.Query(ctx, &wire.QueryRequest{Type: "Scheduler"}); len(reply.Ads) != 0 {
		t.Errorf("invalidated ad still there: %v", reply.Ads)
	}
}

// FuzzEndpoint feeds arbitrary ads and constraints to the collector
// service: it must answer every request without panicking, and an ad it
// accepted must come back from a query for everything.
func FuzzEndpoint(f *testing.F) {
	f.Add(machineText("slot1@a", StateUnclaimed, 1024, ""), "Memory > 512")
	f.Add(jobText(1, 0, "alice", ""), `Owner == "alice"`)
	f.Add(`[ Name = "x"; State = "Unclaimed"; Requirements = undefined ]`, "")
	f.Add(`[ Name = "\u00e9"; a = [ b = {1, 2} ].b[1] ]`, "a is 2 || error")
	f.Add("[", "((")
	f.Fuzz(func(t *testing.T, ad, constraint string) {
		e := &collectorEndpoint{collector: NewCollector(newFakeClock()), kick: func() {}, defaultLease: time.Minute}
		ctx := asAgent
		_, errMachine := e.Advertise(asStartd, &wire.AdvertiseRequest{Type: TypeMachine, Name: "m", Ad: ad})
		_, errJobs := e.AdvertiseJobs(ctx, &wire.AdvertiseJobsRequest{Agent: "ag", Ads: []string{ad}})
		e.Query(ctx, &wire.QueryRequest{Type: TypeMachine, Constraint: constraint})
		e.Query(ctx, &wire.QueryRequest{Type: TypeJob, Constraint: constraint})
		if reply, err := e.Query(ctx, &wire.QueryRequest{Type: TypeMachine}); err != nil || (errMachine == nil) != (len(reply.Ads) == 1) {
			t.Errorf("machine ad accepted: %v; query: %v, %v", errMachine == nil, reply, err)
		}
		if reply, err := e.Query(ctx, &wire.QueryRequest{Type: TypeJob}); err != nil || (errJobs == nil) != (len(reply.Ads) == 1) {
			t.Errorf("job ad accepted: %v; query: %v, %v", errJobs == nil, reply, err)
		}
		jobs, machines := e.collector.Snapshot()
		Negotiator{}.Negotiate(jobs, machines)
	})
}

// An agent's jobs run a cycle when one of them is new, or when the agent
// asks for one because a job it had advertised before is idle again.
func TestEndpointAdvertiseJobsKicks(t *testing.T) {
	kicks := 0
	e := &collectorEndpoint{collector: NewCollector(newFakeClock()), kick: func() { kicks++ }, defaultLease: time.Minute}
	ctx := asAgent
	advertise := func(reschedule bool) int {
		t.Helper()
		before := kicks
		req := &wire.AdvertiseJobsRequest{Agent: "ag", Ads: []string{jobText(1, 0, "a", "")}, Reschedule: reschedule}
		if _, err := e.AdvertiseJobs(ctx, req); err != nil {
			t.Fatal(err)
		}
		return kicks - before
	}
	if n := advertise(false); n != 1 {
		t.Errorf("a new job: %d cycles asked for, want 1", n)
	}
	if n := advertise(false); n != 0 {
		t.Errorf("the same job again: %d cycles asked for, want 0", n)
	}
	if n := advertise(true); n != 1 {
		t.Errorf("the same job, evicted since: %d cycles asked for, want 1", n)
	}
}

// Each ad type has its role, and an ad belongs to the daemon that
// advertised it until its lease runs out: another startd can neither
// replace nor withdraw it.
func TestEndpointAdsBelongToTheirAdvertiser(t *testing.T) {
	clock := newFakeClock()
	e := &collectorEndpoint{collector: NewCollector(clock), kick: func() {}, defaultLease: time.Minute}
	machine := &wire.AdvertiseRequest{Type: TypeMachine, Name: "slot1@a", Ad: machineText("slot1@a", StateUnclaimed, 1024, "")}
	if _, err := e.Advertise(asAgent, machine); status.Code(err) != codes.PermissionDenied {
		t.Errorf("an agent advertising a machine: %v, want PermissionDenied", err)
	}
	if _, err := e.Advertise(asStartd, &wire.AdvertiseRequest{Type: "Scheduler", Name: "agent@a", Ad: "[ a = 1 ]"}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("a startd advertising a scheduler: %v, want PermissionDenied", err)
	}
	if _, err := e.Advertise(asStartd, &wire.AdvertiseRequest{Type: "License", Name: "x", Ad: "[ a = 1 ]"}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("an ad type nobody may advertise: %v, want PermissionDenied", err)
	}
	// A master advertises with a daemon's certificate of its host.
	for _, ctx := range []context.Context{asStartd, asAgent} {
		p, _ := wire.PeerOf(ctx)
		name := "host-" + string(p.Role)
		if _, err := e.Advertise(ctx, &wire.AdvertiseRequest{Type: "DaemonMaster", Name: name, Ad: "[ a = 1 ]"}); err != nil {
			t.Errorf("a master's ad with a %s certificate: %v", p.Role, err)
		}
	}
	if _, err := e.Advertise(asStartd, machine); err != nil {
		t.Fatal(err)
	}
	other := wire.WithPeer(context.Background(), wire.Peer{Identity: "startd@b", Role: pki.RoleStartd})
	hijack := &wire.AdvertiseRequest{Type: TypeMachine, Name: "slot1@a", Ad: machineText("slot1@a", StateUnclaimed, 1, "")}
	if _, err := e.Advertise(other, hijack); status.Code(err) != codes.PermissionDenied {
		t.Errorf("another startd replacing the ad: %v, want PermissionDenied", err)
	}
	if _, err := e.Invalidate(other, &wire.InvalidateRequest{Type: TypeMachine, Name: "slot1@a"}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("another startd withdrawing the ad: %v, want PermissionDenied", err)
	}
	if _, err := e.Invalidate(asAgent, &wire.InvalidateRequest{Type: TypeMachine, Name: "slot1@a"}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("an agent withdrawing the ad: %v, want PermissionDenied", err)
	}
	if reply, _ := e.Query(asAgent, &wire.QueryRequest{Type: TypeMachine, Constraint: "Memory == 1024"}); len(reply.Ads) != 1 {
		t.Errorf("the owner's ad is gone or changed: %v", reply.Ads)
	}
	otherAgent := wire.WithPeer(context.Background(), wire.Peer{Identity: "agent@b", Role: pki.RoleAgent})
	jobs := &wire.AdvertiseJobsRequest{Agent: "agent@a", Ads: []string{jobText(1, 0, "a", "")}}
	if _, err := e.AdvertiseJobs(asAgent, jobs); err != nil {
		t.Fatal(err)
	}
	if _, err := e.AdvertiseJobs(otherAgent, &wire.AdvertiseJobsRequest{Agent: "agent@a"}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("another agent replacing the jobs: %v, want PermissionDenied", err)
	}
	if _, err := e.Invalidate(otherAgent, &wire.InvalidateRequest{Type: TypeJob, Name: "agent@a"}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("another agent withdrawing the jobs: %v, want PermissionDenied", err)
	}
	// Once the owner lets its lease run out, the name is free.
	clock.Advance(2 * time.Minute)
	if _, err := e.Advertise(other, hijack); err != nil {
		t.Errorf("a name whose lease ran out: %v", err)
	}
	if _, err := e.Invalidate(other, &wire.InvalidateRequest{Type: TypeMachine, Name: "slot1@a"}); err != nil {
		t.Errorf("withdrawing one's own ad: %v", err)
	}
}
