// Package dagman runs workflows written in HTCondor's DAG file language:
// a directed acyclic graph of jobs whose nodes are submitted when their
// parents have succeeded, with PRE and POST scripts, retries, throttles,
// rescue DAGs and recovery from the nodes' job event log after a crash,
// as HTCondor's condor_dagman does.
//
// [ParseFile] reads a DAG file (and the files it includes and splices)
// and checks all of it, reporting the first problem as a *[ParseError]
// naming the file and line, before anything runs. [Run] executes a parsed
// DAG: it submits nodes' jobs through a [Submitter] and learns of their
// progress only by reading the job event log every node job writes
// (FILE.dag.nodes.log). Because the log is the record, a DAG whose process
// was killed is resumed by running it again: Run finds the lock file the
// dead process left, replays the log (HTCondor's recovery mode) and
// neither loses nor repeats a node.
//
// Files next to the DAG file, named as HTCondor names them:
//
//	FILE.dag.nodes.log     the job event log of every node job, with DAGMan's own POST and PRE_SKIP events
//	FILE.dag.dagman.out    progress, one timestamped line per step
//	FILE.dag.lock          present while the DAG runs; left behind by a crash, it starts recovery
//	FILE.dag.rescueNNN     the nodes done, written when the DAG fails; the newest is applied on the next run
//
// The package decides and records; the scheduler that runs Run as a job,
// and the Submitter that talks to it, live with their callers.
package dagman
