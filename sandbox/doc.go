// Package sandbox runs a job's unmodified program in a container with
// limits: the execute machine's side of Harrier's split execution.
//
// Each job gets its own container, made with runc's libcontainer:
//
//   - The host's root file system, read-only, is the container's root, so
//     that ordinary dynamically linked programs (sort, awk, python3) run as
//     they are: one bind of it alone (no mount below it), read-only,
//     nosuid, nodev and private, made once per machine in the sandbox's
//     directory on a memory file system (hostRoot), which each container
//     binds. A top-level directory of the host that is a mount of its own
//     is bound read-only too, and nothing mounted deeper shows; /proc, /dev,
//     /sys and /tmp are the container's own (/tmp a private tmpfs), and the
//     job's scratch directory and working directory are the only writable
//     host paths. The job sees its scratch directory at /srv
//     (JobScratchDir), its working directory at the job's own path (the
//     submit side's, when iofs serves it): nothing the job sees depends on
//     the machine, so that a checkpointed job finds everything where it
//     left it on whichever machine restores it. A working directory that
//     the machine lacks, or has closed to the slot's user, below a
//     top-level directory that is not the system's (/home, /data), is
//     shown in a tmpfs of the container's own at that top-level directory
//     (see dirTop).
//   - A job that names its own container image (Task.ImageLayers) gets
//     that image as its root instead: an overlay of the image's layers,
//     read-only and shared with other jobs, under a layer of the
//     container's mount points on a memory file system, and an upper
//     directory in the job's scratch directory (root's alone, used only
//     through a descriptor opened before the job runs, as the job may
//     rename what is in its scratch directory), mounted for the job and
//     unmounted with its container. No host directory is bound then; the
//     scratch and working directories are, as above. Its checkpoints
//     carry the upper directory (rootArchive), which a restore puts
//     back under the same layers.
//   - New pid, mount, ipc, uts and network namespaces (loopback only), an
//     unprivileged slot user (root only when the administrator allows it),
//     no new privileges, no capabilities for a non-root user, masked and
//     read-only /proc paths, and the usual device rules.
//   - The job's own devices (Task.Devices, its GPUs), made at their host
//     paths in its /dev and allowed by its device cgroup; no other host
//     device is there. Such a job is not checkpointed (ErrGPUCheckpoint).
//
// Cgroups come in two layers. The slot cgroup, made with containerd's
// cgroups v3, groups everything a startd slot ever runs; it lives under
// the calling process's own cgroup (harrier/<hash of the state root>/<slot>)
// so that two startds on one machine never meet. The job's container cgroup
// is made inside it by libcontainer's own cgroup manager, which also sets
// the job's limits (memory, CPU shares, pids, devices), reads its usage and
// freezes it. Cleanup works on the slot cgroup alone: it can always find,
// kill and remove what a dead starter left behind, even when the
// container's state was never written. On cgroup v1 the slot's cpuset
// cgroup clones its cores to each job's (cgroup.clone_children), so that
// making a job's cgroup does not rebuild the machine's scheduler domains
// as a write to its cpuset.cpus would. cgroup v1 (and hybrid) is what our
// machines have; the unified (v2) path is present but untested here, and
// on v2 it needs a delegated subtree whose own processes sit in a leaf.
//
// The job's first process is the init of its pid namespace, which the
// kernel shields from signals it does not handle; Job.Signal makes up for
// it, ending the job as an ordinary process would have ended. When that
// process exits, the kernel kills the rest of the namespace, so Wait
// leaves no process behind; it then removes the container's cgroups and
// state (its mounts went with its mount namespace). That state
// (libcontainer's state.json, exec FIFO, directory) is written several
// times while a job starts, so it lives on a memory file system when
// there is one: <parent>/harrier-sandbox/<hash of the state
// root>-<slot>, the parent /run or else /dev/shm, the directory root's
// own and closed to others, removed by Cleanup; elsewhere in the state
// root's containers directory.
//
// libcontainer starts a container by re-executing its caller as the
// container's init. A process of a binary linking this package hands over
// at once, before its own Go runtime starts, to the small init that
// InstallInit put in a read-only file system of its own (cmd/harrier-init:
// libcontainer's init alone), so that a job does not pay for the start of
// everything else linked into harrier; without one, the caller stays the
// init.
//
// Job.Exec starts another process in a running job's container for the
// job's owner (harrier ssh-to-job): in its namespaces and cgroup, as its
// user, with a terminal made inside the container when asked. It dies
// with the job's pid namespace at the latest.
//
// A job is checkpointed with CRIU (Job.Checkpoint) and restored into a
// container made exactly as for a fresh start of the job on this machine
// (Runner.Restore): the image brings the job's processes, never their
// container's configuration, and processes asking for more than a fresh
// start has are refused (see the checkpoint package).
//
// The administrator's choices (slot user, root jobs, pids limit, hard CPU
// limit, disk factor) are a Policy, which the startd saves in the state
// root for its starters. The disk factor holds a job whose scratch
// directory outgrows its disk request (Task.DiskKB) by that factor (the
// starter gives one only for a request_disk the user wrote, since the
// default is an estimate that the scratch directory's own blocks already
// exceed); and every job, request or not, is held once its scratch
// directory outgrows Task.ScratchLimitKB, its slot's share of the disk,
// so that no job fills the execute machine's disk.
//
// A binary that uses this package must let libcontainer re-execute it as
// the container's init: call Init first thing when IsInit reports true (see
// init.go), with the main goroutine locked to the main thread.
package sandbox
