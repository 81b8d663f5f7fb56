package matchmaker

import (
	"strings"

	"harrier.dev/harrier/classad"
)

// Group quotas, as HTCondor's, for the accounting groups of the pool: a
// group may have a quota of CPUs (GROUP_QUOTA_<group>) or a share of the
// pool's CPUs (GROUP_QUOTA_DYNAMIC_<group>). The jobs charged to a
// group's users (AccountingGroup "group.user", which the agent sets)
// get machines in a cycle only while the CPUs the group's claims hold,
// with the cycle's own matches, stay within its quota; then a group
// that accepts surplus (GROUP_ACCEPT_SURPLUS, GROUP_ACCEPT_SURPLUS_<group>)
// takes, in fair share with the others that do, what the cycle left.
// Jobs of no group with a quota are bounded by nothing but their share.
// Groups are flat: group_physics.theory is a group of its own.

// GroupQuota is one accounting group's quota.
type GroupQuota struct {
	CPUs          float64 // GROUP_QUOTA_<group>
	Share         float64 // GROUP_QUOTA_DYNAMIC_<group>, when Dynamic
	Dynamic       bool
	AcceptSurplus bool
}

// quota is the CPUs of q in a pool of poolCPUs.
func (q GroupQuota) quota(poolCPUs float64) float64 {
	if q.Dynamic {
		return q.Share * poolCPUs
	}
	return q.CPUs
}

// groupOf is the lower-case group the job of ad, a job's or a claimed
// slot's, is charged in ("group_physics" of AccountingGroup
// "group_physics.alice"), or "" for one charged to its owner alone (whose
// name may hold dots too).
func groupOf(ad *classad.ClassAd) string {
	charged, _ := ad.EvalString(AttrAccountingGroup)
	i := strings.LastIndexByte(charged, '.')
	if i < 0 {
		return ""
	}
	return strings.ToLower(charged[:i])
}

// cpusOf is the CPUs a slot holds, or a job asks for: at least one.
func cpusOf(ad *classad.ClassAd, attr string) float64 {
	if n, ok := ad.EvalInt(attr); ok && n > 1 {
		return float64(n)
	}
	return 1
}

// GroupQuotaAttr and GroupUsageAttr are the attributes of the
// negotiator's ad that give group's quota and the CPUs its claims hold
// (GroupQuota_group_physics, GroupUsage_group_physics).
func GroupQuotaAttr(group string) string { return "GroupQuota_" + attrSafe(group) }

// GroupUsageAttr: see GroupQuotaAttr.
func GroupUsageAttr(group string) string { return "GroupUsage_" + attrSafe(group) }

// GroupState is the quota of the group a job is charged in, as the
// negotiator last counted it.
type GroupState struct {
	Group        string
	Quota, Usage float64
	CPUs         float64 // what the job asks for
}

// JobGroup reads the state of job's group from the negotiator's ad; ok is
// false for a job in no group with a quota.
func JobGroup(job, negotiator *classad.ClassAd) (s GroupState, ok bool) {
	g := groupOf(job)
	if g == "" || negotiator == nil {
		return s, false
	}
	quota, ok := negotiator.EvalReal(GroupQuotaAttr(g))
	if !ok {
		return s, false
	}
	usage, _ := negotiator.EvalReal(GroupUsageAttr(g))
	return GroupState{Group: g, Quota: quota, Usage: usage, CPUs: cpusOf(job, "RequestCpus")}, true
}
