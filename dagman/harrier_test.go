package dagman

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// CommandSubmitter runs harrier submit with the node's macros, log,
// name and DAG job, reads the cluster and its size from -terse, and removes with
// harrier rm; here against a stand-in harrier that records its arguments.
func TestCommandSubmitter(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"harrier.sh": `#!/bin/sh
for a in "$@"; do printf '%s\n' "$a"; done > "$0.args"
pwd >> "$0.args"
case "$1" in submit) echo "12.0 - 12.2";; rm) [ "$4" = 13 ] && { echo "No job you may act on matched."; exit 1; };; esac
exit 0
`})
	c := &CommandSubmitter{Harrier: filepath.Join(dir, "harrier.sh"), Pool: "/pool", DAGManJobID: 7}
	j := Job{Node: `odd "name"`, File: "a.sub", Dir: dir, Log: "/d/x.dag.nodes.log", Priority: 4,
		Vars: []Var{{Name: "JOB", Value: "n"}, {Name: "word", Value: "two words"}, {Name: "late", Value: "-x", Append: true}, {Name: "+Attr", Value: `"v"`}}}
	cluster, procs, err := c.Submit(context.Background(), j)
	if err != nil || cluster != 12 || procs != 3 {
		t.Fatalf("Submit: %d, %d, %v; want cluster 12 of 3 procs", cluster, procs, err)
	}
	want := []string{"submit", "-pool", "/pool", "-terse", "-append", "late = -x", "-append", `+Attr = "v"`,
		"-append", "log = /d/x.dag.nodes.log", "-append", `+DAGNodeName = "odd \"name\""`, "-append", "+DAGManJobId = 7", "-append", "priority = 4",
		"--", "JOB=n", "word=two words", "a.sub", dir}
	if got := lines(t, filepath.Join(dir, "harrier.sh.args")); !slices.Equal(got, want) {
		t.Errorf("harrier ran with\n%q\nwant\n%q", got, want)
	}
	if err := c.Remove(context.Background(), 12); err != nil {
		t.Errorf("Remove: %v", err)
	}
	if got := lines(t, filepath.Join(dir, "harrier.sh.args")); !slices.Equal(got[:4], []string{"rm", "-pool", "/pool", "12"}) {
		t.Errorf("harrier ran with %q, want rm -pool /pool 12", got)
	}
	if err := c.Remove(context.Background(), 13); err != nil {
		t.Errorf("Remove of a cluster already gone: %v", err)
	}
	if _, _, err := c.Submit(context.Background(), Job{Node: "S", SubDAG: true}); !errors.Is(err, ErrNotSupported) {
		t.Errorf("a SUBDAG EXTERNAL node: %v, want ErrNotSupported", err)
	}
	os.Remove(c.Harrier)
	if _, _, err := c.Submit(context.Background(), j); err == nil {
		t.Error("Submit without a harrier binary succeeded")
	}
}
