// Package web serves a pool's status pages: the matchmaker's (the pool's
// slots and users, and their history) and each agent's (its queue, a
// job's event log, remote I/O and checkpoints, and the queue's history).
//
// The pages are plain HTML rendered on the server with html/template,
// their plots inline SVG drawn here; they need no script and fetch
// nothing from elsewhere. They are read-only: no handler changes the
// pool, and only GET (and HEAD) is served.
//
// They show what harrier status, harrier userprio and harrier q show a
// pool member, to anyone who reaches their address: a daemon serves them
// on loopback unless configured otherwise. Everything a user wrote (job
// names, arguments, owners, hold reasons, event log text) is escaped by
// html/template as text; a constraint in a query parameter is only
// evaluated, as harrier q -constraint does.
package web
