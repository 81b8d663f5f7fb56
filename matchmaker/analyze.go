package matchmaker

import (
	"cmp"
	"slices"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/classad/exprtext"
	"harrier.dev/harrier/imagecache"
)

// An Analysis explains why a job does or does not match a pool's machines,
// as HTCondor's condor_q -better-analyze does.
type Analysis struct {
	Requirements string // the job's Requirements, as printed
	// Conditions are the conjuncts of the job's Requirements, each with
	// the number of machines it holds for on its own.
	Conditions []Condition
	Machines   int
	// RejectedByJob counts the machines the job's Requirements rule out.
	RejectedByJob int
	// RejectedByMachine counts the machines the job accepts but whose own
	// Requirements rule the job out.
	RejectedByMachine int
	// MachineConditions are the machine Requirements conjuncts that
	// rejected the job, each with the number of machines where it was the
	// first to fail, most first.
	MachineConditions []Condition
	// Matching machines, split by what they are doing: running the same
	// owner's jobs, serving other users, or available (Unclaimed).
	RunningOwn, ServingOthers, Available int
	// For a job in its own container image (ContainerImage, or
	// DockerImage): the image, the attribute a machine needs for it
	// (HasContainer or HasDocker), how many machines have it, and how
	// many hold the image already (CachedImages).
	Image, ImageNeeds   string
	RunImage, HoldImage int
}

// A Condition is one conjunct of a Requirements expression and the number
// of machines it held (or, for machine conditions, failed) for.
type Condition struct {
	Text     string
	Machines int
}

// Blame returns the index in Conditions of the condition to change: the
// first one no machine satisfies, or else the one that holds for the
// fewest machines; -1 if there are no conditions or every machine the job
// rejects is rejected by none of them alone.
func (a Analysis) Blame() int {
	best := -1
	for i, c := range a.Conditions {
		if c.Machines == a.Machines {
			continue
		}
		if best < 0 || c.Machines < a.Conditions[best].Machines {
			best = i
		}
	}
	return best
}

// Analyze matches job against every machine and explains the outcome. A
// matching machine charged to whom the job is (its Owner, or its
// accounting group) counts as running the owner's own jobs. A partitionable slot is judged whole, by what it
// has when every dynamic slot has returned, as HTCondor's analysis does:
// what matters is whether the job could ever run there.
func Analyze(job *classad.ClassAd, machines []*classad.ClassAd) Analysis {
	a := Analysis{Machines: len(machines)}
	owner := chargedTo(job, "Owner")
	var conds []classad.Expr
	if e, ok := job.Lookup("Requirements"); ok {
		a.Requirements = e.String()
		for _, c := range exprtext.Conjuncts(exprtext.Scan(a.Requirements)) {
			text := exprtext.Source(a.Requirements, c)
			x, err := classad.ParseExpr(text)
			if err != nil {
				continue
			}
			conds = append(conds, x)
			a.Conditions = append(a.Conditions, Condition{Text: text})
		}
	}
	a.Image, a.ImageNeeds = jobImage(job)
	image := imagecache.NormalName(a.Image)
	byMachineCond := map[string]int{}
	m := classad.NewMatcher()
	for _, mach := range machines {
		if a.Image != "" {
			if b, _ := mach.EvalBool(a.ImageNeeds); b {
				a.RunImage++
			}
			if image != "" && holdsImage(mach, image) {
				a.HoldImage++
			}
		}
		if isPartitionable(mach) {
			mach = whole(mach)
		}
		for i, c := range conds {
			if job.EvalExpr(c, mach).IsTrue() {
				a.Conditions[i].Machines++
			}
		}
		if !m.EvalAttr(job, mach, "Requirements").IsTrue() {
			a.RejectedByJob++
			continue
		}
		if !m.EvalAttr(mach, job, "Requirements").IsTrue() {
			a.RejectedByMachine++
			if text := firstFailing(mach, job); text != "" {
				byMachineCond[text]++
			}
			continue
		}
		switch remote := chargedTo(mach, "RemoteOwner"); {
		case state(mach) == StateUnclaimed:
			a.Available++
		case remote != "" && remote == owner:
			a.RunningOwn++
		default:
			a.ServingOthers++
		}
	}
	for text, n := range byMachineCond {
		a.MachineConditions = append(a.MachineConditions, Condition{Text: text, Machines: n})
	}
	slices.SortFunc(a.MachineConditions, func(x, y Condition) int {
		if c := cmp.Compare(y.Machines, x.Machines); c != 0 {
			return c
		}
		return cmp.Compare(x.Text, y.Text)
	})
	return a
}

// jobImage returns the job's own container image and the machine
// attribute that says a machine can run it; "" for a job in none.
func jobImage(job *classad.ClassAd) (ref, needs string) {
	if ref, _ := job.EvalString("ContainerImage"); ref != "" {
		return ref, "HasContainer"
	}
	if ref, _ := job.EvalString("DockerImage"); ref != "" {
		return ref, "HasDocker"
	}
	return "", ""
}

// firstFailing returns the first conjunct of mach's Requirements that is
// not true against job.
func firstFailing(mach, job *classad.ClassAd) string {
	e, ok := mach.Lookup("Requirements")
	if !ok {
		return "(no Requirements)"
	}
	text := e.String()
	for _, c := range exprtext.Conjuncts(exprtext.Scan(text)) {
		ct := exprtext.Source(text, c)
		x, err := classad.ParseExpr(ct)
		if err != nil {
			return text
		}
		if !mach.EvalExpr(x, job).IsTrue() {
			return ct
		}
	}
	return text
}
