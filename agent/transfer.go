package agent

import (
	"context"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/joblog"
	"harrier.dev/harrier/shadow"
)

// File transfer's attributes, HTCondor's names: when the current run's
// transfers began and ended, whether one is under way, the inputs' size,
// and (BytesRecvd, BytesSent) the bytes the job received and sent, remote
// I/O and transfers together.
const (
	AttrJobCurrentStartTransferInputDate   = "JobCurrentStartTransferInputDate"
	AttrJobCurrentFinishTransferInputDate  = "JobCurrentFinishTransferInputDate"
	AttrJobCurrentStartTransferOutputDate  = "JobCurrentStartTransferOutputDate"
	AttrJobCurrentFinishTransferOutputDate = "JobCurrentFinishTransferOutputDate"
	AttrTransferringInput                  = "TransferringInput"
	AttrTransferringOutput                 = "TransferringOutput"
	AttrTransferInputSizeMB                = "TransferInputSizeMB"
	AttrTransferInputFiles                 = "TransferInputFiles"
	AttrTransferOutputFiles                = "TransferOutputFiles"
)

// transferred records a transfer's start or end reported by the job's
// shadow, in the job's ad and its event log (HTCondor's 040 events).
func (a *Agent) transferred(ctx context.Context, r *run, ev shadow.Event) {
	t := ev.Transfer
	a.metrics.transferred(t)
	_, err := a.jobs.apply(ctx, r.id, func(ad *classad.ClassAd) (step, error) {
		return transferStep(ad, t, time.Now()), nil
	})
	if err != nil {
		a.log.Warn("record file transfer", "job", r.id, "err", err)
	}
}

// transferStep is what a transfer's start or end changes.
func transferStep(ad *classad.ClassAd, t *shadow.TransferStats, now time.Time) step {
	e := joblog.Event{Type: joblog.FileTransfer, Transfer: joblog.TransferInfo{Output: t.Output, Finished: t.Finished}}
	if t.Finished {
		e.Transfer.Files, e.Transfer.Bytes = t.Files, t.Bytes
	}
	c := change{}
	switch {
	case !t.Output && !t.Finished:
		c[AttrJobCurrentStartTransferInputDate] = classad.Int(now.Unix())
		c[AttrTransferringInput] = classad.Bool(true)
	case !t.Output:
		c[AttrJobCurrentFinishTransferInputDate] = classad.Int(now.Unix())
		c[AttrTransferringInput] = classad.Bool(false)
		c[AttrTransferInputSizeMB] = classad.Int((t.Bytes + 1<<20 - 1) >> 20)
		c[AttrTransferInputFiles] = classad.Int(int64(t.Files))
		n, _ := ad.EvalInt(AttrBytesRecvd)
		c[AttrBytesRecvd] = classad.Int(n + t.Bytes)
	case !t.Finished:
		c[AttrJobCurrentStartTransferOutputDate] = classad.Int(now.Unix())
		c[AttrTransferringOutput] = classad.Bool(true)
	default:
		c[AttrJobCurrentFinishTransferOutputDate] = classad.Int(now.Unix())
		c[AttrTransferringOutput] = classad.Bool(false)
		c[AttrTransferOutputFiles] = classad.Int(int64(t.Files))
		n, _ := ad.EvalInt(AttrBytesSent)
		c[AttrBytesSent] = classad.Int(n + t.Bytes)
	}
	return step{set: c, log: logs(e)}
}
