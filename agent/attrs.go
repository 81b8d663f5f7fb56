package agent

// Job attributes the agent reads or writes, named as HTCondor names them,
// so that users' constraints, policies and tools read Harrier's job ads as
// they read HTCondor's. The attributes of resource-request ads are the
// matchmaker's (matchmaker.AttrJobIDs and the rest).

import "harrier.dev/harrier/matchmaker"

// Identity, ownership and what the job asks for.
const (
	AttrClusterID = "ClusterId"
	AttrProcID    = "ProcId"
	AttrOwner     = "Owner"
	AttrUser      = "User"
	// AttrAcctGroup and AttrAcctGroupUser are a job's accounting_group
	// and accounting_group_user; the agent sets AttrAccountingGroup
	// (group.user) when the group is one of the pool's.
	AttrAcctGroup       = "AcctGroup"
	AttrAcctGroupUser   = "AcctGroupUser"
	AttrAccountingGroup = matchmaker.AttrAccountingGroup
	AttrNiceUser        = "NiceUser"
	// AttrSubmitEventNotes is submit_event_notes, written under the
	// job's submit event.
	AttrSubmitEventNotes = "SubmitEventNotes"
	// AttrJobAdInformationAttrs (job_ad_information_attrs) names the
	// attributes written, after each event, in a JobAdInformation event.
	AttrJobAdInformationAttrs = "JobAdInformationAttrs"
	AttrQDate                 = "QDate"
	AttrGlobalJobID           = "GlobalJobId"
	AttrIwd                   = "Iwd"
	AttrUserLog               = "UserLog"
	AttrJobPrio               = "JobPrio"
	AttrRequirements          = "Requirements"
	AttrRank                  = "Rank"
	// AttrPorts makes a job a gang (package matchmaker/gang).
	AttrPorts = "Ports"
	// AttrEnvironment is the job's environment, HTCondor's V2 syntax.
	AttrEnvironment = "Environment"
	// AttrJobUniverse says where the job runs: on the pool's execute
	// machines, or (scheduler and local universes) on the agent's own.
	AttrJobUniverse = "JobUniverse"
)

// What the agent needs to start a scheduler or local universe job itself,
// and to stop it.
const (
	AttrCmd              = "Cmd"
	AttrArguments        = "Arguments"
	AttrIn               = "In"
	AttrOut              = "Out"
	AttrErr              = "Err"
	AttrKillSig          = "KillSig"
	AttrRemoveKillSig    = "RemoveKillSig"
	AttrHoldKillSig      = "HoldKillSig"
	AttrJobMaxVacateTime = "JobMaxVacateTime"
)

// DAGMan's marks on its node jobs: the node's name, which the submit event
// records for DAGMan's recovery, and the DAG's own job (its cluster).
const (
	AttrDAGNodeName = "DAGNodeName"
	AttrDAGManJobID = "DAGManJobId"
)

// The job's state (see JobStatus) and why it is in it.
const (
	AttrJobStatus            = "JobStatus"
	AttrLastJobStatus        = "LastJobStatus"
	AttrEnteredCurrentStatus = "EnteredCurrentStatus"
	AttrHoldReason           = "HoldReason"
	AttrHoldReasonCode       = "HoldReasonCode"
	AttrHoldReasonSubCode    = "HoldReasonSubCode"
	AttrReleaseReason        = "ReleaseReason"
	AttrRemoveReason         = "RemoveReason"
)

// Matches, runs and their ends.
const (
	AttrNumJobMatches           = "NumJobMatches"
	AttrLastMatchTime           = "LastMatchTime"
	AttrNumJobStarts            = "NumJobStarts"
	AttrJobStartDate            = "JobStartDate"
	AttrJobCurrentStartDate     = "JobCurrentStartDate"
	AttrRemoteHost              = "RemoteHost"
	AttrLastRemoteHost          = "LastRemoteHost"
	AttrRemoteWallClockTime     = "RemoteWallClockTime"
	AttrLastRemoteWallClockTime = "LastRemoteWallClockTime"
	AttrNumJobSuspensions       = "NumJobSuspensions"
	// AttrNumJobReconnects counts the times a running job's shadow and
	// starter found each other again after losing each other.
	AttrNumJobReconnects        = "NumJobReconnects"
	AttrJobDisconnectedDate     = "JobDisconnectedDate"
	AttrNumShadowExceptions     = "NumShadowExceptions"
	AttrLastShadowException     = "LastShadowException"
	AttrLastShadowExceptionDate = "LastShadowExceptionDate"
	AttrCompletionDate          = "CompletionDate"
	AttrNumJobCompletions       = "NumJobCompletions"
	AttrExitBySignal            = "ExitBySignal"
	AttrExitCode                = "ExitCode"
	AttrExitSignal              = "ExitSignal"
)

// Resource use.
const (
	AttrRemoteUserCPU   = "RemoteUserCpu"
	AttrRemoteSysCPU    = "RemoteSysCpu"
	AttrMemoryUsage     = "MemoryUsage"
	AttrResidentSetSize = "ResidentSetSize"
	AttrImageSize       = "ImageSize"
)

// The job's policy expressions.
const (
	AttrOnExitHold          = "OnExitHold"
	AttrOnExitHoldReason    = "OnExitHoldReason"
	AttrOnExitHoldSubCode   = "OnExitHoldSubCode"
	AttrOnExitRemove        = "OnExitRemove"
	AttrPeriodicHold        = "PeriodicHold"
	AttrPeriodicHoldReason  = "PeriodicHoldReason"
	AttrPeriodicHoldSubCode = "PeriodicHoldSubCode"
	AttrPeriodicRelease     = "PeriodicRelease"
	AttrPeriodicRemove      = "PeriodicRemove"
	AttrPeriodicVacate      = "PeriodicVacate"
	// AttrWantGracefulRemoval (want_graceful_removal) false stops a
	// removed job at once rather than with its kill signal.
	AttrWantGracefulRemoval = "WantGracefulRemoval"
	// AllowedJobDuration and AllowedExecuteDuration (allowed_job_duration,
	// allowed_execute_duration) bound a run's time, in seconds.
	AttrAllowedJobDuration     = "AllowedJobDuration"
	AttrAllowedExecuteDuration = "AllowedExecuteDuration"
)

// Checkpoints and restores.
const (
	AttrNumCkpts                  = "NumCkpts"
	AttrLastCkptTime              = "LastCkptTime"
	AttrLastCkptSize              = "LastCkptSize"
	AttrLastCkptImageSize         = "LastCkptImageSize"
	AttrLastCkptFrozenTime        = "LastCkptFrozenTime"
	AttrLastCkptDumpTime          = "LastCkptDumpTime"
	AttrNumCheckpointFailures     = "NumCheckpointFailures"
	AttrLastCheckpointFailure     = "LastCheckpointFailure"
	AttrLastCheckpointFailureTime = "LastCheckpointFailureTime"
	AttrNumRestores               = "NumRestores"
	AttrNumFreshStarts            = "NumFreshStarts"
	AttrLastCkptRestoreTime       = "LastCkptRestoreTime"
	AttrNumRestoreFailures        = "NumRestoreFailures"
	AttrLastRestoreFailure        = "LastRestoreFailure"
	AttrLastRestoreFailureTime    = "LastRestoreFailureTime"
)

// Self-checkpointing jobs (checkpoint_exit_code): the checkpoint files
// saved each time the job exits with its checkpoint code. These are
// Harrier's own names.
const (
	AttrNumSelfCheckpoints     = "NumSelfCheckpoints"
	AttrLastSelfCheckpointTime = "LastSelfCheckpointTime"
	AttrLastSelfCheckpointSize = "LastSelfCheckpointSize"
)

// Remote I/O totals (see runIO).
const (
	AttrFileReadCount  = "FileReadCount"
	AttrFileReadBytes  = "FileReadBytes"
	AttrFileWriteCount = "FileWriteCount"
	AttrFileWriteBytes = "FileWriteBytes"
	AttrFileSeekCount  = "FileSeekCount"
	AttrBytesRecvd     = "BytesRecvd"
	AttrBytesSent      = "BytesSent"
	AttrRemoteIOFiles  = "RemoteIOFiles"
)

// Late materialization: a factory's record (see factoryAd).
const (
	AttrJobMaterializeItems      = "JobMaterializeItems"
	AttrJobMaterializeNextProcID = "JobMaterializeNextProcId"
	AttrTotalSubmitProcs         = "TotalSubmitProcs"
	AttrJobMaterializeMaxIdle    = "JobMaterializeMaxIdle"
	AttrJobMaterializeLimit      = "JobMaterializeLimit"
)
