package dagman

import (
	"fmt"
	"os"
	"strings"
	"time"

	"harrier.dev/harrier/classad"
)

// dotEvery is the least time between two rewrites of a DOT file with
// UPDATE.
const dotEvery = 5 * time.Second

// writeOutputs rewrites the node status file and the DOT file (UPDATE)
// when their update times have come and something changed, or always at
// the end.
func (e *engine) writeOutputs(end bool) error {
	now := time.Now()
	if ns := e.dag.NodeStatus; ns != nil && (end || (e.dirty || ns.AlwaysUpdate) && now.Sub(e.statusAt) >= ns.MinUpdate) {
		if err := writeFileAtomic(ns.File, e.nodeStatus(now, end)); err != nil {
			return fmt.Errorf("write the node status file: %w", err)
		}
		e.statusAt = now
		e.dirty = false
	}
	if d := e.dag.Dot; d != nil && d.Update && (end || now.Sub(e.dotAt) >= dotEvery) {
		if err := writeDot(e, false); err != nil {
			return err
		}
	}
	return nil
}

// nodeStatus renders the node status file: HTCondor's sequence of ClassAds,
// one for the DAG, one per node, and a last that says when the next
// update is due.
func (e *engine) nodeStatus(now time.Time, end bool) []byte {
	var b strings.Builder
	var c [8]int
	held, idle := 0, 0
	for i, n := range e.dag.Nodes {
		if n.Kind != ServiceNode {
			c[e.nodes[i].status]++
		}
		for _, p := range e.nodes[i].procs {
			if p == procHeld {
				held++
			}
		}
	}
	idle = e.idle
	dagState := StatusSubmitted
	if end {
		dagState = StatusDone
		if e.dagStatus() != DAGStatusOK || c[StatusDone] < e.countWork() {
			dagState = StatusError
		}
	}
	ad := classad.New()
	ad.SetString("Type", "DagStatus")
	ad.SetValue("DagFiles", classad.List(classad.String(e.dag.File)))
	ad.SetInt("Timestamp", now.Unix())
	ad.SetInt("DagStatus", int64(dagState))
	ad.SetInt("NodesTotal", int64(e.countWork()))
	for _, f := range []struct {
		name string
		n    int
	}{{"NodesDone", c[StatusDone]}, {"NodesPre", c[StatusPreRun]}, {"NodesQueued", c[StatusSubmitted]},
		{"NodesPost", c[StatusPostRun]}, {"NodesReady", c[StatusReady]}, {"NodesUnready", c[StatusNotReady]},
		{"NodesFutile", c[StatusFutile]}, {"NodesFailed", c[StatusError]}, {"JobProcsHeld", held}, {"JobProcsIdle", idle}} {
		ad.SetInt(f.name, int64(f.n))
	}
	writeAd(&b, ad, map[string]string{"Timestamp": fmt.Sprintf("%q", now.Format(time.ANSIC)), "DagStatus": fmt.Sprintf("%q", dagState.String())})
	for i, n := range e.dag.Nodes {
		st := &e.nodes[i]
		ad := classad.New()
		ad.SetString("Type", "NodeStatus")
		ad.SetString("Node", n.Name)
		ad.SetInt("NodeStatus", int64(st.status))
		ad.SetString("StatusDetails", st.why)
		ad.SetInt("RetryCount", int64(st.retry))
		queued, held := 0, 0
		for _, p := range st.procs {
			switch p {
			case procHeld:
				held++
				queued++
			case procIdle, procRunning:
				queued++
			}
		}
		ad.SetInt("JobProcsQueued", int64(queued))
		ad.SetInt("JobProcsHeld", int64(held))
		writeAd(&b, ad, map[string]string{"NodeStatus": fmt.Sprintf("%q", st.status.String())})
	}
	ad = classad.New()
	ad.SetString("Type", "StatusEnd")
	ad.SetInt("EndTime", now.Unix())
	next := int64(0)
	if !end && e.dag.NodeStatus != nil {
		next = now.Add(e.dag.NodeStatus.MinUpdate).Unix()
	}
	ad.SetInt("NextUpdate", next)
	writeAd(&b, ad, map[string]string{"EndTime": fmt.Sprintf("%q", now.Format(time.ANSIC))})
	return []byte(b.String())
}

// writeAd writes an ad one attribute a line, with a comment after those
// that have one, as HTCondor's node status file reads.
func writeAd(b *strings.Builder, ad *classad.ClassAd, comments map[string]string) {
	b.WriteString("[\n")
	for _, name := range ad.Names() {
		e, _ := ad.Lookup(name)
		fmt.Fprintf(b, "  %s = %s;", name, e)
		if c, ok := comments[name]; ok {
			fmt.Fprintf(b, " /* %s */", c)
		}
		b.WriteByte('\n')
	}
	b.WriteString("]\n")
}

// writeDot writes the DOT file: the graph, each node labelled with its
// state once the DAG runs.
func writeDot(e *engine, first bool) error {
	d := e.dag.Dot
	if d == nil {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "digraph DAG {\n    label=%q;\n", "DAG "+e.dag.File)
	if d.Include != "" {
		inc, err := os.ReadFile(d.Include)
		if err != nil {
			return fmt.Errorf("DOT INCLUDE: %w", err)
		}
		b.Write(inc)
		if len(inc) > 0 && inc[len(inc)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	for i, n := range e.dag.Nodes {
		label := n.Name
		if !first {
			label += " - " + strings.TrimPrefix(e.nodes[i].status.String(), "STATUS_")
		}
		shape := "ellipse"
		switch n.Kind {
		case FinalNode:
			shape = "doubleoctagon"
		case ServiceNode:
			shape = "box"
		case SubDAGNode:
			shape = "folder"
		}
		fmt.Fprintf(&b, "    %q [shape=%s label=%q];\n", n.Name, shape, label)
	}
	for _, n := range e.dag.Nodes {
		for _, c := range n.Children {
			fmt.Fprintf(&b, "    %q -> %q;\n", n.Name, c.Name)
		}
	}
	b.WriteString("}\n")
	path := d.File
	if !d.Overwrite {
		path = fmt.Sprintf("%s.%d", d.File, e.dotSeq)
		e.dotSeq++
	}
	if err := writeFileAtomic(path, []byte(b.String())); err != nil {
		return fmt.Errorf("write the DOT file: %w", err)
	}
	e.dotAt = time.Now()
	return nil
}
