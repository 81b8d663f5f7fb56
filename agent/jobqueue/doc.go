// Package jobqueue is the agent's durable job queue: an embedded, crash-safe
// store of job ClassAds.
//
// HTCondor's schedd writes one transaction log record and one fsync per
// queue edit, and that fsync bounds how fast it can accept submissions and
// edits. Here every change is a [Txn] (a whole submission, a hold of one job,
// …) appended to a log, and concurrent commits share one write and one fsync
// (group commit): a Commit returns only once its transaction is durable, but
// sixty-four goroutines committing at once cost one fsync, not sixty-four.
//
// # On disk
//
// A store is a directory holding
//
//	LOCK                   flock(2)ed while open: one process at a time
//	snapshot.N             the whole queue as of the start of log.N
//	log.N, log.N+1, …      transactions committed since, in order
//	history                ads of jobs that left the queue, numbered
//
// Every file is a sequence of frames:
//
//	magic "HJQ\x01" | length uint32 LE | CRC-32C uint32 LE | payload
//
// The CRC (Castagnoli) covers the length field and the payload. A log frame
// holds every transaction of one commit group, so a group is durable or
// lost as a whole. Recovery replays the newest snapshot and the logs after
// it. A bad frame at the end of the last log, with no valid frame after it,
// is a write torn by a crash: no Commit covering it returned, so it is
// truncated. A bad frame followed by a valid one means acknowledged data was
// damaged; Open then fails with a [*CorruptError] rather than drop it.
//
// A failed write or fsync (a full disk) is undone: the log is cut back to
// its last group and that is synced, the group's transactions are not
// applied and their Commits fail, and the next group is written where the
// failed one would have been. The store needs no restart once the disk has
// room again.
//
// Expressions are stored as ClassAd source text. A job added in the same
// transaction as the job before it is stored as the attributes in which it
// differs, so a cluster of 100,000 jobs costs little more than its distinct
// attributes, on disk and when read back.
//
// # History
//
// A job leaves the queue by [Txn.Retire], which removes it and records its
// final ad in the same transaction, in the same log frame. Each retirement
// is given the next history record number, written in the log before it;
// once the frame is durable the committer appends the ads, under their
// numbers, to the history file and syncs it before the Commit returns.
// Recovery compares the history file's last number with the logs' and
// appends what a crash kept out; a history write that fails keeps the
// records in memory (History shows them) until one succeeds, and no
// compaction removes a log whose records are not yet in the history. So
// a retired job is in exactly one of the queue and the history, once.
//
// # Clusters
//
// [Store.NextCluster] reserves a cluster number for an owner, durably;
// the counter never goes back, snapshots keep it and the open
// reservations. A submission commits [Txn.UseCluster] with its jobs: the
// reservation is used up, so a cluster is filled once, by the owner who
// was given it, and no job id is ever used twice. An owner holds at most
// [Options.MaxReservations] open reservations; a further one ends the
// oldest.
//
// # Compaction
//
// When the logs outgrow the live queue by [Options.CompactRatio], the
// committer starts log.N+1 and a background writer saves the queue as it was
// at that point to snapshot.N+1.tmp, fsyncs it, renames it to snapshot.N+1,
// fsyncs the directory and only then removes snapshot.N and log.N. A crash at
// any step leaves either the old snapshot with all its logs or the new one
// with its own; leftover temporary files are removed on open.
package jobqueue
