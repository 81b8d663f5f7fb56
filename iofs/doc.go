// Package iofs is the FUSE file system through which a job reads and writes
// the files of its submit machine.
//
// The starter mounts iofs (outside the job's container) and binds it into
// the container at the job's initial directory, so that an unmodified
// program finds its files under the names it was given at submit time.
// iofs never opens a name on its own authority. Every open is two-phase, as
// in Condor's standard universe: phase one asks the shadow (Client.Resolve)
// to map the logical name to a physical name, a chain of methods and a path
// such as "buffer:remote:/home/u/in.dat"; phase two opens the physical name
// with those methods:
//
//   - remote: reads and writes over the shadow's I/O service;
//   - local: a file beneath the execute machine's scratch directory;
//   - http, https: range requests (read-only);
//   - compress: gzip, decompressed on read, compressed on write;
//   - fetch: the whole file copied to the execute machine at open and
//     written back when it is closed;
//   - buffer: a block cache with read-ahead and write-behind;
//   - append: every write goes to the end of the file.
//
// Round trips to the shadow are what cost: phase one brings a name's
// attributes along, and small files whole, so that a lookup and the open
// after it usually need one round trip; answers to phase one, and names
// that do not exist, are remembered for Options.Timeout. Bytes are what
// cost next: the kernel reads 16 MiB ahead of a sequential reader, 1 MiB
// per request, and a remote read's data is decoded from the shadow's reply
// straight into the FUSE request's reply buffer (see wire's codec): no
// buffer is allocated for a read's data on either side.
//
// The kernel's page cache holds the job's files, as for a local disk, with
// the consistency of a network file system:
//
//   - The kernel caches writes (FUSE's writeback cache): write(2) copies
//     into the page cache and returns, and the kernel writes dirty pages
//     back to iofs in requests of up to 1 MiB, whole pages from the
//     start of the page a write falls in (the shadow's statistics count
//     what is written back). iofs sends them behind, in batches of up to
//     1 MiB per request, several batches at a time and in order where
//     they overlap. close(2) returns once the file's writes are on the
//     submit side; fsync(2) once the shadow has synced them there
//     (fdatasync(2) as fdatasync), in one round trip with the writes
//     before it: the last batch, which waits a moment for company, and
//     the sync travel together, or the sync goes with a count of the
//     writes still travelling and the shadow makes it after them. The
//     mtime the kernel writes back before an fsync travels with the
//     writes too. A directory's fsync syncs the directory there. A failed write is reported by the
//     file's next fsync or close (as the kernel reports a failed
//     write-back: EIO, or ENOSPC). Pages the job dirtied but did
//     not yet close or fsync, and pages of files it mapped, wait in the
//     execute machine's page cache: Server.Sync brings them to the
//     submit side, and the starter calls it after every checkpoint's
//     dump and at the job's end, so that a job restored elsewhere finds
//     every write it made before its checkpoint.
//   - The kernel keeps the size and times it knows of a cached file, not
//     the shadow's: a regular file changed on the submit side becomes a
//     new inode (with a new number) at the next lookup of its name, once
//     no descriptor of it is open.
//   - Pages read stay cached across opens while the shadow reports the
//     file unchanged (same mtime, ctime and size as when iofs last saw it:
//     at an open, or at the close of a file the job wrote); otherwise an
//     open drops them. A file changed on the submit side is seen at the
//     next open after the name's entry expires (Options.Timeout).
//   - A file the job reads at random (the kernel reads ahead only of
//     sequential readers) is read whole into the page cache in the
//     background, if it is at most 1 GiB, while no descriptor of it is
//     open for writing (see prefetch.go). The shadow counts those reads
//     as the job's.
//
// The job's calls have POSIX's semantics as the submit side's file system
// gives them, with the submit side's errors: hard links, symbolic links
// (whose own times are set on the link), user.* extended attributes,
// FIFOs and sockets (named on the submit side, served by the execute
// machine's kernel), fallocate, and owner changes as far as the job's
// owner, who runs the shadow, may make them. Device files are refused.
// A job's write to a set-ID file clears its set-ID bits, which FUSE
// leaves to iofs (see file.killSetID). TestPOSIXSuite checks the calls
// against the submit side's own file system.
// The shadow counts in its statistics only what the job did: a lookup
// counts nothing, and the opens iofs serves from one are reported to it
// (Client.Account).
//
// Every call is made with the rights of the job's owner, whose files the
// job sees as its own user's (Options.Owner). A mount made by
// root is therefore open to other users only as far as the job needs:
// iofs answers only the job's user (Options.JobUID) and root, and refuses
// everyone else (see callerGuard).
//
// Errors reach the job as the errno the submit machine saw. While the
// shadow cannot be reached, I/O blocks and then resumes (up to the lease
// given to NewShadowClient), and files whose handles a restarted shadow
// forgot are opened again by name. Requests are not abandoned when the
// job gets a signal.
//
// iofs never uses FUSE passthrough: every byte goes through this process,
// which is what lets a checkpoint of the job find its files again.
package iofs
