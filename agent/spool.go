package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"harrier.dev/harrier/agent/jobqueue"
	"harrier.dev/harrier/asuser"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/shadow"
	"harrier.dev/harrier/transfer"
	"harrier.dev/harrier/wire"
)

// Spooled jobs (harrier submit -spool, HTCondor's condor_submit -spool):
// the job's inputs come with its submission and stay in the agent's
// spool, in the job's place in its owner's store (shadow.SpoolDir), which
// only the owner's shadow reaches. The job runs from there: its shadow
// sends the inputs from the spool and takes its outputs into it
// (shadow.SpoolOutputDir). A completed spooled job stays in the queue
// while its LeaveJobInQueue holds (submit -spool sets HTCondor's: ten
// days after completion) until its owner fetches the outputs
// (TransferData, harrier transfer-data); then it leaves, and its spool
// with it.
//
// The agent receives a submission's inputs, as root, in a directory of
// its own (incomingPrefix, beneath CheckpointDir, where no owner can
// reach), gives them to the owner, makes them durable and moves them into
// the owner's store, and only then commits the jobs: a crash part way
// leaves no job pointing at half-spooled inputs, only a directory that
// sweepSpool removes when the agent starts again.

// Attributes of spooled jobs, HTCondor's names.
const (
	// AttrStageInFinish is when the agent had the job's inputs in its
	// spool; a job with it runs from the spool.
	AttrStageInFinish = "StageInFinish"
	AttrStageInStart  = "StageInStart"
	// AttrStageOutFinish is when the owner fetched the job's outputs.
	AttrStageOutFinish = "StageOutFinish"
	// AttrLeaveJobInQueue keeps a completed job in the queue while true.
	AttrLeaveJobInQueue = "LeaveJobInQueue"
)

// incomingPrefix names the directories of submissions being spooled, in
// CheckpointDir beside the owners' stores; "#" is in no user name.
const incomingPrefix = "#incoming-"

// spooled reports whether the job runs from the agent's spool.
func spooled(ad *classad.ClassAd) bool {
	t, ok := ad.EvalInt(AttrStageInFinish)
	return ok && t > 0
}

// keptInQueue reports whether a completed job stays in the queue: its
// LeaveJobInQueue (leave_in_queue, or submit -spool's) still holds, and,
// for a spooled job, its outputs have not been fetched.
func keptInQueue(ad *classad.ClassAd) bool {
	if statusOf(ad) != Completed {
		return false
	}
	if t, ok := ad.EvalInt(AttrStageOutFinish); ok && t > 0 && spooled(ad) {
		return false
	}
	keep, _ := ad.EvalBool(AttrLeaveJobInQueue)
	return keep
}

// SubmitSpooled queues a cluster whose jobs' inputs come with it.
func (s *scheddService) SubmitSpooled(stream wire.Schedd_SubmitSpooledServer) error {
	ctx := stream.Context()
	who, err := callerFrom(ctx)
	if err != nil {
		return err
	}
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	req := first.GetSubmit()
	if req == nil {
		return status.Error(codes.InvalidArgument, "a spooled submission starts with its jobs")
	}
	limits := s.a.limits.Load()
	if err := limits.checkSubmission(req, proto.Size(req)); err != nil {
		return err
	}
	jobs, err := spooledJobs(req)
	if err != nil {
		return err
	}
	store, err := s.a.checkpointStore(who.name)
	if err != nil {
		return status.Errorf(codes.Internal, "spool of %s: %v", who.name, err)
	}
	if store == "" {
		return status.Error(codes.FailedPrecondition, "this agent keeps no spool (SPOOL): submit without -spool")
	}
	incoming, err := os.MkdirTemp(s.a.cfg.CheckpointDir, incomingPrefix)
	if err != nil {
		return status.Errorf(codes.Internal, "spool the inputs: %v", err)
	}
	defer os.RemoveAll(incoming)
	began := time.Now().Unix()
	if err := receiveSpool(stream, incoming, jobs); err != nil {
		s.a.log.Warn("spooled submission refused", "owner", who.name, "cluster", req.Cluster, "err", err)
		if _, ok := status.FromError(err); ok {
			return err
		}
		return status.Errorf(codes.InvalidArgument, "spool the inputs: %v", err)
	}
	if err := s.a.giveSpool(incoming, who.name); err != nil {
		return status.Errorf(codes.Internal, "spool the inputs: %v", err)
	}
	var placed []string
	for _, j := range jobs {
		to := shadow.SpoolDir(store, jobqueue.JobID{Cluster: int(req.Cluster), Proc: int(j.proc)}.String())
		err := os.RemoveAll(to)
		if err == nil {
			err = os.Rename(filepath.Join(incoming, fmt.Sprint(j.proc)), to)
		}
		if err != nil {
			dropAll(placed)
			return status.Errorf(codes.Internal, "spool the inputs: %v", err)
		}
		placed = append(placed, to)
	}
	if err := syncPath(store); err != nil {
		dropAll(placed)
		return status.Errorf(codes.Internal, "spool the inputs: %v", err)
	}
	stage := &stageIn{start: began, finish: time.Now().Unix()}
	reply, err := s.submit(ctx, who, limits, []*wire.SubmitRequest{req}, stage)
	if err != nil {
		dropAll(placed)
		return err
	}
	return stream.SendAndClose(reply[0])
}

// spooledJob is what the agent takes of one job of a spooled
// submission: its ProcId, and at most how many bytes of inputs (its
// max_transfer_input_mb, the bound the shadow holds its transfer to; 0
// for none).
type spooledJob struct {
	proc  int32
	limit int64
}

// spooledJobs lists the jobs of a submission, in ProcId order.
func spooledJobs(req *wire.SubmitRequest) ([]spooledJob, error) {
	common := classad.New()
	if req.ClusterAd != "" {
		var err error
		if common, err = classad.Parse(req.ClusterAd); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "cluster ad: %v", err)
		}
	}
	if req.ClusterAd != "" && factoryPlan(common, len(req.Ads)) > 0 {
		// Jobs made later would have spools no queued job points at.
		return nil, status.Error(codes.InvalidArgument, "a spooled cluster is queued whole: max_idle and max_materialize (jobs made as others leave Idle or the queue) do not go with -spool")
	}
	var jobs []spooledJob
	for i, text := range req.Ads {
		own, err := classad.Parse(text)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "job %d: %v", i, err)
		}
		ad := common.Copy()
		ad.Update(own)
		p, ok := ad.EvalInt(AttrProcID)
		if !ok {
			return nil, status.Errorf(codes.InvalidArgument, "job %d has no ProcId", i)
		}
		j := spooledJob{proc: int32(p)}
		if mb, ok := ad.EvalInt("MaxTransferInputMB"); ok && mb > 0 {
			j.limit = mb << 20
		}
		jobs = append(jobs, j)
	}
	slices.SortFunc(jobs, func(a, b spooledJob) int { return int(a.proc) - int(b.proc) })
	return jobs, nil
}

// receiveSpool writes each job's inputs from the stream into a directory
// of its own beneath incoming, named after its ProcId, within the job's
// limit. Names are confined to that directory (package transfer).
func receiveSpool(stream wire.Schedd_SubmitSpooledServer, incoming string, jobs []spooledJob) (err error) {
	for _, j := range jobs {
		if err := os.Mkdir(filepath.Join(incoming, fmt.Sprint(j.proc)), 0o700); err != nil {
			return err
		}
	}
	var (
		r    *transfer.Receiver
		root *os.Root
		cur  = int32(-1)
	)
	// A job's receiver writes small files in the background: whatever
	// ends the stream early stops it before anything else touches the
	// directory.
	defer func() {
		if err != nil && r != nil {
			r.Abort()
		}
		if root != nil {
			root.Close()
		}
	}()
	done := func() error {
		if r == nil {
			return nil
		}
		err := r.Close()
		r = nil
		root.Close()
		root = nil
		if err != nil {
			return fmt.Errorf("inputs of job %d: %w", cur, err)
		}
		return nil
	}
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if m.Chunk == nil || m.Submit != nil {
			return status.Error(codes.InvalidArgument, "after the jobs, a spooled submission holds only their inputs")
		}
		if m.Proc != cur {
			if m.Proc < cur {
				return status.Errorf(codes.InvalidArgument, "inputs of job %d after those of job %d: send them in ProcId order", m.Proc, cur)
			}
			i := slices.IndexFunc(jobs, func(j spooledJob) bool { return j.proc == m.Proc })
			if i < 0 {
				return status.Errorf(codes.InvalidArgument, "inputs for job %d, which the submission does not hold", m.Proc)
			}
			if err := done(); err != nil {
				return err
			}
			if root, err = os.OpenRoot(filepath.Join(incoming, fmt.Sprint(m.Proc))); err != nil {
				return err
			}
			r, cur = &transfer.Receiver{To: root, Limit: jobs[i].limit}, m.Proc
		}
		if err := r.Chunk(m.Chunk); err != nil {
			if errors.Is(err, transfer.ErrTooLarge) {
				return status.Errorf(codes.ResourceExhausted, "inputs of job %d: %v (max_transfer_input_mb)", cur, err)
			}
			return fmt.Errorf("inputs of job %d: %w", cur, err)
		}
	}
	return done()
}

// giveSpool gives the files received in dir to owner, whose shadow reads
// them, and makes them durable before any job points at them. Nobody
// but the agent reaches dir, so nothing in it moves meanwhile.
func (a *Agent) giveSpool(dir, owner string) error {
	cred, err := credentialFor(owner)
	if err != nil {
		return err
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if cred != nil && p != dir {
			if err := os.Lchown(p, int(cred.Uid), int(cred.Gid)); err != nil {
				return err
			}
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		return syncPath(p)
	})
}

// stageIn says when a submission's inputs were spooled.
type stageIn struct{ start, finish int64 }

// mark records in a submitted ad whether its job runs from the spool:
// only the agent says so (a nil stage: it does not).
func (st *stageIn) mark(ad *classad.ClassAd) {
	unmarkSpooled(ad)
	if st != nil {
		ad.SetInt(AttrStageInStart, st.start)
		ad.SetInt(AttrStageInFinish, st.finish)
	}
}

// unmarkSpooled drops what only the agent may say of a submitted job:
// that it runs from the spool, or that its outputs were fetched.
func unmarkSpooled(ad *classad.ClassAd) {
	for _, name := range []string{AttrStageInStart, AttrStageInFinish, AttrStageOutFinish} {
		ad.Delete(name)
	}
}

// TransferData streams the outputs of a completed spooled job, or, with
// done, lets it leave the queue.
func (s *scheddService) TransferData(req *wire.TransferDataRequest, stream wire.Schedd_TransferDataServer) error {
	ctx := stream.Context()
	who, err := callerFrom(ctx)
	if err != nil {
		return err
	}
	id, err := jobqueue.ParseJobID(req.Job)
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	ad, ok := s.a.queue.Get(id)
	if !ok {
		return status.Errorf(codes.NotFound, "job %s is not in the queue", id)
	}
	owner, _ := ad.EvalString(AttrOwner)
	switch {
	case !who.mayEdit(owner):
		return status.Errorf(codes.PermissionDenied, "job %s is %s's: only its owner or root may fetch its outputs", id, owner)
	case !spooled(ad):
		return status.Errorf(codes.FailedPrecondition, "job %s was not submitted with -spool: its outputs went to its directory", id)
	case statusOf(ad) != Completed:
		return status.Errorf(codes.FailedPrecondition, "job %s is %s, not completed: its outputs are not in the spool yet", id, statusOf(ad))
	}
	if req.Done {
		_, err := s.a.jobs.apply(ctx, id, func(ad *classad.ClassAd) (step, error) {
			if statusOf(ad) != Completed {
				return step{}, status.Errorf(codes.FailedPrecondition, "job %s is no longer completed", id)
			}
			return step{set: change{AttrStageOutFinish: classad.Int(time.Now().Unix())}}, nil
		})
		if err != nil {
			return queueError(fmt.Sprintf("job %s: record its outputs fetched", id), err)
		}
		return nil
	}
	// The owner's shadow reaches the store and may have put anything in
	// it: the agent reads beneath the store only, whatever links are in it.
	store, err := os.OpenRoot(filepath.Join(s.a.cfg.CheckpointDir, owner))
	if err != nil {
		return status.Errorf(codes.Internal, "job %s: open its spool: %v", id, err)
	}
	defer store.Close()
	from, err := store.OpenRoot(filepath.Base(shadow.SpoolOutputDir(".", id.String())))
	if errors.Is(err, fs.ErrNotExist) {
		return nil // the job sent no outputs
	}
	if err != nil {
		return status.Errorf(codes.Internal, "job %s: open its outputs: %v", id, err)
	}
	defer from.Close()
	cred, err := asuser.Lookup(owner)
	if err != nil {
		return status.Errorf(codes.Internal, "job %s: %v", id, err)
	}
	// Read as the owner: a hard link the owner made in the store to a
	// file only root may read is then refused, whatever the machine's
	// fs.protected_hardlinks says.
	snd := &transfer.Sender{Out: stream.Send}
	if err := asuser.Do(cred, func() error { return snd.Send(from, ".", "") }); err != nil {
		return status.Errorf(codes.Internal, "job %s: send its outputs: %v", id, err)
	}
	return nil
}

// dropSpool removes the spooled inputs and outputs of a job that left
// the queue.
func (a *Agent) dropSpool(ad *classad.ClassAd) {
	owner, _ := ad.EvalString(AttrOwner)
	if a.cfg.CheckpointDir == "" || owner == "" || !spooled(ad) {
		return
	}
	store, key := filepath.Join(a.cfg.CheckpointDir, owner), jobID(ad).String()
	for _, d := range []string{shadow.SpoolDir(store, key), shadow.SpoolOutputDir(store, key)} {
		if err := os.RemoveAll(d); err != nil {
			a.log.Warn("remove spooled files", "job", key, "err", err)
		}
	}
}

// sweepSpool removes what a crash left in the spool: submissions being
// received, and spooled files of jobs the queue does not hold.
func (a *Agent) sweepSpool(ctx context.Context) {
	if a.cfg.CheckpointDir == "" {
		return
	}
	entries, err := os.ReadDir(a.cfg.CheckpointDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		p := filepath.Join(a.cfg.CheckpointDir, e.Name())
		if strings.HasPrefix(e.Name(), incomingPrefix) {
			_ = os.RemoveAll(p)
			continue
		}
		if !e.IsDir() || ctx.Err() != nil {
			continue
		}
		files, err := os.ReadDir(p)
		if err != nil {
			continue
		}
		for _, f := range files {
			key, ok := shadow.SpooledJob(f.Name())
			if !ok {
				continue
			}
			id, err := jobqueue.ParseJobID(key)
			if err != nil {
				continue
			}
			if _, queued := a.queue.Get(id); !queued {
				a.log.Info("remove spooled files of a job not in the queue", "job", key, "owner", e.Name())
				_ = os.RemoveAll(filepath.Join(p, f.Name()))
			}
		}
	}
}

// expireCompleted lets a completed job whose LeaveJobInQueue no longer
// holds leave the queue (a spooled one, its outputs never fetched).
func (a *Agent) expireCompleted(ctx context.Context, id jobqueue.JobID) error {
	_, err := a.jobs.apply(ctx, id, func(ad *classad.ClassAd) (step, error) {
		if statusOf(ad) != Completed || keptInQueue(ad) {
			return step{}, nil
		}
		return step{set: change{AttrLeaveJobInQueue: classad.Bool(false)}}, nil
	})
	return err
}

func dropAll(dirs []string) {
	for _, d := range dirs {
		_ = os.RemoveAll(d)
	}
}

// syncPath makes a file, or the names in a directory, durable.
func syncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
