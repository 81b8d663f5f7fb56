package matchmaker

import (
	"fmt"
	"strings"
	"testing"
)

func TestGroupQuotasFromConfig(t *testing.T) {
	cfg := map[string]string{"GROUP_NAMES": "group_a, group_b", "GROUP_QUOTA_group_a": "2", "GROUP_QUOTA_DYNAMIC_GROUP_B": "0.5",
		"GROUP_ACCEPT_SURPLUS": "true", "GROUP_ACCEPT_SURPLUS_group_b": "false"}
	var keys []string
	for k := range cfg {
		keys = append(keys, k)
	}
	l, err := LimitsFromConfig(keys, func(k string) string { return cfg[k] }, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]GroupQuota{"group_a": {CPUs: 2, AcceptSurplus: true}, "group_b": {Share: 0.5, Dynamic: true}}
	if fmt.Sprint(l.Groups) != fmt.Sprint(want) || l.empty() {
		t.Errorf("groups %+v, want %+v", l.Groups, want)
	}
	for key, bad := range map[string]string{"GROUP_QUOTA_group_a": "lots", "GROUP_QUOTA_DYNAMIC_GROUP_B": "1.5", "GROUP_ACCEPT_SURPLUS": "maybe"} {
		was := cfg[key]
		cfg[key] = bad
		if _, err := LimitsFromConfig(keys, func(k string) string { return cfg[k] }, nil); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s = %s: %v, want an error naming it", key, bad, err)
		}
		cfg[key] = was
	}
}

// TestNegotiateGroupQuotas: the jobs charged to a group's users get
// machines only up to the group's quota, counting the CPUs its claims
// hold; what the others leave goes to a group that accepts surplus.
func TestNegotiateGroupQuotas(t *testing.T) {
	free := func(n int) []Machine {
		var ms []Machine
		for i := range n {
			ms = append(ms, machine(t, fmt.Sprintf("slot%d@a", i), StateUnclaimed, 1024, ""))
		}
		return ms
	}
	jobs := func(owner, group string, cluster, n int) Request {
		extra := ""
		if group != "" {
			extra = fmt.Sprintf(`AccountingGroup = "%s.%s"`, group, owner)
		}
		return manyJobs(t, owner, cluster, n, extra)
	}
	for _, tc := range []struct {
		name     string
		groups   map[string]GroupQuota
		machines []Machine
		reqs     []Request
		want     map[string]int
	}{
		{"static quota", map[string]GroupQuota{"group_a": {CPUs: 2}}, free(8),
			[]Request{jobs("alice", "group_a", 1, 10), jobs("bob", "", 2, 10)}, map[string]int{"group_a.alice": 2, "bob": 6}},
		{"dynamic quota", map[string]GroupQuota{"group_a": {Share: 0.25, Dynamic: true}}, free(8),
			[]Request{jobs("alice", "group_a", 1, 10), jobs("bob", "", 2, 10)}, map[string]int{"group_a.alice": 2, "bob": 6}},
		{"an owner's dotted name is no group", map[string]GroupQuota{"group_a": {CPUs: 2}},
			append(free(7), machine(t, "slot9@b", StateClaimed, 1024, `RemoteOwner = "group_a.carol"`)),
			[]Request{jobs("alice", "group_a", 1, 10), jobs("group_a.bob", "", 2, 10)}, map[string]int{"group_a.alice": 2, "group_a.bob": 5}},
		{"claims count", map[string]GroupQuota{"group_a": {CPUs: 2}},
			append(free(7), machine(t, "slot9@b", StateClaimed, 1024, `RemoteOwner = "carol"; AccountingGroup = "group_a.carol"`)),
			[]Request{jobs("alice", "group_a", 1, 10), jobs("bob", "", 2, 10)}, map[string]int{"group_a.alice": 1, "bob": 6}},
		{"two users share the quota", map[string]GroupQuota{"group_a": {CPUs: 4}}, free(8),
			[]Request{jobs("alice", "group_a", 1, 10), jobs("carol", "group_a", 3, 10)}, map[string]int{"group_a.alice": 2, "group_a.carol": 2}},
		{"surplus", map[string]GroupQuota{"group_a": {CPUs: 2, AcceptSurplus: true}}, free(8),
			[]Request{jobs("alice", "group_a", 1, 10), jobs("bob", "", 2, 3)}, map[string]int{"group_a.alice": 5, "bob": 3}},
		{"no surplus", map[string]GroupQuota{"group_a": {CPUs: 2}}, free(8),
			[]Request{jobs("alice", "group_a", 1, 10), jobs("bob", "", 2, 3)}, map[string]int{"group_a.alice": 2, "bob": 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := Negotiator{Priorities: prios{"group_a.alice": 1, "group_a.carol": 1, "bob": 1, "group_a.bob": 1}, Limits: &Limits{Groups: tc.groups}}
			if got := sharesOf(n.Negotiate(tc.reqs, tc.machines)); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("matches %v, want %v", got, tc.want)
			}
		})
	}
}

// A group's quota counts the CPUs its jobs carve out of partitionable
// slots, and those its dynamic slots hold.
func TestNegotiateGroupQuotaPartitionable(t *testing.T) {
	machines := []Machine{pslot(t, "slot1@a", 8, 8192),
		machine(t, "slot1_1@b", StateClaimed, 1024, `Cpus = 2; DynamicSlot = true; RemoteOwner = "carol"; AccountingGroup = "group_a.carol"`)}
	alice := manyJobs(t, "alice", 1, 4, `AccountingGroup = "group_a.alice"; RequestCpus = 2`)
	n := Negotiator{Priorities: prios{"group_a.alice": 1}, Limits: &Limits{Groups: map[string]GroupQuota{"group_a": {CPUs: 6}}}}
	res := n.Negotiate([]Request{alice}, machines)
	// 6 CPUs of quota, 2 held by carol's dynamic slot: two 2-CPU jobs.
	if got := sharesOf(res); got["group_a.alice"] != 2 {
		t.Errorf("matches %v, want two of alice's 2-CPU jobs", got)
	}
	if res.GroupsInUse["group_a"] != 6 || res.GroupQuotas["group_a"] != 6 {
		t.Errorf("group_a's use %v of quota %v, want 6 of 6", res.GroupsInUse["group_a"], res.GroupQuotas["group_a"])
	}
}
