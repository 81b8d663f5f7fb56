// Package pgqueue keeps the agent's job queue in a PostgreSQL database: a
// second [jobqueue.Store], beside the embedded log, for sites that want
// their queue and history in a database server their other tools query.
//
// # Schema
//
// Several agents may keep their queues in one database: every row belongs
// to an agent, named by [Options.Agent] (HTCondor's schedd Name), and each
// agent has its own cluster numbers. The tables (migrations/*.sql says
// them column by column):
//
//	queue_jobs            a row per job: agent, cluster, proc, owner,
//	                      status, and the whole ad as jsonb in HTCondor's
//	                      JSON form
//	queue_history         the final ads of jobs that left the queue, in order
//	queue_events          job events, written with the commit that made them
//	cluster_reservations  cluster numbers handed out and not yet used
//	queue_counters        each agent's next cluster number
//	schema_version        the migrations applied
//
// Users query the views over them, with typed columns: jobs, job_history,
// job_events and usage (docs/pool.md documents them).
//
// Open applies the migrations the database lacks, in one transaction
// under an advisory lock, so starting two agents at once, or again, is
// harmless; a database at a newer version than the program knows is
// refused. The migration that brought in agent names gives the rows it
// finds to the agent applying it, unless their GlobalJobId name another.
//
// # Semantics
//
// The store keeps the same contract as the log. It holds its agent's queue
// for itself (a session advisory lock keyed by the agent's name: a second
// store of the same agent gets [jobqueue.ErrLocked]; other agents' stores
// go on), keeps a copy of that queue in memory that Get, Scan and Len
// answer from, and checks each transaction against that copy before
// writing it. Concurrent commits are written together, as one database
// transaction (group commit), on one connection; a Commit returns once the
// database has committed, and the copy changes only then. A NextCluster
// advances the counter in the database before it returns, so a number is
// never handed out twice, across crashes too. [Store.CommitEvents] writes
// job events in the same transaction as the commit; [Store.EveryAgent]
// reads every agent's jobs.
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
