package reservation

import (
	"fmt"
	"testing"
	"time"
)

// benchDecide times the decision of one request (Prepare, then Abort so
// that the book stays empty): the candidates, the node records, and the
// policy evaluated per candidate until the request is granted or refused.
func benchDecide(b *testing.B, pol *Policy, nodes []Node, req Request) {
	book, _ := Open("", nil)
	b.ReportAllocs()
	for b.Loop() {
		h, err := book.Prepare(req, nodes, pol)
		if err == nil {
			book.Abort(h)
		}
	}
}

// BenchmarkDecide is the paper's measurement over Harrier's pool sizes:
// a request for 10 machines, 3 hours ahead, by a low-priority user (30%
// of the pool under Figure 5), with no policy and with the paper's
// Figures 4, 5 and 7. All grant it after 10 evaluations; what grows with
// the pool is building the node records and the candidate list.
func BenchmarkDecide(b *testing.B) {
	policies := []struct {
		name string
		pol  *Policy
	}{{"none", nil}, {"figure4", mustLoad(b, "figure4.ad")}, {"figure5", mustLoad(b, "figure5.ad")}, {"figure7", mustLoad(b, "figure7.ad")}}
	for _, n := range []int{100, 1000, 10000, 100000} {
		nodes := idleNodes(n)
		for _, p := range policies {
			b.Run(fmt.Sprintf("policy=%s/nodes=%d", p.name, n), func(b *testing.B) {
				start := time.Now().Add(3 * time.Hour)
				benchDecide(b, p.pol, nodes, Request{Owner: "someone", Start: start, End: start.Add(time.Hour), Nodes: 10})
			})
		}
	}
}

// BenchmarkFigure4Requested is the paper's Figure 9 row it gives numbers
// for: Figure 4 over 1000 machines, 1 to 1000 requested (3.9, 43.0,
// 1167.0 and 72897.8 µs in the paper).
func BenchmarkFigure4Requested(b *testing.B) {
	pol := mustLoad(b, "figure4.ad")
	nodes := idleNodes(1000)
	for _, r := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("nodes=1000/requested=%d", r), func(b *testing.B) {
			start := time.Now().Add(time.Hour)
			benchDecide(b, pol, nodes, Request{Owner: "u", Start: start, End: start.Add(time.Hour), Nodes: r})
		})
	}
}

// BenchmarkFigure5Refused is the paper's Figure 10 case: Figure 5 refuses
// (the low-priority user asks for more than 30% of the pool), so every
// machine is evaluated.
func BenchmarkFigure5Refused(b *testing.B) {
	pol := mustLoad(b, "figure5.ad")
	for _, n := range []int{100, 1000, 10000, 100000} {
		nodes := idleNodes(n)
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			start := time.Now().Add(3 * time.Hour)
			benchDecide(b, pol, nodes, Request{Owner: "someone", Start: start, End: start.Add(time.Hour), Nodes: n/3 + 1})
		})
	}
}
