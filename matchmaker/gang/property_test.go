package gang

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"harrier.dev/harrier/classad"
)

// randomWorkload makes a small pool: requests with one to three ports
// whose constraints read their partner, earlier labels and attributes
// passed on from earlier partners; candidates without Ports, with one
// port, and with two (members that need a partner of their own).
func randomWorkload(r *rand.Rand, nreq, ncand int) (reqs, cands []*classad.ClassAd, src []string) {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	for range nreq {
		n := 1 + r.IntN(3)
		var ports []string
		for i := range n {
			l := fmt.Sprintf("P%d", i)
			need := r.IntN(5)
			attrs := fmt.Sprintf("Label = %s; need = %d; ", l, need)
			conj := []string{pick(
				l+".x >= need", l+".x < 3 + need", l+`.s == "a"`, l+".z == need", "TARGET.x != 2",
				"("+l+".x > 1 || "+l+".y > 2)", l+".t is undefined", "x > 0", "true", l+".y <= 3",
			)}
			if r.IntN(2) == 0 {
				conj = append(conj, pick(l+".y >= 1", l+`.s != "b"`, l+".x <= 4", "need < 3"))
			}
			if i > 0 {
				prev := fmt.Sprintf("P%d", r.IntN(i))
				attrs += fmt.Sprintf("K = %s.k + %d; ", prev, r.IntN(3))
				if r.IntN(2) == 0 {
					conj = append(conj, pick(l+".y > "+prev+".y", l+".s == "+prev+".s", prev+".x + "+l+".x < 8"))
				}
			}
			port := "[ " + attrs + "Requirements = " + strings.Join(conj, " && ")
			switch r.IntN(3) {
			case 0:
				port += "; Rank = " + l + ".x"
			case 1:
				port += "; Rank = " + l + ".y * 2 - " + l + ".x"
			}
			ports = append(ports, port+" ]")
		}
		reqs = append(reqs, nil)
		src = append(src, "[ Owner = \"u\"; Ports = { "+strings.Join(ports, ", ")+" } ]")
	}
	for range ncand {
		vals := fmt.Sprintf("x = %d; y = %d; s = %q; k = %d; ", r.IntN(6), r.IntN(5), pick("a", "b"), r.IntN(6))
		if r.IntN(3) == 0 {
			vals += fmt.Sprintf("z = %d; ", r.IntN(4))
		}
		lo := r.IntN(5)
		req := func(l string) string {
			return pick(l+".need <= x", fmt.Sprintf("%s.K >= %d && %s.K < %d", l, lo, l, lo+1+r.IntN(4)), "true",
				l+".w is undefined", l+".need != 3", fmt.Sprintf("%s.K == %d", l, lo), l+".need < y + 1 && "+l+".need >= 0")
		}
		switch r.IntN(4) {
		case 0, 1:
			src = append(src, "[ "+vals+"Requirements = "+req("TARGET")+" ]")
		case 2:
			src = append(src, "[ "+vals+"Ports = { [ Label = J; Requirements = "+req("J")+" ] } ]")
		default:
			src = append(src, "[ "+vals+"Ports = { [ Label = J; Requirements = "+req("J")+" ], "+
				"[ Label = Sub; need = 1; Requirements = Sub.x >= 1 && "+pick("Sub.y < 3", "true", `Sub.s == "b"`)+" ] } ]")
		}
		cands = append(cands, nil)
	}
	return reqs, cands, src
}

func parseAll(t *testing.T, src []string, reqs, cands []*classad.ClassAd) {
	t.Helper()
	for i := range reqs {
		reqs[i] = mustParse(t, src[i])
	}
	for i := range cands {
		cands[i] = mustParse(t, src[len(reqs)+i])
	}
}

// gangKey is a gang as the candidate ports it docks, hole by hole.
func gangKey(g *Gang) string {
	if g == nil {
		return "none"
	}
	var b strings.Builder
	for _, mb := range g.Members {
		fmt.Fprintf(&b, "%d.%d:%d.%d ", mb.Owner, mb.Port, mb.Candidate, mb.Link)
	}
	return b.String()
}

// bruteForce enumerates every gang for the request, docking ports in the
// same order as the search, and returns the lexicographically best by
// (Rank, then candidate order) hole by hole: the specification that the
// searches must meet.
func bruteForce(m *Matcher, request *classad.ClassAd) string {
	ports, err := ParsePorts(request)
	if err != nil {
		return "error"
	}
	s := m.newSearch(newMember(request, ports, -1))
	defer s.release()
	type ref struct {
		mb *member
		k  int
	}
	type choice struct {
		rank float64
		r    int
	}
	var best, cur []choice
	var bestGang *Gang
	var rec func(holes []ref, i int, members []Member, owners map[*member]int)
	rec = func(holes []ref, i int, members []Member, owners map[*member]int) {
		if i == len(holes) {
			if best == nil || slices.CompareFunc(cur, best, func(a, b choice) int {
				if a.rank != b.rank {
					if a.rank > b.rank {
						return -1
					}
					return 1
				}
				return a.r - b.r
			}) < 0 {
				best = slices.Clone(cur)
				bestGang = &Gang{Request: request, Members: slices.Clone(members)}
			}
			return
		}
		h := holes[i]
		for r, rd := range m.rids {
			if !m.live.has(r) || rd.mb.inGang {
				continue
			}
			dock(h.mb, h.k, rd.mb, rd.j)
			if s.holds(h.mb, h.k) && s.holds(rd.mb, rd.j) {
				cur = append(cur, choice{m.rank(h.mb, h.k), r})
				rd.mb.inGang = true
				next := slices.Clone(holes[:i+1])
				for j := range rd.mb.ports {
					if j != rd.j {
						next = append(next, ref{rd.mb, j})
					}
				}
				next = append(next, holes[i+1:]...)
				owners[rd.mb] = len(members)
				rec(next, i+1, append(members, Member{Owner: owners[h.mb], Port: h.k, Label: h.mb.ports[h.k].Label,
					Candidate: rd.mb.cand, Ad: rd.mb.ad, Link: rd.j}), owners)
				rd.mb.inGang = false
				cur = cur[:len(cur)-1]
			}
			undock(h.mb, h.k, rd.mb, rd.j)
		}
	}
	var holes []ref
	for k := range ports {
		holes = append(holes, ref{s.root, k})
	}
	rec(holes, 0, nil, map[*member]int{s.root: -1})
	return gangKey(bestGang)
}

// TestAlgorithmsAgree marshals random workloads, request after request,
// with each algorithm and by brute force: all must form the same gangs.
func TestAlgorithmsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	runs := 300
	if testing.Short() {
		runs = 60
	}
	formed := 0
	for run := range runs {
		reqs, cands, src := randomWorkload(r, 4, 4+r.IntN(5))
		parseAll(t, src, reqs, cands)
		ms := map[string]*Matcher{"brute": NewMatcher(cands, Options{})}
		for _, alg := range algorithms {
			ms[alg.String()] = NewMatcher(cands, Options{Algorithm: alg})
		}
		for i, req := range reqs {
			want := bruteForce(ms["brute"], req)
			for _, alg := range algorithms {
				m := ms[alg.String()]
				g, err := m.Marshal(req)
				if err != nil {
					t.Fatalf("run %d request %d: %v", run, i, err)
				}
				if got := gangKey(g); got != want {
					t.Fatalf("run %d request %d, %v: gang %s, brute force %s\n%s", run, i, alg, got, want, strings.Join(src, "\n"))
				}
				if g != nil {
					m.Consume(g)
					if alg == Naive {
						ms["brute"].Consume(g)
						formed++
					}
				}
			}
		}
	}
	if formed == 0 {
		t.Fatal("no gang formed in any workload: the test tests nothing")
	}
	t.Logf("%d gangs formed", formed)
}

// TestBilateralProperty: for ads without Ports, a one-candidate Matcher
// forms a gang exactly when classad.Match matches the pair.
func TestBilateralProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	conj := func() string {
		return pick("TARGET.Memory >= RequestMemory", "other.Arch == \"X86_64\"", "Memory > 100", "MY.RequestMemory < 600",
			"Owner == \"alice\"", "TARGET.Owner != \"bob\"", "Disk", "KFlops > 2", "isUndefined(TARGET.Foo)",
			"TARGET.RequestMemory <= Memory", "Cpus + 1", "(Memory > 1 || Owner == \"x\")", "Helper", "TARGET.Helper")
	}
	req := func() string {
		s := conj()
		for range r.IntN(3) {
			s += " && " + conj()
		}
		return s
	}
	matched := 0
	for range 2000 {
		job := mustParse(t, fmt.Sprintf(`[ Owner = %q; RequestMemory = %d; Helper = Memory > 200; Requirements = %s ]`,
			pick("alice", "bob"), r.IntN(1000), req()))
		machine := mustParse(t, fmt.Sprintf(`[ Arch = %q; Memory = %d; Cpus = %d; KFlops = %d; Requirements = %s ]`,
			pick("X86_64", "ARM"), r.IntN(1000), r.IntN(3)-1, r.IntN(5), req()))
		want := classad.Match(job, machine)
		if want {
			matched++
		}
		for _, alg := range algorithms {
			g, err := NewMatcher([]*classad.ClassAd{machine}, Options{Algorithm: alg}).Marshal(job)
			if err != nil || (g != nil) != want {
				t.Fatalf("%v: gang %v (%v), classad.Match %v\n%s\n%s", alg, g != nil, err, want, job, machine)
			}
		}
	}
	if matched < 100 {
		t.Fatalf("only %d of 2000 pairs match: the test says little", matched)
	}
	t.Logf("%d of 2000 pairs match", matched)
}
