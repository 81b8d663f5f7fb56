-- The job queue: jobs, the clusters reserved for owners, the counter of
-- cluster numbers, and the history of jobs that left the queue.

-- One row: the lowest cluster number never handed out or used.
CREATE TABLE queue_counters (
    only_row     boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    next_cluster integer NOT NULL CHECK (next_cluster > 0)
);
INSERT INTO queue_counters (next_cluster) VALUES (1);

-- Cluster numbers handed out to an owner and not yet used by a submission.
CREATE TABLE cluster_reservations (
    cluster     integer PRIMARY KEY CHECK (cluster > 0),
    owner       text NOT NULL,
    reserved_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX cluster_reservations_owner ON cluster_reservations (owner, cluster);

-- The jobs in the queue. ad is the whole job ClassAd in HTCondor's JSON
-- form (condor_q -json): literals are JSON values, other expressions the
-- string "/Expr(...)/". owner and status repeat its Owner and JobStatus
-- for indexes; proc -1 is a cluster's own ad (a late-materialization
-- factory).
CREATE TABLE jobs (
    cluster integer NOT NULL CHECK (cluster > 0),
    proc    integer NOT NULL CHECK (proc >= -1),
    owner   text,
    status  integer,
    ad      jsonb NOT NULL,
    PRIMARY KEY (cluster, proc)
);
CREATE INDEX jobs_owner ON jobs (owner);
CREATE INDEX jobs_status ON jobs (status);

-- The final ads of jobs that left the queue, in the order they left.
CREATE TABLE job_history (
    seq        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    cluster    integer NOT NULL,
    proc       integer NOT NULL,
    owner      text,
    status     integer,
    retired_at timestamptz NOT NULL DEFAULT now(),
    ad         jsonb NOT NULL
);
CREATE INDEX job_history_job ON job_history (cluster, proc);
CREATE INDEX job_history_owner ON job_history (owner, retired_at);
