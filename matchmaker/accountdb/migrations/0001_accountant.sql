-- The matchmaker's accountant: users' priorities and usage, as harrier
-- userprio shows them, one pool's rows under its name, so that pools (and
-- the agents' queues) may share a database.

-- Each user's state as of the accountant's last save.
CREATE TABLE accountant_users (
    pool          text NOT NULL,
    username      text NOT NULL,
    real_priority double precision NOT NULL,
    factor        double precision NOT NULL, -- in force when saved
    in_use        integer NOT NULL,          -- slots held
    usage_seconds double precision NOT NULL, -- slot time used, all told
    last_usage    timestamptz,
    PRIMARY KEY (pool, username)
);

-- Priority factors set at run time (harrier userprio -setfactor).
CREATE TABLE accountant_factors (
    pool     text NOT NULL,
    username text NOT NULL,
    factor   double precision NOT NULL CHECK (factor > 0),
    PRIMARY KEY (pool, username)
);

-- When the accountant last charged usage, and last saved.
CREATE TABLE accountant_clock (
    pool        text PRIMARY KEY,
    last_update timestamptz,
    saved_at    timestamptz NOT NULL DEFAULT now()
);

-- Users' priorities and usage, with condor_userprio's figures.
CREATE VIEW user_priorities AS
SELECT u.pool, u.username, u.real_priority * u.factor AS priority, u.real_priority, u.factor,
       u.in_use AS resources_used, u.usage_seconds / 3600 AS usage_hours, u.last_usage, c.saved_at
FROM accountant_users u LEFT JOIN accountant_clock c USING (pool);
