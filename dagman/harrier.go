package dagman

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// CommandSubmitter submits node jobs by running harrier submit and removes
// them with harrier rm, as condor_dagman runs condor_submit when direct
// submission is off. Each job's log is the DAG's nodes log, it carries
// DAGNodeName, and the node's VARS become macros (before the submit file)
// or -append lines (APPEND, and +Attr).
//
// Recovery needs each submit event to name its node ("DAG Node:"): the
// agent writes that note from DAGNodeName. SUBDAG EXTERNAL nodes are not
// submitted yet.
type CommandSubmitter struct {
	// Harrier is the harrier binary; "" means "harrier" on PATH.
	Harrier string
	// Pool is the pool directory (--pool); "" leaves it to $HARRIER_POOL.
	Pool string
	// DAGManJobID, if not 0, is the cluster of the DAG's own job, which
	// each node job carries as DAGManJobId (harrier q -dag groups by it).
	DAGManJobID int
}

func (c *CommandSubmitter) command(ctx context.Context, dir string, args ...string) *exec.Cmd {
	bin := c.Harrier
	if bin == "" {
		bin = "harrier"
	}
	if c.Pool != "" {
		args = append([]string{args[0], "-pool", c.Pool}, args[1:]...)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	return cmd
}

// SubmitMacros are what a node's submit file is read with: defines,
// NAME=VALUE macros set before the file (its VARS), and appends, submit
// commands read just before its queue statement (its APPEND VARS and
// +Attr or My.Attr VARS, its log, DAGNodeName, DAGManJobId when dagJob,
// the DAG's own job's cluster, is not 0, and its priority).
func (j Job) SubmitMacros(dagJob int) (defines, appends []string) {
	for _, v := range j.Vars {
		if v.Append || strings.HasPrefix(v.Name, "+") || strings.HasPrefix(strings.ToLower(v.Name), "my.") {
			appends = append(appends, v.Name+" = "+v.Value)
		} else {
			defines = append(defines, v.Name+"="+v.Value)
		}
	}
	appends = append(appends, "log = "+j.Log, "+DAGNodeName = "+strconv.Quote(j.Node))
	if dagJob != 0 {
		appends = append(appends, "+DAGManJobId = "+strconv.Itoa(dagJob))
	}
	if j.Priority != 0 {
		appends = append(appends, "priority = "+strconv.Itoa(j.Priority))
	}
	return defines, appends
}

// submitArgs are harrier submit's arguments for j, a node of the DAG
// whose job's cluster is dagJob (0 if none).
func submitArgs(j Job, dagJob int) []string {
	defines, appends := j.SubmitMacros(dagJob)
	args := []string{"submit", "-terse"}
	for _, a := range appends {
		args = append(args, "-append", a)
	}
	// After "--" nothing is an option, whatever its first character.
	return append(append(append(args, "--"), defines...), j.File)
}

func (c *CommandSubmitter) Submit(ctx context.Context, j Job) (int, int, error) {
	if j.SubDAG {
		return 0, 0, fmt.Errorf("node %s: %w: SUBDAG EXTERNAL needs harrier submit-dag", j.Node, ErrNotSupported)
	}
	cmd := c.command(ctx, j.Dir, submitArgs(j, c.DAGManJobID)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, 0, fmt.Errorf("harrier submit %s: %w: %s", j.File, err, strings.TrimSpace(stderr.String()))
	}
	// -terse prints "C.0 - C.LAST".
	var cluster, first, cluster2, last int
	if _, err := fmt.Sscanf(string(out), "%d.%d - %d.%d", &cluster, &first, &cluster2, &last); err != nil || cluster != cluster2 || first != 0 {
		return 0, 0, fmt.Errorf("harrier submit %s: unexpected output %q", j.File, out)
	}
	return cluster, last + 1, nil
}

func (c *CommandSubmitter) Remove(ctx context.Context, cluster int) error {
	cmd := c.command(ctx, "", "rm", strconv.Itoa(cluster))
	if out, err := cmd.CombinedOutput(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && strings.Contains(string(out), "No job") {
			return nil // gone already
		}
		return fmt.Errorf("harrier rm %d: %w: %s", cluster, err, strings.TrimSpace(string(out)))
	}
	return nil
}
