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
// after it usually need one round trip; writes to remote files go behind
// the job, several at a time and in order where they overlap, and a failed
// write is reported by the file's next write, fsync or close, as network
// file systems do. Bytes are what cost next: the kernel reads 16 MiB ahead
// of a sequential reader, 1 MiB per request, and a remote read's data is
// decoded from the shadow's reply straight into the FUSE request's reply
// buffer (see wire's codec): no buffer is allocated for a read's data on
// either side.
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
