// Package pgqueue keeps the agent's job queue in a PostgreSQL database: a
// second [jobqueue.Store], beside the embedded log, for sites that want
// their queue and history in a database server their other tools query.
//
// # Schema
//
// The schema is made for queries (migrations/*.sql says it column by
// column):
//
//	jobs                  a row per job: cluster, proc, owner, status, and
//	                      the whole ad as jsonb in HTCondor's JSON form
//	job_history           the final ads of jobs that left the queue, in order
//	cluster_reservations  cluster numbers handed out and not yet used
//	queue_counters        the next cluster number
//	schema_version        the migrations applied
//
// Open applies the migrations the database lacks, in one transaction
// under an advisory lock, so starting two agents at once, or again, is
// harmless; a database at a newer version than the program knows is
// refused.
//
// # Semantics
//
// The store keeps the same contract as the log. It holds the database for
// itself (a session advisory lock: a second store gets
// [jobqueue.ErrLocked]), keeps a copy of the queue in memory that Get,
// Scan and Len answer from, and checks each transaction against that copy
// before writing it. Concurrent commits are written together, as one
// database transaction (group commit), on one connection; a Commit
// returns once the database has committed, and the copy changes only
// then. A NextCluster advances the counter in the database before it
// returns, so a number is never handed out twice, across crashes too.
//
// # Losing the database
//
// While the database cannot be reached, Commit and NextCluster fail with
// [jobqueue.ErrUnavailable] and apply nothing, History fails, and Get,
// Scan and Len go on answering from the copy: the agent keeps its running
// jobs and refuses what would change the queue. Every commit tries to
// connect again. Once connected, the store reads the whole queue again
// before its next commit, since a connection lost while the database
// committed leaves the outcome of that commit unknown to the store.
package pgqueue
