// Package checkpoint saves a running job's container to an image with
// CRIU and brings it back, on the same machine or another one, so that a
// vacated job continues where it was instead of starting again.
//
// The starter calls Dump on the job's libcontainer container (CRIU
// through libcontainer and go-criu), Pack to stream the image home
// compressed and sealed, and, on the next machine, Unpack and Restore.
// The shadow keeps the latest good image of each job in a Store. The
// pieces and the reasons for them:
//
//   - A dump is watched: CRIU reads through the job's FUSE working
//     directory (it stats and opens every file the job holds) and waits
//     with no time limit if that file system stops answering. Dump kills
//     CRIU when its deadline passes and thaws the job. A killed CRIU that
//     holds files on the stuck mount still waits for the server when it
//     closes them (ErrStuck); if the caller allows it, Dump then aborts
//     the FUSE connection as the last resort (the job keeps running but
//     its working directory is gone).
//   - Dump freezes the job itself just before CRIU starts: CRIU, finding
//     the cgroup frozen, skips its freezer polling, whose first round is
//     a fixed 100 ms of downtime. It freezes it at a moment when no
//     process waits for a vforked child to exec: CRIU cannot seize such
//     a process and fails after 10 s, and shells vfork every command.
//     With LoopbackOnly it also leaves the job's network namespace (only
//     a loopback, as the sandbox makes it) out of the image, which spares
//     CRIU's ip and iptables runs while the job is frozen; Restore then
//     brings the loopback up in the fresh namespace CRIU makes. A job
//     holding TCP sockets has its namespace dumped all the same, with
//     its connections (CRIU's tcp-established): CRIU reconnects them as
//     it restores them, before a fresh loopback could be brought up.
//   - The job runs as an unprivileged user. CRIU reads each process's
//     resource limits with prlimit(2), which for another user's process
//     needs CAP_SYS_RESOURCE; where root lacks it (our VMs), the CRIU
//     scripts/setup builds reads /proc/PID/limits instead, and any
//     other gives ErrRlimits.
//   - An image is untrusted on its way back: the shadow that stores it
//     runs as the job's owner. The starter that makes it seals it with
//     the pool's key (Key, Seal: an HMAC of the manifest, which holds
//     the SHA-256 of every file, bound to the job's GlobalJobId and
//     owner), which only the pool's execute machines hold, and Unpack
//     refuses an image whose seal it cannot verify (ErrForged) before
//     anything is restored.
//   - A restore takes nothing but the job's processes from the image:
//     the caller builds the container's configuration as for a fresh
//     start, and before CRIU reads the image Restore checks that none
//     of its processes would get more than a fresh start gets (user,
//     groups, capabilities, no_new_privs, seccomp, namespaces), reading
//     CRIU's own records of them with go-criu's crit (ErrPrivilege).
//   - Bind mounts are external to CRIU: it binds whatever is at their
//     sources, so the caller mounts the new FUSE server first and
//     Restore verifies by statfs that the source is FUSE before it
//     starts CRIU (CRIU itself does not look). Their places in the
//     container must be the dumped job's, so they must not depend on
//     the machine.
//   - A restore runs in a private copy of the mount namespace (every
//     mount a slave of the host's). libcontainer prepares CRIU's root by
//     binding each bind mount's source recursively and unmounting it
//     again; done on the host, those unmounts propagate through shared
//     mounts and remove the host's own (/run/netns/NAME, which
//     "ip netns" makes shared, and so the network namespaces only that
//     name kept alive; anything under / where systemd made it shared).
//   - A file the job holds open for reading must have the same size at
//     restore as at the dump, or CRIU refuses to restore. Dump reads
//     those files and their sizes (Result.Inputs) back from the image's
//     files.img with go-criu's crit: exactly what CRIU will check, and
//     no I/O of ours on a FUSE mount that may be stuck. CheckInputs
//     compares the recorded sizes with the files as they are now; the
//     shadow reads them from a stored image (Store.Info) and refuses to
//     send an image whose inputs changed.
//   - An image travels as a zstd-compressed tar stream ending in a
//     manifest of per-file SHA-256 sums; Unpack and Verify reject a
//     corrupted, truncated or padded stream before anything is restored.
//     Only Unpack recomputes the sums (and checks the seal): the shadow's
//     Verify, which has no key to check a seal with, checks that the
//     stream is whole (structure, sizes, zstd's own checksum) for a
//     fraction of the CPU, which is what a large image's hop is bound by.
//     Subdirectories and links travel too, but only links that stay
//     inside the image: the stream is untrusted.
//   - Pre-copy (iterative pre-dumps that shorten the frozen time) needs
//     the kernel's soft-dirty bits; Probe reports whether CRIU has them
//     and PreDump refuses with ErrNoPreCopy where it has not. DumpPreCopy
//     turns it on where Probe says yes: up to MaxPreDumps pre-dumps while
//     the job runs, fewer once the dirty set stops shrinking, then the
//     final dump on top of the last. The pre-dumps are moved into the
//     image (pre.1/, pre.2/, ...) with relative parent links, so the
//     image stays self-contained; elsewhere DumpPreCopy is Dump. Our
//     machines have no soft-dirty bits, so dumps here are full dumps.
//
// CRIU's statistics (frozen time, memory dump and write time, pages
// written; restore time) come back with every dump and restore.
//
// A binary that uses this package must lock its main goroutine to the
// main OS thread in init: libcontainer's mount helper otherwise can leave
// the main thread in the container's mount namespace, which pins the old
// FUSE mount and wedges its server's unmount.
package checkpoint
