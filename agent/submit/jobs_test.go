package submit

import (
	"strings"
	"testing"
)

var defaultReq = baseReq + ckptReq

// baseReq are the clauses condor_submit adds, ckptReq the one a job that
// may be checkpointed gets for its checkpoint's platform.
const (
	baseReq = `(TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && (TARGET.Cpus >= RequestCpus)`
	ckptReq = ` && ((MY.LastCheckpointPlatform is undefined) || (TARGET.CheckpointPlatform is MY.LastCheckpointPlatform))`
)

func TestJobs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		src   string
		files map[string]string
		want  []map[string]string // one per job, in proc order
	}{{
		name: "defaults",
		src:  "\ufeffexecutable = job.sh\r\nqueue\r\n",
		want: []map[string]string{{
			"ClusterId": "42", "ProcId": "0", "Owner": `"alice"`, "User": `"alice"`,
			"Cmd": `"$DIR/job.sh"`, "Iwd": `"$DIR"`, "JobUniverse": "5", "JobStatus": "1",
			"In": `"/dev/null"`, "Out": `"/dev/null"`, "Err": `"/dev/null"`, "UserLog": absent,
			"Arguments": `""`, "Environment": `""`,
			"QDate": "1800000000", "EnteredCurrentStatus": "1800000000",
			"RequestCpus": "1", "RequestMemory": "128", "RequestDisk": "1", "DiskUsage": "1",
			"Requirements": defaultReq, "Rank": "0.0", "JobPrio": "0",
			"PeriodicHold": "false", "PeriodicRelease": "false", "PeriodicRemove": "false",
			"OnExitHold": "false", "OnExitRemove": "true", "NumJobStarts": "0", "ExitCode": absent,
			"WantCheckpoint": "true", "TransferExecutable": "true",
			"ShouldTransferFiles": `"NO"`, "WhenToTransferOutput": absent,
		}},
	}, {
		name: "paths relative to the submit directory",
		src: `executable = job.sh
input = data.txt
output = out/$(Cluster).$(Process).out
error = /tmp/abs.err
log = job.log
queue`,
		want: []map[string]string{{
			"In": `"$DIR/data.txt"`, "Out": `"$DIR/out/42.0.out"`, "Err": `"/tmp/abs.err"`,
			"UserLog": `"$DIR/job.log"`, "RequestDisk": "3", "DiskUsage": "3",
		}},
	}, {
		name:  "initialdir",
		files: map[string]string{"run1/in": "x"},
		src: `executable = job.sh
initialdir = run1
input = in
log = log
queue`,
		want: []map[string]string{{
			"Cmd": `"$DIR/job.sh"`, "Iwd": `"$DIR/run1"`, "In": `"$DIR/run1/in"`, "UserLog": `"$DIR/run1/log"`,
		}},
	}, {
		name: "arguments, new style",
		src: `executable = job.sh
arguments = "one 'two three' 'it''s' ""quoted"""
queue`,
		want: []map[string]string{{"Arguments": `"one 'two three' 'it''s' \"quoted\""`}},
	}, {
		name: "arguments, old style",
		src: `executable = job.sh
arguments = -x  file.$(Process) \"q\"
queue`,
		want: []map[string]string{{"Arguments": `"-x file.0 \"q\""`}},
	}, {
		name: "environment, both styles and getenv",
		src: `executable = job.sh
environment = A=1;B=two words;PATH=/opt/bin
getenv = true
queue
environment = "A=1 B='x y' C=""q"""
getenv = PATH, LC_*
queue`,
		want: []map[string]string{
			{"Environment": `"HOME=/home/alice PATH=/opt/bin LANG=C.UTF-8 LC_ALL=C A=1 'B=two words'"`},
			{"Environment": `"PATH=/usr/bin:/bin LC_ALL=C A=1 'B=x y' C=\"q\""`},
		},
	}, {
		name: "resources and units",
		src: `executable = job.sh
request_cpus = 4
request_memory = 2GB
request_disk = 1.5G
queue
request_memory = 512
request_disk = 100
queue
request_memory = 1500 MB
request_disk = 10M
queue
request_memory = ifThenElse(MemoryUsage =!= undefined, MemoryUsage * 2, 256)
queue`,
		want: []map[string]string{
			{"RequestCpus": "4", "RequestMemory": "2048", "RequestDisk": "1572864", "DiskUsage": absent},
			{"RequestMemory": "512", "RequestDisk": "100"},
			{"RequestMemory": "1500", "RequestDisk": "10240"},
			{"RequestMemory": "ifThenElse(MemoryUsage =!= undefined, MemoryUsage * 2, 256)"},
		},
	}, {
		name: "requirements and rank",
		src: `executable = job.sh
requirements = HasJava && TARGET.Memory > 1024
rank = KFlops
queue
requirements = Arch == "aarch64" && OpSys == "LINUX" && Disk > 10
queue
requirements = TARGET.Cpus >= 2
queue
want_checkpoint = false
requirements = true
queue
want_checkpoint = true
requirements = TARGET.CheckpointPlatform =!= undefined
queue`,
		want: []map[string]string{
			{
				"Requirements": `(HasJava && TARGET.Memory > 1024) && (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Cpus >= RequestCpus)` + ckptReq,
				"Rank":         "KFlops",
			},
			{"Requirements": `(Arch == "aarch64" && OpSys == "LINUX" && Disk > 10) && (TARGET.Memory >= RequestMemory) && (TARGET.Cpus >= RequestCpus)` + ckptReq},
			{"Requirements": `(TARGET.Cpus >= 2) && (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory)` + ckptReq},
			// A job never checkpointed asks nothing of a platform, nor
			// one whose requirements name it.
			{"Requirements": `(true) && ` + baseReq},
			{"Requirements": `(TARGET.CheckpointPlatform isnt undefined) && ` + baseReq},
		},
	}, {
		name: "scheduler and local universes",
		src: `executable = job.sh
universe = scheduler
remove_kill_sig = SIGUSR1
hold_kill_sig = 2
queue
universe = local
queue`,
		want: []map[string]string{
			{"JobUniverse": "7", "RemoveKillSig": `"SIGUSR1"`, "HoldKillSig": `"2"`},
			{"JobUniverse": "12"},
		},
	}, {
		name: "policy expressions",
		src: `executable = job.sh
periodic_hold = (time() - EnteredCurrentStatus) > 3600
periodic_hold_reason = "ran too long"
periodic_hold_subcode = 42
allowed_job_duration = 3600
allowed_execute_duration = 1800
periodic_release = NumJobStarts < 3
periodic_remove = JobStatus == 5 && HoldReasonCode == 15
on_exit_hold = ExitCode != 0
on_exit_hold_reason = strcat("exited with ", ExitCode)
on_exit_hold_subcode = ExitCode
on_exit_remove = ExitBySignal == false
max_retries = 5
max_idle = 100
max_materialize = 250
concurrency_limits = XSW, Database:2
job_max_vacate_time = 120
max_job_retirement_time = 3600
kill_sig = term
leave_in_queue = false
success_exit_code = 3
queue
max_retries = 0
queue`,
		want: []map[string]string{{
			"PeriodicHold": "(time() - EnteredCurrentStatus) > 3600", "PeriodicHoldReason": `"ran too long"`,
			"PeriodicRelease": "NumJobStarts < 3", "PeriodicRemove": "JobStatus == 5 && HoldReasonCode == 15",
			"OnExitHold": "ExitCode != 0", "OnExitHoldReason": `strcat("exited with ", ExitCode)`, "OnExitHoldSubCode": "ExitCode",
			"PeriodicHoldSubCode": "42", "AllowedJobDuration": "3600", "AllowedExecuteDuration": "1800",
			"OnExitRemove":  "NumJobCompletions > JobMaxRetries || ExitCode is 3 || (ExitBySignal == false)",
			"JobMaxRetries": "5", "JobMaterializeMaxIdle": "100", "JobMaterializeLimit": "250", "ConcurrencyLimits": `"xsw,database:2"`, "JobMaxVacateTime": "120", "MaxJobRetirementTime": "3600",
			"KillSig": `"SIGTERM"`, "LeaveJobInQueue": "false", "JobSuccessExitCode": "3",
		}, {
			// success_exit_code without max_retries gets condor_submit's
			// DEFAULT_JOB_MAX_RETRIES; the first job had max_retries.
			"JobMaxRetries": "0", "JobSuccessExitCode": "3",
		}},
	}, {
		name: "hold, priority, notification, labels",
		src: `executable = job.sh
hold = True
priority = -3
notification = Never
notify_user = a@example.org
nice_user = no
batch_name = sweep
description = "the sweep"
queue`,
		want: []map[string]string{{
			"JobStatus": "5", "HoldReasonCode": "15", "HoldReason": `"submitted on hold at user's request"`,
			"JobPrio": "-3", "JobNotification": "0", "NotifyUser": `"a@example.org"`,
			"AcctGroup": absent, "NiceUser": "false", "JobBatchName": `"sweep"`, "JobDescription": `"\"the sweep\""`,
		}},
	}, {
		// What Harrier does anyway is accepted: no file transfer, output
		// in place when the job exits, the executable from the submit
		// machine, streamed output; an empty list unsets a command.
		name: "file transfer defaults",
		src: `executable = job.sh
should_transfer_files = no
when_to_transfer_output = on_exit
transfer_executable = true
transfer_input_files =
stream_output = true
stream_error = false
stream_input = false
job_lease_duration = 0
log_xml = false
request_gpus = 0
queue`,
		want: []map[string]string{{
			"ShouldTransferFiles": `"NO"`, "WhenToTransferOutput": `"ON_EXIT"`, "TransferInput": absent,
			"TransferExecutable": "true", "StreamOut": "true", "StreamErr": "false", "JobLeaseDuration": "0",
			"RequestGPUs": absent,
		}},
	}, {
		// GPUs: RequireGPUs gathers require_gpus and the gpus_* bounds;
		// Requirements asks them of the properties the slot's GPUs share.
		name: "GPUs",
		src: `executable = job.sh
request_gpus = 2
require_gpus = DeviceName != "V100" && regexp("A1", DeviceName)
gpus_minimum_capability = 8.0
gpus_minimum_memory = 20G
queue`,
		want: []map[string]string{{
			"RequestGPUs": "2",
			"RequireGPUs": `(DeviceName != "V100" && regexp("A1",DeviceName)) && Capability >= 8 && GlobalMemoryMb >= 20480`,
			"Requirements": `(TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && ` +
				`(TARGET.Memory >= RequestMemory) && (TARGET.Cpus >= RequestCpus) && (TARGET.GPUs >= RequestGPUs) && ` +
				`((TARGET.GPUs_DeviceName != "V100" && regexp("A1",TARGET.GPUs_DeviceName)) && TARGET.GPUs_Capability >= 8 && TARGET.GPUs_GlobalMemoryMb >= 20480)` + ckptReq,
		}},
	}, {
		name: "remote I/O and checkpointing",
		src: `executable = job.sh
file_remaps = "in.dat = /data/in.dat ; out.dat = /scratch/out.dat"
local_files = scratch/*
compress_files = *.gz
buffer_files = "big.dat = (1048576,4096)"
buffer_size = 524288
buffer_block_size = 32768
fetch_files = config
append_files = log.txt
want_checkpoint = true
checkpoint_interval = 1800
queue`,
		want: []map[string]string{{
			"FileRemaps": `"in.dat = /data/in.dat ; out.dat = /scratch/out.dat"`, "LocalFiles": `"scratch/*"`,
			"CompressFiles": `"*.gz"`, "BufferFiles": `"big.dat = (1048576,4096)"`, "BufferSize": "524288",
			"BufferBlockSize": "32768", "FetchFiles": `"config"`, "AppendFiles": `"log.txt"`,
			"WantCheckpoint": "true", "CheckpointInterval": "1800",
		}},
	}, {
		name: "universes",
		src:  "executable = job.sh\nuniverse = standard\nqueue\nuniverse = Vanilla\nqueue",
		want: []map[string]string{{"JobUniverse": "1"}, {"JobUniverse": "5"}},
	}, {
		name: "custom attributes",
		src: `executable = job.sh
+Project = "climate"
MY.Weight = $(Process) * 2.5
+Requirements_Note = strcat("x", "y")
queue 2`,
		want: []map[string]string{
			{"Project": `"climate"`, "Weight": "0 * 2.5", "Requirements_Note": `strcat("x", "y")`},
			{"Weight": "1 * 2.5"},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			env := testEnv(t, tc.files)
			ads := jobsOf(t, tc.src, env)
			if len(ads) != len(tc.want) {
				t.Fatalf("got %d jobs, want %d", len(ads), len(tc.want))
			}
			for i, ad := range ads {
				checkAttrs(t, ad, env.Dir, tc.want[i])
			}
		})
	}
}

// TestQueueForms checks which jobs each form of the queue statement makes,
// through the macros they set.
func TestQueueForms(t *testing.T) {
	files := map[string]string{
		"a.dat": "", "b.dat": "", "c.txt": "", "sub/d.dat": "",
		"list.txt": "# name size\nalpha 10\n\nbeta, 20\ngamma 30 extra words\n",
	}
	for _, tc := range []struct {
		name, queue string
		want        []string // Arguments of each job
	}{
		{"bare", "queue", []string{"0 0 0 0 _"}},
		{"count", "queue 3", []string{"0 0 0 0 _", "1 1 1 0 _", "2 2 2 0 _"}},
		{"zero", "queue 0", nil},
		{"count from a macro", "queue $(N)", []string{"0 0 0 0 _", "1 1 1 0 _"}},
		{"count expression", "queue 1+1", []string{"0 0 0 0 _", "1 1 1 0 _"}},
		{"in", "queue in (x, y z)", []string{"0 0 0 0 x", "1 1 0 1 y", "2 2 0 2 z"}},
		{"in with a variable", "queue Item in x y", []string{"0 0 0 0 x", "1 1 0 1 y"}},
		{"count and in", "queue 2 in (x y)", []string{"0 0 0 0 x", "1 1 1 0 x", "2 2 0 1 y", "3 3 1 1 y"}},
		{"multi-line in", "queue in (\n  x\n  y, z\n)", []string{"0 0 0 0 x", "1 1 0 1 y", "2 2 0 2 z"}},
		{"in with slice", "queue in [1:] (x y z)", []string{"0 0 0 0 y", "1 1 0 1 z"}},
		{"in with step", "queue in [::2] (a b c d e)", []string{"0 0 0 0 a", "1 1 0 1 c", "2 2 0 2 e"}},
		{"in reversed", "queue in [::-1] (a b c)", []string{"0 0 0 0 c", "1 1 0 1 b", "2 2 0 2 a"}},
		{"matching files", "queue matching files *.dat", []string{"0 0 0 0 a.dat", "1 1 0 1 b.dat"}},
		{"matching", "queue Item matching (*.txt sub/*.dat)", []string{"0 0 0 0 c.txt", "1 1 0 1 data.txt", "2 2 0 2 list.txt", "3 3 0 3 sub/d.dat"}},
		{"matching dirs", "queue matching dirs *", []string{"0 0 0 0 sub"}},
		{"matching nothing", "queue matching *.none", nil},
		{"from file", "queue from list.txt", []string{"0 0 0 0 alpha 10", "1 1 0 1 beta, 20", "2 2 0 2 gamma 30 extra words"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := testEnv(t, files)
			src := "executable = job.sh\nN = 2\narguments = $(Process) $(ProcId) $(Step) $(Row) $(Item:_)\n" + tc.queue + "\n"
			ads := jobsOf(t, src, env)
			var got []string
			for _, ad := range ads {
				s, _ := ad.EvalString("Arguments")
				got = append(got, s)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("jobs:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestQueueFromSeveralVariables(t *testing.T) {
	env := testEnv(t, map[string]string{"rows": "in1.dat  -v fast\nin2.dat,-q\n"})
	for _, q := range []string{
		"queue file, args from rows",
		"queue file args from (\n in1.dat  -v fast\n in2.dat,-q\n)",
	} {
		ads := jobsOf(t, "executable = job.sh\ninput = $(file)\narguments = $(args)\noutput = $Fn(file).out\n"+q, env)
		if len(ads) != 2 {
			t.Fatalf("%s: got %d jobs, want 2", q, len(ads))
		}
		checkAttrs(t, ads[0], env.Dir, map[string]string{"In": `"$DIR/in1.dat"`, "Arguments": `"-v fast"`, "Out": `"$DIR/in1.out"`})
		checkAttrs(t, ads[1], env.Dir, map[string]string{"In": `"$DIR/in2.dat"`, "Arguments": `"-q"`, "Out": `"$DIR/in2.out"`})
	}
}

// TestSeveralQueueStatements checks that each queue statement sees the
// commands in effect at that point and that ProcIds continue.
func TestSeveralQueueStatements(t *testing.T) {
	env := testEnv(t, nil)
	ads := jobsOf(t, `executable = job.sh
arguments = first
queue 2
arguments = second
request_memory = 1G
queue in (a)
+Tag = "late"
queue`, env)
	want := []map[string]string{
		{"ProcId": "0", "Arguments": `"first"`, "RequestMemory": "128", "Tag": absent},
		{"ProcId": "1", "Arguments": `"first"`},
		{"ProcId": "2", "Arguments": `"second"`, "RequestMemory": "1024", "Tag": absent},
		{"ProcId": "3", "Arguments": `"second"`, "Tag": `"late"`},
	}
	if len(ads) != len(want) {
		t.Fatalf("got %d jobs, want %d", len(ads), len(want))
	}
	for i := range want {
		checkAttrs(t, ads[i], env.Dir, want[i])
	}
}

// TestQueueVariablesSetCommands checks HTCondor's rule that a queue
// variable named like a command sets that command.
func TestQueueVariablesSetCommands(t *testing.T) {
	env := testEnv(t, nil)
	ads := jobsOf(t, "executable = job.sh\narguments = default\nqueue input, arguments from (\n a.in -x\n b.in\n)", env)
	if len(ads) != 2 {
		t.Fatalf("got %d jobs, want 2", len(ads))
	}
	checkAttrs(t, ads[0], env.Dir, map[string]string{"In": `"$DIR/a.in"`, "Arguments": `"-x"`})
	checkAttrs(t, ads[1], env.Dir, map[string]string{"In": `"$DIR/b.in"`, "Arguments": `""`})
}

// TestPerJobCommandsOverrideTheCluster checks jobs whose commands differ
// from the rest of their cluster's through queue variables.
func TestPerJobCommandsOverrideTheCluster(t *testing.T) {
	env := testEnv(t, nil)
	ads := jobsOf(t, `executable = job.sh
hold = $(h)
request_disk = $(d)
log = $(l)
queue h, d, l from (
  true 10 a.log
  false
)`, env)
	if len(ads) != 2 {
		t.Fatalf("got %d jobs, want 2", len(ads))
	}
	checkAttrs(t, ads[0], env.Dir, map[string]string{
		"JobStatus": "5", "HoldReasonCode": "15", "RequestDisk": "10", "DiskUsage": absent, "UserLog": `"$DIR/a.log"`,
	})
	checkAttrs(t, ads[1], env.Dir, map[string]string{
		"JobStatus": "1", "HoldReason": absent, "HoldReasonCode": absent, "RequestDisk": "1", "DiskUsage": "1", "UserLog": absent,
	})

	ads = jobsOf(t, "executable = job.sh\nhold = true\nqueue\nhold = $(Item)\nqueue in (false)", env)
	checkAttrs(t, ads[0], env.Dir, map[string]string{"JobStatus": "5", "HoldReasonCode": "15"})
	checkAttrs(t, ads[1], env.Dir, map[string]string{"JobStatus": "1", "HoldReasonCode": absent})
}
