-- Several agents share one database, each with its own queue: every row
-- belongs to the agent whose queue it is (its name, HTCondor's schedd
-- Name, the first part of its jobs' GlobalJobId), and cluster numbers
-- count per agent, as each HTCondor schedd counts its own.
--
-- A database from before this migration held one agent's queue. Its rows
-- go to the agent applying the migration, whose name the store sets in
-- harrier.agent; if the jobs' GlobalJobId name another agent, the
-- migration fails rather than give that agent's jobs away.
DO $$
DECLARE
    me    text := current_setting('harrier.agent');
    other text;
BEGIN
    SELECT split_part(ad->>'GlobalJobId', '#', 1) INTO other
    FROM (SELECT ad FROM jobs UNION ALL SELECT ad FROM job_history) AS a
    WHERE ad ? 'GlobalJobId' AND split_part(ad->>'GlobalJobId', '#', 1) <> me
    LIMIT 1;
    IF other IS NOT NULL THEN
        RAISE EXCEPTION 'the job queue in this database is agent %''s, not %''s: open it as % first', other, me, other;
    END IF;
END $$;

ALTER TABLE queue_counters DROP COLUMN only_row;
ALTER TABLE queue_counters ADD COLUMN agent text NOT NULL DEFAULT current_setting('harrier.agent');
ALTER TABLE queue_counters ALTER COLUMN agent DROP DEFAULT;
ALTER TABLE queue_counters ADD PRIMARY KEY (agent);

ALTER TABLE cluster_reservations ADD COLUMN agent text NOT NULL DEFAULT current_setting('harrier.agent');
ALTER TABLE cluster_reservations ALTER COLUMN agent DROP DEFAULT;
ALTER TABLE cluster_reservations DROP CONSTRAINT cluster_reservations_pkey;
ALTER TABLE cluster_reservations ADD PRIMARY KEY (agent, cluster);
DROP INDEX cluster_reservations_owner;
CREATE INDEX cluster_reservations_owner ON cluster_reservations (agent, owner, cluster);

ALTER TABLE jobs ADD COLUMN agent text NOT NULL DEFAULT current_setting('harrier.agent');
ALTER TABLE jobs ALTER COLUMN agent DROP DEFAULT;
-- The agent comes last in the key: a commit finds its rows by (cluster,
-- proc) whatever the planner thinks of the agent's share of the table
-- (with agent first, a plan made before the statistics know of a large
-- submission may scan all of an agent's jobs for each row it changes).
ALTER TABLE jobs DROP CONSTRAINT jobs_pkey;
ALTER TABLE jobs ADD PRIMARY KEY (cluster, proc, agent);

ALTER TABLE job_history ADD COLUMN agent text NOT NULL DEFAULT current_setting('harrier.agent');
ALTER TABLE job_history ALTER COLUMN agent DROP DEFAULT;
DROP INDEX job_history_job;
CREATE INDEX job_history_job ON job_history (agent, cluster, proc);
