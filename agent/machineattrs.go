package agent

import (
	"slices"
	"strconv"
	"strings"

	"harrier.dev/harrier/classad"
)

// Machine attributes in the job's ad, as HTCondor's schedd records them:
// when a job starts, each attribute X its job_machine_attrs names
// (JobMachineAttrs), or the pool's SYSTEM_JOB_MACHINE_ATTRS, is set to
// the value the machine's ad gives it as MachineAttrX0, the values of
// earlier runs moving to MachineAttrX1, MachineAttrX2 and so on, for as
// many runs as the longer of JobMachineAttrsHistoryLength and
// SYSTEM_JOB_MACHINE_ATTRS_HISTORY_LENGTH (one at least).

const (
	AttrJobMachineAttrs              = "JobMachineAttrs"
	AttrJobMachineAttrsHistoryLength = "JobMachineAttrsHistoryLength"
)

// recordMachineAttrs adds to c the machine attributes of a run of the job
// of ad on machine.
func (a *Agent) recordMachineAttrs(c change, ad, machine *classad.ClassAd) {
	names := slices.Clone(a.cfg.MachineAttrs)
	for _, n := range attrNames(ad, AttrJobMachineAttrs) {
		if !slices.ContainsFunc(names, func(m string) bool { return strings.EqualFold(m, n) }) {
			names = append(names, n)
		}
	}
	history := max(a.cfg.MachineAttrsHistory, 1)
	if n, ok := ad.EvalInt(AttrJobMachineAttrsHistoryLength); ok && n <= 100 {
		history = max(history, int(n))
	}
	if len(names) == 0 || machine == nil {
		return
	}
	for _, name := range names {
		attr := "MachineAttr" + name
		for k := history - 1; k > 0; k-- {
			if e, ok := ad.Lookup(attr + strconv.Itoa(k-1)); ok {
				c[attr+strconv.Itoa(k)] = ad.EvalExpr(e, nil)
			}
		}
		c[attr+"0"] = machine.Eval(name)
	}
}

// attrNames reads a job attribute that lists attribute names
// (JobMachineAttrs, JobAdInformationAttrs), separated by commas or
// spaces as submit writes them or a user may.
func attrNames(ad *classad.ClassAd, attr string) []string {
	s, _ := ad.EvalString(attr)
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
}
