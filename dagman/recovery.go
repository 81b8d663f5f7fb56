package dagman

import (
	"context"
	"fmt"
	"time"

	"harrier.dev/harrier/joblog"
)

// replay rebuilds the state of a run that died from the nodes log, as
// condor_dagman's recovery mode does: which nodes' jobs were submitted
// (the submit events' "DAG Node:" notes), which ended and how, which POST
// scripts ran (DAGMan's own POST-script-terminated events) and which PRE
// scripts said PRE_SKIP. Jobs still queued are followed on; a node whose
// job ended but whose POST script left no event runs its POST script; a
// PRE script that ran without its node being submitted runs again.
func (e *engine) replay(ctx context.Context) error {
	start := time.Now()
	e.replaying = true
	err := e.readLog(ctx)
	e.replaying = false
	if err != nil {
		return err
	}
	for i := range e.nodes {
		st := &e.nodes[i]
		switch {
		case st.status == StatusReady:
			e.makeReady(i)
		case st.status == StatusPostRun && st.postQueued:
			e.postQ = append(e.postQ, i)
		case st.status == StatusSubmitted && st.jobFailed && !st.removing:
			st.removing = true
			if err := e.sub.Remove(ctx, st.cluster); err != nil {
				e.out.logf("ERROR: removing the rest of node %s's cluster %d: %v", e.dag.Nodes[i].Name, st.cluster, err)
			}
		}
	}
	if e.aborting {
		e.removeAll(ctx)
	}
	var done, queued int
	for i := range e.nodes {
		switch e.nodes[i].status {
		case StatusDone:
			done++
		case StatusSubmitted:
			queued++
		}
	}
	e.out.logf("Recovery: %d nodes done, %d jobs still queued, %d POST scripts to run (read the nodes log in %v)",
		done, queued, len(e.postQ), time.Since(start).Round(time.Millisecond))
	e.out.flush()
	return nil
}

// replayScriptEvent applies a POST script's or PRE_SKIP's recorded result.
func (e *engine) replayScriptEvent(ev joblog.Event) {
	n := e.dag.Node(ev.DAGNode)
	if n == nil {
		e.out.logf("WARNING: the log names node %s, which the DAG does not have", ev.DAGNode)
		return
	}
	i, st := n.index, &e.nodes[n.index]
	switch ev.Type {
	case joblog.PreSkip:
		if st.status == StatusReady || st.status == StatusNotReady {
			e.activate(i)
			e.result(i, true, 0)
		}
	case joblog.PostScriptTerminated:
		if st.status != StatusPostRun || !st.postQueued {
			return
		}
		st.postQueued = false
		exit := ev.ReturnValue
		if !ev.Normal {
			exit = -ev.Signal
		}
		if exit != 0 {
			st.why = fmt.Sprintf("POST script failed with status %d", exit)
		}
		e.result(i, exit == 0, exit)
	}
}
