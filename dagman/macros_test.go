package dagman

import (
	"slices"
	"testing"
)

// A node's VARS become macros defined before its submit file, except
// APPEND ones and job attributes, which come before its queue statement
// with its log, its name, its DAG's job and its priority.
func TestSubmitMacros(t *testing.T) {
	j := Job{Node: `odd "name"`, File: "a.sub", Log: "/d/x.dag.nodes.log", Priority: 4,
		Vars: []Var{{Name: "JOB", Value: "n"}, {Name: "word", Value: "two words"}, {Name: "late", Value: "-x", Append: true}, {Name: "+Attr", Value: `"v"`}, {Name: "My.Other", Value: "1"}}}
	defines, appends := j.SubmitMacros(7)
	if want := []string{"JOB=n", "word=two words"}; !slices.Equal(defines, want) {
		t.Errorf("defines %q, want %q", defines, want)
	}
	want := []string{"late = -x", `+Attr = "v"`, "My.Other = 1", "log = /d/x.dag.nodes.log", `+DAGNodeName = "odd \"name\""`, "+DAGManJobId = 7", "priority = 4"}
	if !slices.Equal(appends, want) {
		t.Errorf("appends %q, want %q", appends, want)
	}
	if _, appends := (Job{Node: "A", Log: "l"}).SubmitMacros(0); slices.ContainsFunc(appends, func(s string) bool { return s == "+DAGManJobId = 0" }) {
		t.Errorf("a DAG without a job of its own marks its nodes: %q", appends)
	}
}
