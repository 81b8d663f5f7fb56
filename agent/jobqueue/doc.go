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
//	history                ads of jobs that left the queue
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
// Expressions are stored as ClassAd source text. A job added in the same
// transaction as the job before it is stored as the attributes in which it
// differs, so a cluster of 100,000 jobs costs little more than its distinct
// attributes, on disk and when read back.
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
