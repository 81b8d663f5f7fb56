package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/matchmaker"
)

// runBench runs in-process benchmarks of pool components.
func runBench(args []string, _ io.Reader, stdout io.Writer) error {
	if len(args) > 0 && args[0] == "throughput" {
		return runBenchThroughput(args[1:], stdout)
	}
	if len(args) == 0 || args[0] != "negotiate" {
		return usagef("bench wants a benchmark name: negotiate or throughput")
	}
	fs := flag.NewFlagSet("bench negotiate", flag.ContinueOnError)
	var p poolShape
	fs.IntVar(&p.machines, "machines", 1236, "machine slots")
	fs.IntVar(&p.jobs, "jobs", 5831, "idle jobs")
	fs.IntVar(&p.users, "users", 85, "submitting users")
	fs.IntVar(&p.autoclusters, "autoclusters", 372, "autoclusters (resource requests)")
	fs.IntVar(&p.models, "models", 24, "hardware models the machines are built from")
	fs.Uint64Var(&p.seed, "seed", 1, "random seed of the synthetic pool")
	runs := fs.Int("runs", 5, "cycles to time; the median is reported")
	workers := fs.Int("workers", 0, "matchlist workers (0: GOMAXPROCS)")
	baseline := fs.Int("baseline", -1, "time the all-pairs negotiator on this many jobs (-1: all jobs if the pool is small, 0: never)")
	fs.BoolVar(&p.partitionable, "partitionable", false, "machines of 64 cores as partitionable slots and jobs of 1-16 cores and 1-64 GiB (defaults: 10,000 machines, 1,000,000 jobs, 2,000 autoclusters)")
	fs.IntVar(&p.coreMemory, "core-memory", 16, "with -partitionable, GiB of memory per core: at 16 the jobs (8.5 cores and 32.5 GiB on average) run out of cores first, at 8 some machines of memory")
	if err := fs.Parse(args[1:]); err != nil {
		return usagef("%v", err)
	}
	if p.partitionable {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for name, v := range map[string]int{"machines": 10_000, "jobs": 1_000_000, "autoclusters": 2_000} {
			if !set[name] {
				_ = fs.Set(name, fmt.Sprint(v))
			}
		}
		if !set["baseline"] {
			*baseline = 0
		}
	}
	if p.machines < 1 || p.jobs < 1 || p.users < 1 || p.autoclusters < 1 || p.autoclusters > p.jobs || p.users > p.autoclusters || p.models < 1 {
		return usagef("want machines, jobs, users, autoclusters, models >= 1, users <= autoclusters <= jobs")
	}
	t := time.Now()
	build := p.build
	if p.partitionable {
		build = p.buildPartitionable
	}
	machines, reqs := build()
	fmt.Fprintf(stdout, "pool: %d machines, %d jobs in %d resource requests of %d users (built in %s)\n",
		len(machines), p.jobs, len(reqs), p.users, time.Since(t).Round(time.Millisecond))
	fmt.Fprintf(stdout, "host: %s/%s, %d CPUs, GOMAXPROCS %d, load average %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), loadAverage())

	n := matchmaker.Negotiator{Priorities: p.priorities(), Workers: *workers}
	var times, cpus []time.Duration
	var res matchmaker.Result
	var heap uint64
	for range max(*runs, 1) {
		runtime.GC()
		t, c := time.Now(), cpuTime()
		res = n.Negotiate(reqs, machines)
		times = append(times, time.Since(t))
		cpus = append(cpus, cpuTime()-c)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heap = max(heap, ms.HeapAlloc)
	}
	med := median(times)
	fmt.Fprintf(stdout, "cycle: median %s over %d runs (min %s, max %s); CPU time median %s\n",
		sec(med), len(times), sec(slices.Min(times)), sec(slices.Max(times)), sec(median(cpus)))
	ph := res.Phases
	fmt.Fprintf(stdout, "phases (last run): requests %s, classify %s, index %s, matchlists %s, allocate %s, preempt %s\n",
		sec(ph.Requests), sec(ph.Classify), sec(ph.Index), sec(ph.MatchLists), sec(ph.Allocate), sec(ph.Preempt))
	fmt.Fprintf(stdout, "matches: %d, rejections: %d, machine classes: %d, matchlists built: %d, matches/s: %.0f\n",
		len(res.Matches), res.Rejections, res.MachineClasses, res.MatchLists, float64(len(res.Matches))/med.Seconds())
	fmt.Fprintf(stdout, "memory: heap after cycle %d MiB, max RSS %d MiB\n", heap>>20, maxRSS()>>20)
	if p.partitionable {
		var cores, used int64
		for _, m := range machines {
			c, _ := m.Ad.EvalInt("Cpus")
			cores += c
		}
		for _, m := range res.Matches {
			c, _ := m.Job.Ad.EvalInt("RequestCpus")
			used += c
		}
		fmt.Fprintf(stdout, "partitionable: %d of %d cores matched after one cycle (%.2f%%), %.1f jobs per machine\n",
			used, cores, 100*float64(used)/float64(cores), float64(len(res.Matches))/float64(len(machines)))
	}

	limit := *baseline
	if limit < 0 {
		limit = 0
		if int64(p.jobs)*int64(p.machines) <= 20_000_000 {
			limit = p.jobs
		}
	}
	if limit > 0 {
		t := time.Now()
		jobs, matches := allPairs(reqs, machines, n.Priorities, limit)
		d := time.Since(t)
		what := "measured"
		full := d
		if jobs < p.jobs {
			full = time.Duration(float64(d) * float64(p.jobs) / float64(jobs))
			what = fmt.Sprintf("extrapolated from %d jobs", jobs)
		}
		fmt.Fprintf(stdout, "baseline (all pairs, one job at a time): %s (%s), %d matches; this cycle is %.0fx faster\n",
			sec(full), what, matches, full.Seconds()/med.Seconds())
	}
	return nil
}

// loadAverage is the first three fields of /proc/loadavg, or "unknown".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

func sec(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// cpuTime is the CPU time the process has used, user and system. Next to
// wall-clock time it tells the work a cycle does from the wait for a CPU
// on a busy machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func maxRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss << 10 // kilobytes on Linux
}

// poolShape describes a synthetic pool.
type poolShape struct {
	machines, jobs, users, autoclusters, models int
	seed                                        uint64
	// partitionable builds whole machines as partitionable slots and
	// jobs of many shapes (see buildPartitionable), with coreMemory GiB
	// of memory a core.
	partitionable bool
	coreMemory    int
}

// A hardware model is a batch of identical machines: pools are bought in
// batches, so slots share architecture, speed, disk and memory sizes.
type model struct {
	arch, opsys  string
	kflops, mips int
	disk         int   // KiB per slot
	memory       []int // MiB per slot, by slot size
	desktop      bool  // owner policy of Figure 1 instead of a dedicated node's
}

var departments = []string{"CompSci", "Physics", "Chemistry", "Biology", "Engineering", "Economics", "Statistics", "Astronomy"}

// build returns the machine ads, in name order, and the resource
// requests: for each autocluster one ad with the attributes matching reads
// (in the style of Figure 1 of Tannenbaum's matchmaking paper) and its
// share of the jobs.
func (p poolShape) build() ([]matchmaker.Machine, []matchmaker.Request) {
	rng := rand.New(rand.NewPCG(p.seed, p.seed^0x9e3779b97f4a7c15))
	models := make([]model, p.models)
	for i := range models {
		m := &models[i]
		switch r := rng.IntN(100); {
		case r < 70:
			m.arch = "X86_64"
		case r < 90:
			m.arch = "aarch64"
		default:
			m.arch = "ppc64le"
		}
		m.opsys = "LINUX"
		if m.arch == "X86_64" && rng.IntN(10) == 0 {
			m.opsys = "WINDOWS"
		}
		m.kflops = 500_000 + rng.IntN(40)*50_000
		m.mips = 2_000 + rng.IntN(30)*500
		m.disk = (20 + rng.IntN(20)*10) * 1024 * 1024
		base := 1024 << rng.IntN(4)
		m.memory = []int{base, 2 * base, 4 * base}
		m.desktop = rng.IntN(10) < 3
	}
	machines := make([]matchmaker.Machine, p.machines)
	for i := range machines {
		m := models[rng.IntN(len(models))]
		name := fmt.Sprintf("slot%d@node%06d.pool", i%4+1, i/4)
		ad := classad.New()
		ad.SetString("MyType", "Machine")
		ad.SetString("TargetType", "Job")
		ad.SetString("Name", name)
		ad.SetString("Machine", name[strings.IndexByte(name, '@')+1:])
		ad.SetString("StartdAddr", "10.0.0.1:9618")
		ad.SetString("State", matchmaker.StateUnclaimed)
		ad.SetString("Activity", "Idle")
		ad.SetString("Arch", m.arch)
		ad.SetString("OpSys", m.opsys)
		ad.SetInt("Cpus", 1)
		ad.SetInt("Memory", int64(m.memory[rng.IntN(len(m.memory))]))
		ad.SetInt("Disk", int64(m.disk))
		ad.SetInt("KFlops", int64(m.kflops))
		ad.SetInt("Mips", int64(m.mips))
		ad.SetReal("LoadAvg", float64(rng.IntN(100))/100)
		ad.SetInt("KeyboardIdle", int64(rng.IntN(4*3600)))
		ad.SetInt("EnteredCurrentState", 1_700_000_000+int64(rng.IntN(86400)))
		if m.desktop {
			ad.SetString("Department", departments[rng.IntN(len(departments))])
			mustSetExpr(ad, "Requirements", "(LoadAvg <= 0.300000) && (KeyboardIdle > (15 * 60)) && TARGET.RequestMemory <= MY.Memory")
			mustSetExpr(ad, "Rank", "other.Department == self.Department")
		} else {
			mustSetExpr(ad, "Requirements", "TARGET.RequestMemory <= MY.Memory && TARGET.RequestDisk <= MY.Disk")
			mustSetExpr(ad, "Rank", "0")
		}
		machines[i] = matchmaker.Machine{Name: name, Ad: ad}
	}
	slices.SortFunc(machines, func(a, b matchmaker.Machine) int { return strings.Compare(a.Name, b.Name) })

	counts := skewedCounts(rng, p.autoclusters, p.jobs)
	reqs := make([]matchmaker.Request, p.autoclusters)
	cluster := 0
	for a := range reqs {
		user := a % p.users
		owner := fmt.Sprintf("user%04d", user)
		ad := classad.New()
		ad.SetString("MyType", "Job")
		ad.SetString("TargetType", "Machine")
		ad.SetString("Owner", owner)
		ad.SetString("Department", departments[user%len(departments)])
		ad.SetInt("RequestCpus", 1)
		ad.SetInt("RequestMemory", int64(256<<rng.IntN(7)))
		ad.SetInt("RequestDisk", int64((1+rng.IntN(20))*1024*1024))
		ad.SetInt("DiskUsage", int64(rng.IntN(10_000)))
		ad.SetInt("JobPrio", int64(rng.IntN(3)))
		ad.SetInt("QDate", 1_700_000_000+int64(a))
		cluster++
		ad.SetInt("ClusterId", int64(cluster))
		ad.SetInt("ProcId", 0)
		ad.SetInt(matchmaker.AttrAutoClusterID, int64(a))
		arch := "X86_64"
		if rng.IntN(5) == 0 {
			arch = "aarch64"
		}
		req := fmt.Sprintf(`(TARGET.Arch == %q && TARGET.OpSys == "LINUX") && TARGET.Disk >= MY.RequestDisk && TARGET.Memory >= MY.RequestMemory`, arch)
		switch rng.IntN(20) {
		case 0: // matches nothing: an architecture the pool lacks
			req = `TARGET.Arch == "SPARC" && TARGET.OpSys == "SOLARIS"`
		case 1: // matches nothing: more memory than any slot
			ad.SetInt("RequestMemory", 1<<20)
		case 2: // prefers a department's desktops
			req += ` && TARGET.Department =?= MY.Department`
		}
		mustSetExpr(ad, "Requirements", req)
		switch rng.IntN(3) {
		case 0:
			mustSetExpr(ad, "Rank", "(TARGET.Memory * 10000) + TARGET.KFlops")
		case 1:
			mustSetExpr(ad, "Rank", "TARGET.KFlops")
		default:
			mustSetExpr(ad, "Rank", "0")
		}
		ids := make([]string, counts[a])
		for j := range ids {
			ids[j] = fmt.Sprintf("%d.%d", cluster, j)
		}
		reqs[a] = matchmaker.Request{ID: fmt.Sprintf("ac%d", a), Agent: fmt.Sprintf("agent%d", user%50), AgentAddr: "10.0.0.2:9618", Ad: ad, JobIDs: ids}
	}
	return machines, reqs
}

// partitionableCores is the size of each machine of the partitionable
// pool.
const partitionableCores = 64

// buildPartitionable returns a pool of whole machines advertised as one
// partitionable slot each, in name order, and resource requests of mixed
// shapes: 1 to 16 cores and 1 to 64 GiB, spread over the autoclusters
// with the skew of build.
func (p poolShape) buildPartitionable() ([]matchmaker.Machine, []matchmaker.Request) {
	rng := rand.New(rand.NewPCG(p.seed, p.seed^0x9e3779b97f4a7c15))
	machines := make([]matchmaker.Machine, p.machines)
	for i := range machines {
		name := fmt.Sprintf("slot1@node%06d.pool", i)
		ad := classad.New()
		ad.SetString("MyType", "Machine")
		ad.SetString("TargetType", "Job")
		ad.SetString("Name", name)
		ad.SetString("Machine", name[strings.IndexByte(name, '@')+1:])
		ad.SetString("StartdAddr", "10.0.0.1:9618")
		ad.SetString("State", matchmaker.StateUnclaimed)
		ad.SetString("Activity", "Idle")
		ad.SetString("Arch", "X86_64")
		ad.SetString("OpSys", "LINUX")
		ad.SetBool(matchmaker.AttrPartitionableSlot, true)
		ad.SetString("SlotType", "Partitionable")
		ad.SetInt("Cpus", partitionableCores)
		ad.SetInt("Memory", int64(partitionableCores*p.coreMemory)<<10)
		ad.SetInt("Disk", 4<<30) // KiB
		ad.SetInt("TotalSlotCpus", partitionableCores)
		ad.SetInt("KFlops", int64(500_000+rng.IntN(40)*50_000))
		mustSetExpr(ad, "Requirements", "TARGET.RequestMemory <= MY.Memory && TARGET.RequestCpus <= MY.Cpus")
		mustSetExpr(ad, "Rank", "0")
		machines[i] = matchmaker.Machine{Name: name, Ad: ad}
	}
	counts := skewedCounts(rng, p.autoclusters, p.jobs)
	reqs := make([]matchmaker.Request, p.autoclusters)
	for a := range reqs {
		user := a % p.users
		ad := classad.New()
		ad.SetString("MyType", "Job")
		ad.SetString("TargetType", "Machine")
		ad.SetString("Owner", fmt.Sprintf("user%04d", user))
		ad.SetInt("RequestCpus", int64(1+rng.IntN(16)))
		ad.SetInt("RequestMemory", int64(1+rng.IntN(64))<<10)
		ad.SetInt("RequestDisk", int64(1+rng.IntN(20))<<20)
		ad.SetInt("JobPrio", int64(rng.IntN(3)))
		ad.SetInt("QDate", 1_700_000_000+int64(a))
		ad.SetInt("ClusterId", int64(a+1))
		ad.SetInt("ProcId", 0)
		ad.SetInt(matchmaker.AttrAutoClusterID, int64(a))
		mustSetExpr(ad, "Requirements", `TARGET.Arch == "X86_64" && TARGET.OpSys == "LINUX" && TARGET.Cpus >= RequestCpus && TARGET.Memory >= RequestMemory && TARGET.Disk >= RequestDisk`)
		ids := make([]string, counts[a])
		for j := range ids {
			ids[j] = fmt.Sprintf("%d.%d", a+1, j)
		}
		reqs[a] = matchmaker.Request{ID: fmt.Sprintf("ac%d", a), Agent: fmt.Sprintf("agent%d", user%50), AgentAddr: "10.0.0.2:9618", Ad: ad, JobIDs: ids}
	}
	return machines, reqs
}

func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}

func mustSetExpr(ad *classad.ClassAd, name, src string) {
	if err := ad.SetExpr(name, src); err != nil {
		panic(fmt.Sprintf("synthetic %s %q: %v", name, src, err))
	}
}

// priorities gives the synthetic users a spread of priorities, as a pool's
// accountant would after users ran different amounts.
func (p poolShape) priorities() matchmaker.Prioritizer {
	a := matchmaker.NewAccountant(time.Hour, 1, nil)
	usage := map[string]int{}
	for u := range p.users {
		usage[fmt.Sprintf("user%04d", u)] = u % 20
	}
	now := time.Unix(1_700_000_000, 0)
	a.Update(now, usage)
	a.Update(now.Add(time.Hour), usage)
	return a
}

// allPairs is the baseline negotiator: each job, one at a time in
// submitter and job order, against every free machine, keeping the best by
// Rank; no autoclusters, matchlists, classes or index. It stops after
// limit jobs and returns the jobs considered and the matches made.
func allPairs(reqs []matchmaker.Request, machines []matchmaker.Machine, p matchmaker.Prioritizer, limit int) (jobs, matches int) {
	order := slices.Clone(reqs)
	prio := func(r matchmaker.Request) float64 {
		o, _ := r.Ad.EvalString("Owner")
		return p.Priority(o)
	}
	slices.SortStableFunc(order, func(a, b matchmaker.Request) int {
		pa, pb := prio(a), prio(b)
		switch {
		case pa < pb:
			return -1
		case pa > pb:
			return 1
		}
		return 0
	})
	taken := make([]bool, len(machines))
	m := classad.NewMatcher()
	for _, r := range order {
		for range r.JobIDs {
			if jobs == limit {
				return jobs, matches
			}
			jobs++
			best := -1
			var bjr, bmr float64
			for i, mach := range machines {
				if taken[i] || !m.Match(r.Ad, mach.Ad) {
					continue
				}
				jr, mr := m.Rank(r.Ad, mach.Ad), m.Rank(mach.Ad, r.Ad)
				if best < 0 || jr > bjr || jr == bjr && mr > bmr {
					best, bjr, bmr = i, jr, mr
				}
			}
			if best >= 0 {
				taken[best] = true
				matches++
			}
		}
	}
	return jobs, matches
}

// skewedCounts shares jobs among autoclusters unevenly, as a few users
// submit large batches: each gets at least one.
func skewedCounts(rng *rand.Rand, autoclusters, jobs int) []int {
	weights := make([]float64, autoclusters)
	var total float64
	for i := range weights {
		weights[i] = 1 / (1 + rng.Float64()*9)
		total += weights[i]
	}
	counts := make([]int, autoclusters)
	left := jobs - autoclusters
	for i := range counts {
		counts[i] = 1 + int(float64(left)*weights[i]/total)
	}
	for i := 0; sum(counts) < jobs; i++ {
		counts[i%len(counts)]++
	}
	return counts
}
