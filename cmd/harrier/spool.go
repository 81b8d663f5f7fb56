package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/shadow"
	"harrier.dev/harrier/transfer"
	"harrier.dev/harrier/wire"
)

// Spooled submission (harrier submit -spool, HTCondor's condor_submit
// -spool): each job's inputs (transfer_input_files but URLs, its
// executable unless transfer_executable = false, its standard input) go
// to the agent with the submission, read here as the user who submits.
// They are sent as named relative to the job's directory; an input named
// by an absolute path is sent by its last element, and its entry in
// TransferInput renamed to match, as it lands at the top of the scratch
// directory either way. harrier transfer-data fetches the outputs back.

// spoolLeaveInQueue is the LeaveJobInQueue of a spooled job, as
// condor_submit -spool sets it: a completed job waits ten days for its
// outputs to be fetched, then leaves the queue anyway.
const spoolLeaveInQueue = "JobStatus == 4 && (CompletionDate =?= undefined || CompletionDate == 0 || (time() - CompletionDate) < 864000)"

// spoolItem is one input of a job: name beneath the directory from, sent
// as as.
type spoolItem struct {
	from, name, as string
}

// planSpool makes ads spooled jobs and returns what each sends: a job
// that reaches its files through the shadow (should_transfer_files = NO)
// cannot be spooled.
func planSpool(ads []*classad.ClassAd) ([][]spoolItem, error) {
	items := make([][]spoolItem, len(ads))
	for i, ad := range ads {
		id := fmt.Sprintf("%d.%d", intAttr(ad, "ClusterId"), intAttr(ad, "ProcId"))
		switch stf, _ := ad.EvalString("ShouldTransferFiles"); strings.ToUpper(stf) {
		case "YES":
		case "IF_NEEDED":
			ad.SetString("ShouldTransferFiles", "YES") // its submit directory may be gone
		default:
			return nil, fmt.Errorf("-spool: job %s has should_transfer_files = NO: it reads its files from the submit directory through the shadow, "+
				"and -spool lets that directory go; set should_transfer_files = YES to spool its inputs", id)
		}
		iwd, _ := ad.EvalString("Iwd")
		abs := func(p string) string {
			if filepath.IsAbs(p) {
				return filepath.Clean(p)
			}
			return filepath.Join(iwd, p)
		}
		var list []string
		inputs, _ := ad.EvalString("TransferInput")
		for entry := range strings.SplitSeq(inputs, ",") {
			if entry = strings.TrimSpace(entry); entry == "" {
				continue
			}
			if strings.Contains(entry, "://") {
				list = append(list, entry) // fetched by the starter
				continue
			}
			p := filepath.Clean(entry)
			it := spoolItem{from: iwd, name: p, as: filepath.ToSlash(p)}
			if filepath.IsAbs(p) {
				it = spoolItem{from: filepath.Dir(p), name: filepath.Base(p), as: filepath.Base(p)}
				entry = it.as + strings.Repeat("/", btoi(strings.HasSuffix(entry, "/")))
			} else if !filepath.IsLocal(p) {
				return nil, fmt.Errorf("-spool: job %s: transfer_input_files %s: %v", id, entry, transfer.ErrEscape)
			}
			items[i] = append(items[i], it)
			list = append(list, entry)
		}
		ad.SetString("TransferInput", strings.Join(list, ","))
		if cmd, _ := ad.EvalString("Cmd"); cmd != "" {
			if b, ok := ad.EvalBool("TransferExecutable"); !ok || b {
				p := abs(cmd)
				items[i] = append(items[i], spoolItem{from: filepath.Dir(p), name: filepath.Base(p), as: filepath.Base(p)})
			}
		}
		if in, _ := ad.EvalString("In"); in != "" && in != os.DevNull {
			p := abs(in)
			items[i] = append(items[i], spoolItem{from: filepath.Dir(p), name: filepath.Base(p), as: filepath.Base(p)})
		}
		if err := ad.SetExpr("LeaveJobInQueue", spoolLeaveInQueue); err != nil {
			return nil, err
		}
	}
	return items, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func intAttr(ad *classad.ClassAd, name string) int64 {
	n, _ := ad.EvalInt(name)
	return n
}

// submitSpooled sends the cluster and then each job's inputs, in ProcId
// order; the agent queues the jobs once it has all of them.
func submitSpooled(ctx context.Context, client wire.ScheddClient, req *wire.SubmitRequest, ads []*classad.ClassAd, items [][]spoolItem) (*wire.SubmitReply, error) {
	stream, err := client.SubmitSpooled(ctx)
	if err != nil {
		return nil, rpcError("submit", err)
	}
	if err := stream.Send(&wire.SpoolRequest{Submit: req}); err != nil {
		_, err = stream.CloseAndRecv() // the agent's reason
		return nil, submitError(err, req)
	}
	for i, ad := range ads {
		proc := int32(intAttr(ad, "ProcId"))
		snd := &transfer.Sender{Out: func(c *wire.TransferChunk) error {
			return stream.Send(&wire.SpoolRequest{Proc: proc, Chunk: c})
		}}
		for _, it := range items[i] {
			if err := sendSpoolItem(snd, it); errors.Is(err, io.EOF) {
				_, err = stream.CloseAndRecv() // the agent's reason
				return nil, rpcError("submit", err)
			} else if err != nil {
				return nil, fmt.Errorf("-spool: job %d.%d: %s: %w", req.Cluster, proc, it.as, err)
			}
		}
	}
	reply, err := stream.CloseAndRecv()
	if err != nil {
		return nil, rpcError("submit", err)
	}
	return reply, nil
}

// sendSpoolItem sends one input, read beneath its directory only: a link
// in it that leads out is refused (os.Root).
func sendSpoolItem(snd *transfer.Sender, it spoolItem) error {
	from, err := os.OpenRoot(it.from)
	if err != nil {
		return err
	}
	defer from.Close()
	return snd.Send(from, it.name, it.as)
}

// runTransferData fetches the outputs of completed spooled jobs, as
// condor_transfer_data does, into each job's directory, renamed as its
// transfer_output_remaps says, and lets the jobs leave the queue.
func runTransferData(args []string, _ io.Reader, stdout io.Writer) error {
	tf := newToolFlags("transfer-data")
	constraint := tf.fs.String("constraint", "", "fetch for the jobs for which this ClassAd expression is true")
	all := tf.fs.Bool("all", false, "fetch for all your completed spooled jobs (root: everyone's)")
	tf.refuse("refused: "+localAgent, "name=", "addr=")
	client, closeFn, err := tf.connect(context.Background(), args)
	if err != nil {
		return err
	}
	defer closeFn()
	ids, owners := splitIDs(tf.fs.Args())
	if len(ids) == 0 && len(owners) == 0 && *constraint == "" && !*all {
		return usagef("want job ids (cluster or cluster.proc), owner names, -constraint EXPR or -all")
	}
	var alts []string
	for _, o := range owners {
		alts = append(alts, "Owner == "+classad.String(o).String())
	}
	if *constraint != "" {
		alts = append(alts, "("+*constraint+")")
	}
	if *all {
		alts = []string{"true"}
		if u, err := user.Current(); err == nil && u.Uid != "0" {
			alts = []string{"Owner == " + classad.String(u.Username).String()}
		}
	}
	// Only completed spooled jobs have outputs waiting.
	cons := "JobStatus == 4 && StageInFinish > 0"
	if len(alts) > 0 {
		cons = "(" + strings.Join(alts, " || ") + ") && " + cons
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	stream, err := client.Query(ctx, &wire.JobQueryRequest{Ids: ids, Constraint: cons})
	if err != nil {
		return rpcError("transfer-data", err)
	}
	var jobs []*classad.ClassAd
	if err := receive(stream, func(text string) error {
		ad, err := classad.Parse(text)
		if err == nil {
			jobs = append(jobs, ad)
		}
		return err
	}); err != nil {
		return rpcError("transfer-data", err)
	}
	if len(jobs) == 0 {
		fmt.Fprintln(stdout, "No completed spooled job matched.")
		return exitError(1)
	}
	failed := 0
	for _, ad := range jobs {
		id := fmt.Sprintf("%d.%d", intAttr(ad, "ClusterId"), intAttr(ad, "ProcId"))
		r, err := fetchOutputs(ctx, client, id, ad)
		if err == nil {
			err = fetched(ctx, client, id)
		}
		if err != nil {
			failed++
			fmt.Fprintf(stdout, "Job %s: outputs not fetched: %v\n", id, rpcError("transfer-data", err))
			continue
		}
		fmt.Fprintf(stdout, "Job %s: fetched %d file(s), %d bytes\n", id, r.Files, r.Bytes)
	}
	if failed > 0 {
		return exitError(1)
	}
	return nil
}

// fetched tells the agent that a job's outputs are fetched, so that the
// job leaves the queue.
func fetched(ctx context.Context, client wire.ScheddClient, id string) error {
	stream, err := client.TransferData(ctx, &wire.TransferDataRequest{Job: id, Done: true})
	if err != nil {
		return err
	}
	for {
		if _, err := stream.Recv(); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// fetchOutputs writes a job's spooled outputs beneath its directory
// (package transfer confines every name to it), renamed as its
// transfer_output_remaps says; its standard output and error go to its
// Out and Err.
func fetchOutputs(ctx context.Context, client wire.ScheddClient, id string, ad *classad.ClassAd) (*transfer.Receiver, error) {
	// The agent says first whether the caller may have them.
	stream, err := client.TransferData(ctx, &wire.TransferDataRequest{Job: id})
	if err != nil {
		return nil, err
	}
	first := &wire.TransferChunk{}
	if err := stream.RecvMsg(first); errors.Is(err, io.EOF) {
		return &transfer.Receiver{}, nil // the job sent no outputs
	} else if err != nil {
		return nil, err
	}
	iwd, _ := ad.EvalString("Iwd")
	to, err := os.OpenRoot(iwd)
	if err != nil {
		return nil, fmt.Errorf("the job's directory: %w", err)
	}
	defer to.Close()
	// Standard output and error outside the job's directory are received
	// beneath it and then moved, as this user may.
	moves := map[string]string{}
	std := map[string]string{}
	for attr, name := range map[string]string{"Out": shadow.SpoolStdout, "Err": shadow.SpoolStderr} {
		p, _ := ad.EvalString(attr)
		if p == "" || p == os.DevNull {
			continue
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(iwd, p)
		}
		if rel, err := filepath.Rel(iwd, p); err == nil && filepath.IsLocal(rel) {
			std[name] = filepath.ToSlash(rel)
		} else {
			moves[name] = p
		}
	}
	remap := transfer.OutputRemaps(ad.EvalString("TransferOutputRemaps"))
	r := &transfer.Receiver{To: to, Rename: func(name string) string {
		if to, ok := std[name]; ok {
			return to
		}
		if _, ok := moves[name]; ok {
			return name
		}
		if remap != nil {
			return remap(name)
		}
		return name
	}}
	if err := r.Chunk(first); err != nil {
		return nil, err
	}
	if err := r.Receive(func(c *wire.TransferChunk) error { return stream.RecvMsg(c) }); err != nil {
		return nil, err
	}
	for name, p := range moves {
		if err := os.Rename(filepath.Join(iwd, name), p); err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("move the job's %s to %s: %w", name, p, err)
		}
	}
	return r, nil
}
