package agent

import (
	"slices"
	"strings"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/matchmaker"
)

// Accounting groups, as HTCondor's: a job's accounting_group (AcctGroup)
// names the group it runs in, and the agent charges the job to
// group.owner (AccountingGroup), which the matchmaker negotiates for and
// counts the usage of, and each claimed slot publishes, in place of the
// owner. Only the agent sets AccountingGroup, and only for a group the
// pool lists (Config.AccountingGroups): a user could otherwise make up
// groups, each with a fair share of its own. A job is always charged to
// its owner within the group (AcctGroupUser is the owner).

// chargeJob sets who the job of ad, owned by owner, is charged to, over
// what its submitter wrote. A nice user's job (nice_user) is charged to
// nice-user.owner, whose priority is the worst (see
// matchmaker.NiceUserFactor), whatever its group.
func (a *Agent) chargeJob(ad *classad.ClassAd, owner string) {
	ad.Delete(AttrAccountingGroup)
	if nice, _ := ad.EvalBool(AttrNiceUser); nice {
		ad.SetString(AttrAccountingGroup, matchmaker.NiceUserPrefix+owner)
		return
	}
	group, _ := ad.EvalString(AttrAcctGroup)
	if group == "" {
		ad.Delete(AttrAcctGroupUser)
		return
	}
	ad.SetString(AttrAcctGroupUser, owner)
	// Spelled as the pool spells the group, so that all its jobs are
	// charged alike.
	if i := slices.IndexFunc(a.cfg.AccountingGroups, func(g string) bool { return strings.EqualFold(g, group) }); i >= 0 {
		ad.SetString(AttrAccountingGroup, a.cfg.AccountingGroups[i]+"."+owner)
	}
}
