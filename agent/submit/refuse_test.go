package submit

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestRefusedCommands checks that every documented command Harrier does
// not act on is refused with its name and a reason, whatever its case,
// even when used as a macro, and that an empty value (which unsets it) is
// accepted.
func TestRefusedCommands(t *testing.T) {
	env := testEnv(t, nil)
	names := make([]string, 0, len(refusals))
	for name := range refusals {
		names = append(names, name)
	}
	slices.Sort(names)
	names = append(names, "request_licenses", "ec2_tag_owner", "ec2_parameter_x", "cloud_label_team",
		"web_container_port", "scitokens_oauth_permissions", "box_oauth_resource_readonly")
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			src := "executable = job.sh\n" + strings.ToUpper(name) + " = something\narguments = $(" + name + ")\nqueue\n"
			_, err := Parse([]byte(src), "job.sub", env)
			want := `job.sub:2: command "` + name + `" is not supported: `
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("error %v, want prefix %q", err, want)
			}
			if reason := strings.TrimPrefix(err.Error(), want); len(reason) < 20 {
				t.Errorf("reason %q says too little", reason)
			}
			jobsOf(t, "executable = job.sh\n"+name+" =\nqueue\n", env)
		})
	}
}

// TestRefusedValues checks the commands Harrier implements for the values
// it cannot honour, and that it accepts the value that is what it does
// anyway.
func TestRefusedValues(t *testing.T) {
	env := testEnv(t, nil)
	for _, tc := range []struct {
		command  string
		refused  []string
		accepted []string
		why      string
	}{
		{"universe", []string{"grid", "java", "parallel", "vm"},
			[]string{"vanilla", "standard"}, "not available"},
		{"cuda_version", []string{"12.0"}, nil, "CUDA runtime version"},
		{"notification", []string{"Always", "complete", "ERROR"}, []string{"never", "Never"}, "Harrier sends no e-mail"},
		{"should_transfer_files", []string{"MAYBE"}, []string{"YES", "if_needed", "NO", "no"}, "want YES, NO, IF_NEEDED"},
		{"when_to_transfer_output", []string{"ON_VACATE"}, []string{"ON_EXIT", "ON_EXIT_OR_EVICT", "on_success"}, "want ON_EXIT"},
		{"transfer_executable", nil, []string{"true", "yes", "false", "no"}, ""},
		{"transfer_input_files", []string{"../x", "a, sub/../../b"}, []string{"a, b/, /abs/c, with space.dat, http://h/x, file:///x"}, `a name with ".."`},
		{"transfer_output_files", []string{"/tmp/x", "../x"}, []string{"out, res/, a b"}, "within the job's scratch directory"},
		{"transfer_output_remaps", []string{`"out = ../x"`, "out = /tmp/x", "out = a; x = http://h/x"}, []string{`"out = res/out.txt; err.log = logs/err"`}, "within the job's initial directory"},
		{"transfer_plugins", []string{"foo", "a/b=x.sh", "s=http://h/p"}, []string{"demo = plug.sh; x,y = other.sh"}, "transfer_plugins"},
		{"output_destination", []string{"/not/a/url"}, nil, "not a URL"},
		{"stream_input", []string{"true"}, []string{"false"}, "copies the job's input"},
		{"leave_in_queue", []string{"JobStatus ==", "(("}, []string{"false", "true", "JobStatus == 4 && (time() - CompletionDate) < 86400"}, "leave_in_queue"},
		{"nice_user", []string{"maybe"}, []string{"false", "true"}, "nice_user"},
		{"log_xml", []string{"true"}, []string{"false"}, "text format"},
		{"job_lease_duration", []string{"-1", "forever"}, []string{"0", "2400"}, "number of seconds"},
		{"encrypt_execute_directory", []string{"true"}, []string{"false"}, "not encrypted"},
		{"run_as_owner", []string{"true"}, []string{"false"}, "slot user"},
		{"transfer_checkpoint_files", []string{"/tmp/state", "../state", "a, ../b"}, []string{"state", "state/, progress.txt"}, "initial directory"},
		{"copy_to_spool", []string{"true"}, []string{"false"}, "never spooled"},
		{"preserve_relative_paths", nil, []string{"true", "false"}, ""},
		{"want_remote_io", []string{"false"}, []string{"true"}, "through the shadow"},
		{"use_x509userproxy", []string{"true"}, []string{"false"}, "credentials"},
		{"noop_job", []string{"true"}, []string{"false"}, "no-op jobs"},
		{"manifest", []string{"true"}, []string{"false"}, "no manifest"},
		{"concurrency_limits", []string{"sw:0", "sw:-1", "a-b", "sw:x"}, []string{"XSW", "xsw, DATABASE, FILESERVER:3", "large.swlicense:0.5"}, "concurrency limit"},
		{"coresize", []string{"-2", "10MB", "unlimited"}, []string{"0", "-1", "1048576"}, "number of bytes"},
		{"accounting_group", []string{"group physics", "group_physics.", ".x", "a/b"}, []string{"group_physics", "group_physics.theory", "Group-2"}, "letters, digits"},
		{"accounting_group_user", []string{"a b", "x..y"}, []string{"alice"}, "letters, digits"},
		{"stack_size", []string{"-5", "8M"}, []string{"8388608", "-1"}, "number of bytes"},
		{"job_machine_attrs", []string{"1x", "a-b", "Machine, GLIDEIN.Site"}, []string{"Machine", "Machine, GLIDEIN_Site CpuModel"}, "attribute name"},
		{"job_machine_attrs_history_length", []string{"-1", "101", "x"}, []string{"0", "5"}, "0 to 100"},
	} {
		for _, v := range tc.refused {
			t.Run(tc.command+"="+v, func(t *testing.T) {
				_, err := Parse([]byte("executable = job.sh\n"+tc.command+" = "+v+"\nqueue\n"), "job.sub", env)
				if err == nil || !strings.HasPrefix(err.Error(), "job.sub:2: ") || !strings.Contains(err.Error(), tc.why) ||
					!strings.Contains(err.Error(), tc.command) {
					t.Errorf("error %v, want job.sub:2 naming %s and saying %q", err, tc.command, tc.why)
				}
			})
		}
		for _, v := range tc.accepted {
			t.Run(tc.command+"="+v, func(t *testing.T) {
				jobsOf(t, "executable = job.sh\n"+tc.command+" = "+v+"\nqueue\n", env)
			})
		}
	}
}

// A job is charged to its owner within its accounting group: another
// user's name is refused where the job is queued.
func TestAccountingGroupUserIsTheOwner(t *testing.T) {
	env := testEnv(t, nil)
	d, err := Parse([]byte("executable = job.sh\naccounting_group = group_physics\naccounting_group_user = bob\nqueue\n"), "job.sub", env)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Jobs(42, env); err == nil || !strings.Contains(err.Error(), `job.sub:4: accounting_group_user "bob": a job is charged to its owner, alice`) {
		t.Errorf("Jobs: %v, want a refusal of bob", err)
	}
}

// TestAcceptedCommandsTakeEffect checks the commands whose effect comes
// from submit itself.
func TestAcceptedCommandsTakeEffect(t *testing.T) {
	env := testEnv(t, nil)
	env.Environ = []string{"PATH=/bin", "Path2=x", "HOME=/home/alice", "CUDA_HOME=/opt/cuda", "LC_ALL=C", "INCLUDE=/inc"}
	for _, tc := range []struct {
		name, src string
		want      map[string]string
	}{
		{"success_exit_code implies retries", "success_exit_code = 2", map[string]string{"JobSuccessExitCode": "2", "JobMaxRetries": "2",
			"OnExitRemove": "NumJobCompletions > JobMaxRetries || ExitCode is 2"}},
		{"max_retries wins", "max_retries = 5\nsuccess_exit_code = 2", map[string]string{"JobMaxRetries": "5"}},
		{"retry_until an exit code", "retry_until = 3", map[string]string{"JobMaxRetries": "2",
			"OnExitRemove": "NumJobCompletions > JobMaxRetries || ExitCode is 0 || ExitCode is 3"}},
		{"retry_until an expression, or'ed with on_exit_remove", "max_retries = 4\nretry_until = ExitCode == 7 || ExitCode == 8\non_exit_remove = ExitBySignal",
			map[string]string{"JobMaxRetries": "4",
				"OnExitRemove": "NumJobCompletions > JobMaxRetries || ExitCode is 0 || (ExitCode == 7 || ExitCode == 8) || (ExitBySignal)"}},
		{"self-checkpointing", "checkpoint_exit_code = 85\ntransfer_checkpoint_files = progress.txt, state/",
			map[string]string{"SuccessCheckpointExitCode": "85", "TransferCheckpoint": `"progress.txt,state/"`}},
		{"file transfer", "should_transfer_files = yes\nwhen_to_transfer_output = on_exit_or_evict\n" +
			"transfer_input_files = in.dat, tree/, my dir, http://h/x\ntransfer_output_files = out, res/\n" +
			"transfer_output_remaps = \"out = results/out.txt\"\nmax_transfer_input_mb = 10\nmax_transfer_output_mb = 20\n" +
			"transfer_executable = false\npreserve_relative_paths = true",
			map[string]string{"ShouldTransferFiles": `"YES"`, "WhenToTransferOutput": `"ON_EXIT_OR_EVICT"`,
				"TransferInput": `"in.dat,tree/,my dir,http://h/x"`, "TransferOutput": `"out,res/"`,
				"TransferOutputRemaps": `"out = results/out.txt"`, "MaxTransferInputMB": "10", "MaxTransferOutputMB": "20",
				"TransferExecutable": "false", "PreserveRelativePaths": "true"}},
		{"transfer plugins and output_destination", "should_transfer_files = yes\n" +
			"transfer_input_files = in.dat, demo://h/a, mine://h/b, http://h/c\ntransfer_plugins = mine, other = my_plugin.sh\n" +
			"output_destination = store://h/results",
			map[string]string{"TransferInput": `"in.dat,demo://h/a,mine://h/b,http://h/c,my_plugin.sh"`,
				"TransferPlugins": `"mine, other = my_plugin.sh"`, "OutputDestination": `"store://h/results"`,
				"Requirements": baseReq +
					` && stringListIMember("demo", TARGET.HasFileTransferPluginMethods) && stringListIMember("store", TARGET.HasFileTransferPluginMethods)` + ckptReq}},
		{"want_graceful_removal", "want_graceful_removal = false", map[string]string{"WantGracefulRemoval": "false"}},
		{"on_exit_remove alone", "on_exit_remove = ExitCode == 0", map[string]string{"OnExitRemove": "ExitCode == 0", "JobMaxRetries": absent}},
		{"getenv match list", "getenv = path*, *cuda*",
			map[string]string{"Environment": `"PATH=/bin Path2=x CUDA_HOME=/opt/cuda"`}},
		{"getenv rejections", "getenv = !PATH; !include",
			map[string]string{"Environment": `"Path2=x HOME=/home/alice CUDA_HOME=/opt/cuda LC_ALL=C"`}},
		{"getenv mixed", "getenv = !path, P*, L*", map[string]string{"Environment": `"Path2=x LC_ALL=C"`}},
		{"getenv true", "getenv = true", map[string]string{"Environment": `"PATH=/bin Path2=x HOME=/home/alice CUDA_HOME=/opt/cuda LC_ALL=C INCLUDE=/inc"`}},
		{"request_cpus in requirements", "request_cpus = 3",
			map[string]string{"RequestCpus": "3", "Requirements": defaultReq}},
		{"jobbatchname", "JobBatchName = nightly", map[string]string{"JobBatchName": `"nightly"`}},
		{"coresize and stack_size", "coresize = 0\nstack_size = 16777216", map[string]string{"CoreSize": "0", "StackSize": "16777216"}},
		{"submit_event_notes", "submit_event_notes = nightly run, input v3", map[string]string{"SubmitEventNotes": `"nightly run, input v3"`}},
		{"job_ad_information_attrs", "job_ad_information_attrs = JobStatus, RemoteHost", map[string]string{"JobAdInformationAttrs": `"JobStatus,RemoteHost"`}},
		{"job_machine_attrs", "job_machine_attrs = Machine, GLIDEIN_Site\njob_machine_attrs_history_length = 3",
			map[string]string{"JobMachineAttrs": `"Machine,GLIDEIN_Site"`, "JobMachineAttrsHistoryLength": "3"}},
		{"accounting group", "accounting_group = group_physics.theory\naccounting_group_user = alice",
			map[string]string{"AcctGroup": `"group_physics.theory"`, "AcctGroupUser": `"alice"`, "AccountingGroup": absent}},
		// Match-time references are left for the agent, as written.
		{"match-time references", "m = $$(Memory)\narguments = --memory $$([TARGET.Memory * 0.9]) $(m)\n+Where = \"$$(Machine)\"",
			map[string]string{"Arguments": `"--memory $$([TARGET.Memory * 0.9]) $$(Memory)"`, "Where": `"$$(Machine)"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ads := jobsOf(t, "executable = job.sh\n"+tc.src+"\nqueue\n", env)
			checkAttrs(t, ads[0], env.Dir, tc.want)
		})
	}
}

// TestCompatibilityTable checks that docs/htcondor-compatibility.md lists
// every command Harrier implements or refuses, so that the table and the
// code say the same.
func TestCompatibilityTable(t *testing.T) {
	doc, err := os.ReadFile("../../docs/htcondor-compatibility.md")
	if err != nil {
		t.Fatalf("the compatibility table: %v", err)
	}
	text := strings.ToLower(string(doc))
	var names []string
	for name := range refusals {
		names = append(names, name)
	}
	names = append(names, commandOrder...)
	for _, name := range names {
		if !strings.Contains(text, "`"+name+"`") {
			t.Errorf("docs/htcondor-compatibility.md does not list `%s`", name)
		}
	}
}
