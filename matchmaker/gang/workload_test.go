package gang

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"harrier.dev/harrier/classad"
)

// The base workload of the thesis's §5.2.1: as many jobs as machines, a
// license for every job (100%) or every other job (50%), and licenses
// split into sel partitions, each valid only on the machines whose Key
// falls in the matching partition. Machines follow the UW–Madison pool
// of March 2000 (Figures 26 and 27); a job wants a machine of one
// architecture and system with enough virtual memory, the machine wants
// the job's memory to fit, and the job passes the machine's Key to its
// license as HostId (Figures 28 to 30). Sizes are in bytes: Harrier's
// ClassAds take no 64M suffix.

var archOS = []struct {
	arch, os string
	p        float64
}{
	{"INTEL", "LINUX", .3191}, {"INTEL", "SOLARIS26", .2127}, {"INTEL", "WINNT40", .2411},
	{"SGI", "IRIX6", .0212}, {"SUN4u", "SOLARIS26", .0390}, {"SUN4u", "SOLARIS27", .0390},
	{"SUN4x", "SOLARIS26", .0766}, {"SUN4x", "SOLARIS27", .0524},
}

var memories = []struct {
	mb int
	p  float64
}{{32, .07}, {64, .40}, {128, .20}, {256, .20}, {800, .13}}

const mega = 1 << 20

func pickArch(r *rand.Rand) (string, string) {
	x := r.Float64()
	for _, a := range archOS {
		if x -= a.p; x < 0 {
			return a.arch, a.os
		}
	}
	last := archOS[len(archOS)-1]
	return last.arch, last.os
}

func pickMemory(r *rand.Rand) float64 {
	x := r.Float64()
	for _, m := range memories {
		if x -= m.p; x < 0 {
			return float64(m.mb * mega)
		}
	}
	return float64(memories[len(memories)-1].mb * mega)
}

// baseWorkload returns n jobs and the candidates (n machines and the
// licenses, shuffled together: the pool holds them in no useful order).
func baseWorkload(tb testing.TB, n, licensePct, sel int, seed uint64) (jobs, cands []*classad.ClassAd) {
	tb.Helper()
	r := rand.New(rand.NewPCG(seed, uint64(n*1000+licensePct*10+sel)))
	parse := func(src string) *classad.ClassAd {
		ad, err := classad.Parse(src)
		if err != nil {
			tb.Fatalf("%v: %s", err, src)
		}
		return ad
	}
	for key := range n {
		arch, os := pickArch(r)
		mem := pickMemory(r)
		vm := (0.2 + 0.7*r.Float64()) * 2 * mem
		cands = append(cands, parse(fmt.Sprintf(`[ Key = %d; Type = "Machine"; Arch = %q; OpSys = %q; Memory = %.0f; VirtualMemory = %f;
		  Ports = { [ Label = Job; Constraint = Job.MemoryReqs < Memory - %d ] } ]`, key, arch, os, mem, vm, 15*mega)))
	}
	nlic := n * licensePct / 100
	width := n / sel
	for l := range nlic {
		p := l * sel / nlic
		cands = append(cands, parse(fmt.Sprintf(`[ Type = "License"; App = "sim_app";
		  Ports = { [ Label = Site; Constraint = Site.HostID >= %d && Site.HostId < %d ] } ]`, width*p, width*(p+1))))
	}
	r.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
	for range n {
		mem := pickMemory(r)
		image := (0.2 + 0.6*r.Float64()) * 2 * mem
		reqs := (0.2 + 0.3*r.Float64()) * image
		arch, os := pickArch(r)
		jobs = append(jobs, parse(fmt.Sprintf(`[ Ports = {
		  [ Label = Cpu; ImageSize = %f; MemoryReqs = %f;
		    Constraint = Cpu.Arch == %q && Cpu.OpSys == %q && Cpu.VirtualMemory > ImageSize ],
		  [ Label = License; HostId = Cpu.Key; Constraint = License.App == "sim_app" ] } ]`, image, reqs, arch, os)))
	}
	return jobs, cands
}

// cycle marshals a gang for every job in order, consuming each, as one
// matchmaking cycle does, and returns the gangs formed and the work done.
func cycle(tb testing.TB, jobs, cands []*classad.ClassAd, alg Algorithm) (int, Stats) {
	m := NewMatcher(cands, Options{Algorithm: alg})
	formed := 0
	for _, j := range jobs {
		g, err := m.Marshal(j)
		if err != nil {
			tb.Fatal(err)
		}
		if g != nil {
			m.Consume(g)
			formed++
		}
	}
	return formed, m.Stats()
}

// The three algorithms form the same gangs on the base workload too.
func TestBaseWorkloadAgree(t *testing.T) {
	for _, pct := range []int{100, 50} {
		for _, sel := range []int{1, 8} {
			jobs, cands := baseWorkload(t, 120, pct, sel, 1)
			var keys [3][]string
			for ai, alg := range algorithms {
				m := NewMatcher(cands, Options{Algorithm: alg})
				for _, j := range jobs {
					g, _ := m.Marshal(j)
					keys[ai] = append(keys[ai], gangKey(g))
					if g != nil {
						m.Consume(g)
					}
				}
			}
			for i := range keys[0] {
				if keys[0][i] != keys[1][i] || keys[0][i] != keys[2][i] {
					t.Fatalf("%d%%/%d job %d: naive %s, LR %s, DYN %s", pct, sel, i, keys[0][i], keys[1][i], keys[2][i])
				}
			}
		}
	}
}
