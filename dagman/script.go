package dagman

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"harrier.dev/harrier/joblog"
)

// startScript runs one of a node's scripts in its own goroutine, which
// reports to the loop through scriptDone.
func (e *engine) startScript(ctx context.Context, i int, kind scriptKind) {
	n, st := e.dag.Nodes[i], &e.nodes[i]
	var sc *Script
	switch kind {
	case preScript:
		sc = n.Pre
		e.pre++
	case postScript:
		sc = n.Post
		st.status = StatusPostRun
		e.post++
	default:
		sc = n.Hold
	}
	e.dirty = true
	argv := make([]string, len(sc.Args))
	m := e.macros(i, kind)
	for k, a := range sc.Args {
		argv[k] = expandScript(a, m)
	}
	exe := sc.Exe
	if !filepath.IsAbs(exe) {
		if strings.Contains(exe, "/") {
			exe = filepath.Join(n.Dir, exe)
		} else if _, err := os.Stat(filepath.Join(n.Dir, exe)); err == nil {
			exe = filepath.Join(n.Dir, exe)
		}
	}
	e.out.logf("Running %s script of Node %s: %s %s", kind, n.Name, sc.Exe, strings.Join(argv, " "))
	e.scripts.Add(1)
	go func() {
		defer e.scripts.Done()
		cmd := exec.CommandContext(ctx, exe, argv...)
		cmd.Dir = n.Dir
		err := cmd.Run()
		r := scriptResult{node: i, kind: kind}
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			r.exit = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				r.exit = -int(ws.Signal())
			}
		default:
			r.exit, r.err = -1, err
		}
		select {
		case e.scriptDone <- r:
		case <-e.stop:
		}
	}()
}

// deferScript reruns a script after its DEFER time, in the loop.
func (e *engine) deferScript(i int, kind scriptKind, d time.Duration) {
	e.scripts.Add(1)
	go func() {
		defer e.scripts.Done()
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-e.stop:
			return
		}
		select {
		case e.scriptDone <- scriptResult{node: i, kind: kind, rerun: true}:
		case <-e.stop:
		}
	}()
}

// scriptFinished applies a script's exit to its node.
func (e *engine) scriptFinished(ctx context.Context, r scriptResult) {
	n, st := e.dag.Nodes[r.node], &e.nodes[r.node]
	if r.rerun {
		if e.aborting {
			// No script starts once the DAG is aborting.
			st.why = fmt.Sprintf("%s script deferred when the DAG aborted", r.kind)
			e.result(r.node, false, -1)
			return
		}
		e.startScript(ctx, r.node, r.kind)
		return
	}
	var sc *Script
	switch r.kind {
	case preScript:
		e.pre--
		sc = n.Pre
	case postScript:
		e.post--
		sc = n.Post
	default:
		if r.err != nil || r.exit != 0 {
			e.out.logf("HOLD script of Node %s failed (%d)", n.Name, r.exit)
		}
		return
	}
	if r.err != nil {
		e.out.logf("ERROR: %s script of Node %s: %v", r.kind, n.Name, r.err)
	} else {
		e.out.logf("%s Script of Node %s completed with status %d", r.kind, n.Name, r.exit)
	}
	if sc.Defer && r.err == nil && r.exit == sc.DeferStatus {
		e.out.logf("Deferring %s script of Node %s for %v", r.kind, n.Name, sc.DeferTime)
		e.deferScript(r.node, r.kind, sc.DeferTime)
		return
	}
	e.dirty = true
	if r.kind == postScript {
		// Recorded before it is acted on: a crash after this line
		// replays the POST script's result rather than running it again.
		ev := joblog.Event{Type: joblog.PostScriptTerminated, Cluster: st.cluster, Time: time.Now(),
			Normal: r.exit >= 0, ReturnValue: r.exit, DAGNode: n.Name}
		if r.exit < 0 {
			ev.ReturnValue, ev.Signal = 0, -r.exit
		}
		if err := joblog.Append(e.nodesLog, ev); err != nil {
			e.out.logf("ERROR: recording the POST script's result of node %s: %v", n.Name, err)
		}
		if r.exit != 0 {
			st.why = "POST script failed with status " + strconv.Itoa(r.exit)
		}
		e.result(r.node, r.exit == 0, r.exit)
		return
	}
	st.preReturn = r.exit
	switch {
	case n.PreSkip != nil && r.exit == *n.PreSkip:
		if err := joblog.Append(e.nodesLog, joblog.Event{Type: joblog.PreSkip, Time: time.Now(), DAGNode: n.Name}); err != nil {
			e.out.logf("ERROR: recording the PRE_SKIP of node %s: %v", n.Name, err)
		}
		e.out.logf("Node %s: PRE script returned the PRE_SKIP value %d; skipping the job and POST script", n.Name, r.exit)
		e.result(r.node, true, 0)
	case r.exit == 0:
		st.preDone = true
		if n.Kind != ServiceNode {
			e.active-- // ready again, until submitted
		}
		e.makeReady(r.node)
	case e.opts.AlwaysRunPost && n.Post != nil:
		st.why = "PRE script failed with status " + strconv.Itoa(r.exit)
		st.jobReturn = -1004
		st.status = StatusPostRun
		e.postQ = append(e.postQ, r.node)
	default:
		st.why = "PRE script failed with status " + strconv.Itoa(r.exit)
		e.result(r.node, false, r.exit)
	}
}

// macros are the values of a script's $NAME macros.
func (e *engine) macros(i int, kind scriptKind) map[string]string {
	n, st := e.dag.Nodes[i], &e.nodes[i]
	m := map[string]string{
		"JOB":          n.Name,
		"NODE":         n.Name,
		"RETRY":        strconv.Itoa(st.retry),
		"MAX_RETRIES":  strconv.Itoa(n.Retries),
		"DAG_STATUS":   strconv.Itoa(int(e.dagStatus())),
		"FAILED_COUNT": strconv.Itoa(e.failed),
	}
	if kind != preScript {
		m["RETURN"] = strconv.Itoa(st.jobReturn)
		m["PRE_SCRIPT_RETURN"] = strconv.Itoa(st.preReturn)
		m["CLUSTER"] = strconv.Itoa(st.cluster)
		m["JOBID"] = strconv.Itoa(st.cluster) + ".0"
		m["SUCCESS"] = strconv.FormatBool(!st.jobFailed)
	}
	return m
}

// expandScript replaces $NAME in a script argument with its macro's value;
// an unknown name is left as written.
func expandScript(s string, m map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		j := i + 1
		for j < len(s) && (s[j] == '_' || s[j] >= 'A' && s[j] <= 'Z') {
			j++
		}
		if v, ok := m[s[i+1:j]]; ok {
			b.WriteString(v)
		} else {
			b.WriteString(s[i:j])
		}
		s = s[j:]
	}
}

// expandVar replaces $(JOB) and $(RETRY) in a VARS value, which DAGMan
// does itself; other macros are the submit file's.
func expandVar(v, node string, retry int) string {
	if !strings.Contains(v, "$(") {
		return v
	}
	return strings.NewReplacer("$(JOB)", node, "$(job)", node, "$(RETRY)", strconv.Itoa(retry), "$(retry)", strconv.Itoa(retry)).Replace(v)
}
