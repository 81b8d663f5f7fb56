package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

// runQedit sets attributes of queued jobs, as condor_qedit does:
//
//	harrier qedit {ID | OWNER | -constraint EXPR} ATTR VALUE [ATTR VALUE ...]
//
// or with ATTR=VALUE words. A VALUE is a ClassAd expression, so a string
// is written in double quotes. The agent refuses the attributes that say
// whose a job is and where it is in its life (Owner, ClusterId, ProcId,
// JobStatus, ...).
func runQedit(args []string, _ io.Reader, stdout io.Writer) error {
	tf := newToolFlags("qedit")
	constraint := tf.fs.String("constraint", "", "edit the jobs for which this ClassAd expression is true")
	tf.refuse("refused: "+localAgent, "n=", "name=", "forward")
	tf.refuse("not yet: give ATTR VALUE or ATTR=VALUE pairs", "edits=")
	client, closeFn, err := tf.connect(context.Background(), args)
	if err != nil {
		return err
	}
	defer closeFn()
	rest := tf.fs.Args()
	req := &wire.EditRequest{}
	if *constraint != "" {
		req.Constraint = *constraint
	} else {
		if len(rest) == 0 {
			return usagef("want a job id, an owner or -constraint EXPR, then attributes and values")
		}
		if ids, owners := splitIDs(rest[:1]); len(ids) > 0 {
			req.Ids = ids
		} else {
			req.Constraint = "Owner == " + classad.String(owners[0]).String()
		}
		rest = rest[1:]
	}
	for len(rest) > 0 {
		if name, value, ok := strings.Cut(rest[0], "="); ok {
			req.Attrs = append(req.Attrs, &wire.EditAttribute{Name: name, Expr: value})
			rest = rest[1:]
			continue
		}
		if len(rest) < 2 {
			return usagef("attribute %s has no value", rest[0])
		}
		req.Attrs = append(req.Attrs, &wire.EditAttribute{Name: rest[0], Expr: rest[1]})
		rest = rest[2:]
	}
	if len(req.Attrs) == 0 {
		return usagef("want attributes and values")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reply, err := client.Edit(ctx, req)
	if err != nil {
		return rpcError("qedit", err)
	}
	edited := 0
	for _, r := range reply.Results {
		if r.Ok {
			edited++
		} else {
			fmt.Fprintf(stdout, "Job %s not edited: %s\n", r.Id, r.Error)
		}
	}
	for _, a := range req.Attrs {
		fmt.Fprintf(stdout, "Set attribute %q for %d matching jobs.\n", a.Name, edited)
	}
	if edited == 0 || edited < len(reply.Results) {
		return exitError(1)
	}
	return nil
}
