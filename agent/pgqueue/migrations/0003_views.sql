-- SQL as a user interface: the tables the store writes take names of
-- their own (queue_*), and views with typed columns take the names users
-- query: jobs, job_history, job_events and usage. The agents also record
-- their jobs' events (what the job event log tells) in queue_events.

ALTER TABLE jobs RENAME TO queue_jobs;
ALTER TABLE job_history RENAME TO queue_history;
CREATE INDEX queue_history_retired ON queue_history (retired_at);

-- Job events, written in the transaction of the move that made them.
-- event holds the fields of the event, as the job event log has them.
CREATE TABLE queue_events (
    seq     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    agent   text NOT NULL,
    cluster integer NOT NULL,
    proc    integer NOT NULL,
    owner   text,
    time    timestamptz NOT NULL,
    type    integer NOT NULL,
    event   jsonb NOT NULL
);
CREATE INDEX queue_events_job ON queue_events (agent, cluster, proc, seq);
CREATE INDEX queue_events_time ON queue_events (time);

-- HTCondor's JobStatus values, and its job event numbers.
CREATE TABLE job_statuses (status integer PRIMARY KEY, name text NOT NULL);
INSERT INTO job_statuses VALUES (1, 'Idle'), (2, 'Running'), (3, 'Removed'), (4, 'Completed'),
    (5, 'Held'), (6, 'TransferringOutput'), (7, 'Suspended');
CREATE TABLE event_types (type integer PRIMARY KEY, name text NOT NULL);
INSERT INTO event_types VALUES (0, 'Submit'), (1, 'Execute'), (2, 'ExecutableError'), (3, 'Checkpointed'),
    (4, 'Evicted'), (5, 'Terminated'), (6, 'ImageSize'), (7, 'ShadowException'), (9, 'Aborted'),
    (10, 'Suspended'), (11, 'Unsuspended'), (12, 'Held'), (13, 'Released'), (28, 'JobAdInformation');

-- An attribute of an ad in HTCondor's JSON form, typed; NULL when it is
-- missing or an expression ("/Expr(...)/").
CREATE FUNCTION ad_int(ad jsonb, name text) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN jsonb_typeof(ad->name) = 'number' THEN trunc((ad->>name)::numeric)::bigint END
$$;
CREATE FUNCTION ad_real(ad jsonb, name text) RETURNS double precision LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN jsonb_typeof(ad->name) = 'number' THEN (ad->>name)::double precision END
$$;
CREATE FUNCTION ad_text(ad jsonb, name text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN jsonb_typeof(ad->name) = 'string' AND ad->>name NOT LIKE '/Expr(%)/' THEN ad->>name END
$$;
-- A time attribute (seconds since 1970); 0, HTCondor's "never", is NULL.
CREATE FUNCTION ad_time(ad jsonb, name text) RETURNS timestamptz LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN ad_int(ad, name) > 0 THEN to_timestamp(ad_int(ad, name)) END
$$;

-- The jobs in every agent's queue.
CREATE VIEW jobs AS
SELECT j.agent, j.cluster, j.proc, ad_text(j.ad, 'GlobalJobId') AS global_job_id,
       j.owner, j.status, s.name AS status_name,
       ad_time(j.ad, 'QDate') AS submitted,
       ad_time(j.ad, 'JobCurrentStartDate') AS started,
       ad_text(j.ad, 'RemoteHost') AS host,
       split_part(ad_text(j.ad, 'RemoteHost'), '@', 2) AS machine,
       ad_time(j.ad, 'EnteredCurrentStatus') AS status_since,
       j.ad
FROM queue_jobs j LEFT JOIN job_statuses s ON s.status = j.status
WHERE j.proc >= 0;

-- The jobs that left every agent's queue, completed or removed.
CREATE VIEW job_history AS
SELECT h.seq, h.agent, h.cluster, h.proc, ad_text(h.ad, 'GlobalJobId') AS global_job_id,
       h.owner, h.status, s.name AS status_name,
       ad_time(h.ad, 'QDate') AS submitted,
       ad_time(h.ad, 'JobCurrentStartDate') AS started,
       coalesce(ad_time(h.ad, 'CompletionDate'), ad_time(h.ad, 'EnteredCurrentStatus')) AS ended,
       ad_int(h.ad, 'ExitCode') AS exit_code,
       ad_int(h.ad, 'ExitSignal') AS exit_signal,
       ad_text(h.ad, 'LastRemoteHost') AS host,
       split_part(ad_text(h.ad, 'LastRemoteHost'), '@', 2) AS machine,
       ad_real(h.ad, 'RemoteWallClockTime') AS wall_seconds,
       ad_real(h.ad, 'RemoteUserCpu') AS user_cpu_seconds,
       ad_real(h.ad, 'RemoteSysCpu') AS sys_cpu_seconds,
       ad_int(h.ad, 'BytesRecvd') AS bytes_read,
       ad_int(h.ad, 'BytesSent') AS bytes_written,
       h.retired_at, h.ad
FROM queue_history h LEFT JOIN job_statuses s ON s.status = h.status;

-- The jobs' events, as their event logs tell them.
CREATE VIEW job_events AS
SELECT e.seq, e.agent, e.cluster, e.proc, e.owner, e.time, e.type, t.name AS event,
       nullif(e.event->>'Host', '') AS host,
       nullif(e.event->>'Reason', '') AS reason,
       CASE WHEN e.type = 5 AND (e.event->>'Normal')::boolean THEN (e.event->>'ReturnValue')::integer END AS exit_code,
       CASE WHEN e.type = 5 AND NOT (e.event->>'Normal')::boolean THEN (e.event->>'Signal')::integer END AS exit_signal,
       (e.event->>'BytesReceived')::bigint AS bytes_read,
       (e.event->>'BytesSent')::bigint AS bytes_written,
       e.event AS detail
FROM queue_events e LEFT JOIN event_types t ON t.type = e.type;

-- What each job that left the queue used: a row per submit-side file its
-- last run read or wrote through remote I/O (file is NULL for a job that
-- did none), with the run's host and times.
CREATE VIEW usage AS
SELECT h.agent, h.cluster, h.proc, h.owner, h.status_name, h.host, h.machine,
       h.started, h.ended, h.exit_code, h.wall_seconds, h.user_cpu_seconds, h.sys_cpu_seconds,
       f->>'Name' AS file,
       (f->>'OpenCount')::bigint AS opens,
       (f->>'ReadCount')::bigint AS reads,
       (f->>'ReadBytes')::bigint AS bytes_read,
       (f->>'WriteCount')::bigint AS writes,
       (f->>'WriteBytes')::bigint AS bytes_written,
       (f->>'SeekCount')::bigint AS seeks,
       (f->>'Seconds')::double precision AS io_seconds
FROM job_history h
LEFT JOIN LATERAL jsonb_array_elements(
    CASE WHEN jsonb_typeof(h.ad->'RemoteIOFiles') = 'array' THEN h.ad->'RemoteIOFiles' ELSE '[]'::jsonb END) AS f ON true;
