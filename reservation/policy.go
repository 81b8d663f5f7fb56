package reservation

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"harrier.dev/harrier/classad"
)

// Names the policy reads and defines.
const (
	attrReservable = "PLUS_NODE_RESERVABLE"
	attrReason     = "RefusalReason"
)

// A Policy is the administrator's reservation-acceptance policy: a
// ClassAd that defines PLUS_NODE_RESERVABLE. A nil *Policy accepts every
// free machine. A Policy is read-only and may be used concurrently.
type Policy struct {
	ad     *classad.ClassAd
	source string // the file it came from, for messages
}

// ParsePolicy parses a policy written as the paper writes one: attribute
// definitions separated by semicolons, in brackets or not. source names
// it in errors.
func ParsePolicy(text, source string) (*Policy, error) {
	body := strings.TrimSpace(text)
	if !strings.HasPrefix(body, "[") {
		body = "[\n" + text + "\n]"
	}
	ad, err := classad.Parse(body)
	if err != nil {
		return nil, fmt.Errorf("reservation policy %s: %w", source, err)
	}
	if _, ok := ad.Lookup(attrReservable); !ok {
		return nil, fmt.Errorf("reservation policy %s: no %s", source, attrReservable)
	}
	return &Policy{ad: ad, source: source}, nil
}

// LoadPolicy reads the policy file at path; "" or a missing file is no
// policy (nil), as PluS accepts whatever is free without one.
func LoadPolicy(path string) (*Policy, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reservation policy: %w", err)
	}
	return ParsePolicy(string(b), path)
}

// A Request asks for Nodes machines for Owner from Start to End.
type Request struct {
	Owner      string
	Start, End time.Time
	Nodes      int
}

// check refuses a request that cannot be met whatever the policy.
func (r Request) check(now time.Time) error {
	switch {
	case r.Owner == "":
		return errors.New("a reservation needs an owner")
	case r.Nodes < 1:
		return fmt.Errorf("%d machines: ask for at least one", r.Nodes)
	case !r.End.After(r.Start):
		return errors.New("the window ends before it starts")
	case !r.End.After(now):
		return errors.New("the window has already ended")
	}
	return nil
}

// A RefusedError is a request the policy, or the lack of free machines,
// turned down.
type RefusedError struct {
	Reason string
}

func (e *RefusedError) Error() string { return "reservation refused: " + e.Reason }

// decide picks req.Nodes of the candidates (indices into all, in the
// order they are to be tried) that the policy finds reservable, or
// returns a *RefusedError. history is what plus_rsvutil reads.
func (p *Policy) decide(req Request, all []Node, candidates []int, history []Reservation) ([]string, error) {
	if p == nil {
		if len(candidates) < req.Nodes {
			return nil, &RefusedError{Reason: fmt.Sprintf("%d machines asked for, %d free in the window", req.Nodes, len(candidates))}
		}
		names := make([]string, req.Nodes)
		for i, c := range candidates[:req.Nodes] {
			names[i] = all[c].Name
		}
		return names, nil
	}
	e := p.env(req, all, history)
	var names []string
	allocated := make([]classad.Value, 0, req.Nodes)
	refused := -1
	for _, c := range candidates {
		e.x.Set("PLUS_CANDIDATE_NODE", classad.Literal(e.records[c]))
		e.x.Set("PLUS_ALLOCATED_NODES", classad.Literal(classad.ListOf(allocated)))
		if !e.m.EvalIn(&e.policy, attrReservable).IsTrue() {
			refused = c
			continue
		}
		allocated = append(allocated, e.records[c])
		names = append(names, all[c].Name)
		if len(names) == req.Nodes {
			return names, nil
		}
	}
	reason := fmt.Sprintf("%d machines asked for; %d free in the window, of which the policy (%s) grants %d", req.Nodes, len(candidates), p.source, len(names))
	if refused >= 0 {
		// The environment as it was for the last refused candidate.
		e.x.Set("PLUS_CANDIDATE_NODE", classad.Literal(e.records[refused]))
		if why, ok := e.m.EvalIn(&e.policy, attrReason).StringValue(); ok && why != "" {
			reason += ": " + why
		}
	}
	return nil, &RefusedError{Reason: reason}
}

// env is a policy's evaluation environment for one request.
type env struct {
	x       *classad.Context
	policy  classad.Scope
	m       classad.Matcher
	records []classad.Value // the node records, as all
}

// env binds the request, the pool's nodes and the paper's functions
// around p.
func (p *Policy) env(req Request, all []Node, history []Reservation) *env {
	e := &env{x: classad.NewContext(), records: make([]classad.Value, len(all))}
	for i, n := range all {
		e.records[i] = n.record()
	}
	e.x.Set("PLUS_RSV_OWNER", classad.Literal(classad.String(req.Owner)))
	e.x.Set("PLUS_RSV_START", classad.Literal(absTime(req.Start)))
	e.x.Set("PLUS_RSV_END", classad.Literal(absTime(req.End)))
	e.x.Set("PLUS_ALL_NODES", classad.Literal(classad.ListOf(e.records)))
	e.x.SetRelTimesAsNumbers(true)
	e.x.SetFunc("plus_rsvutil", rsvutil(history))
	e.x.SetFunc("evaluateList", evaluateList)
	e.x.SetFunc("linear", linear)
	e.x.SetFunc("reverseSort", reverseSort)
	e.policy.PlaceIn(p.ad, e.x)
	return e
}
