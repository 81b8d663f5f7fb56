package submit

import (
	"fmt"
	"strings"
)

// Harrier refuses what it would otherwise accept and ignore: a documented
// condor_submit command that no Harrier daemon acts on is an error that
// names it and says what to do instead. A command whose value is what
// Harrier does anyway (stream_input = false) is accepted. This file
// holds the commands refused whatever their value; commands.go refuses
// the values it cannot honour of the commands it implements.

// Reasons shared by several commands.
const (
	noTransfer = "Harrier's file transfer (should_transfer_files = YES) does not do this yet: " +
		"inputs are files, directories and file://, http:// or https:// URLs (transfer_input_files), outputs come back " +
		"into the initial directory (transfer_output_files, transfer_output_remaps)"
	noGrid      = "the grid universe is not available: Harrier runs jobs on its own pool only"
	noVM        = "the vm universe is not available"
	noContainer = "Harrier runs container and docker universe jobs in the image alone: on a loopback-only network, with its own entrypoint ignored, pulled once per machine"
	noParallel  = "the parallel universe is not available"
	noJava      = "the java universe is not available; run java as the executable of a vanilla job"
	noCron      = "deferred and cron start times are not supported: jobs start when they are matched (submit with hold = true and release the job when it should run)"
	noCreds     = "credentials are not handed to jobs"
	noDAGMan    = "DAGMan is not available"
	noGPUs      = "the startd does not measure the GPUs' CUDA runtime version yet; use require_gpus"
)

// A refusal is why a command is refused, and the values that are what
// Harrier does anyway and so are accepted.
type refusal struct {
	reason string
	accept func(v string) bool
}

func always(reason string) refusal { return refusal{reason: reason} }

// unlessFalse accepts the command when its value is false, its default.
func unlessFalse(reason string) refusal {
	return refusal{reason: reason, accept: func(v string) bool { b, err := parseBool("", v); return err == nil && !b }}
}

// refusals are the documented condor_submit commands Harrier refuses,
// other than those handled in commands.go.
var refusals = map[string]refusal{
	// file transfer
	"transfer_input_manifest_sha256":    always(noTransfer),
	"encrypt_input_files":               always(noTransfer + "; the shadow's connections are always encrypted"),
	"encrypt_output_files":              always(noTransfer + "; the shadow's connections are always encrypted"),
	"dont_encrypt_input_files":          always(noTransfer + "; the shadow's connections are always encrypted"),
	"dont_encrypt_output_files":         always(noTransfer + "; the shadow's connections are always encrypted"),
	"erase_output_and_error_on_restart": always("Harrier truncates output and error when a job starts afresh and appends to them when it resumes from a checkpoint"),
	"aws_access_key_id_file":            always(noTransfer),
	"aws_secret_access_key_file":        always(noTransfer),
	"aws_region":                        always(noTransfer),
	"s3_access_key_id_file":             always(noTransfer),
	"s3_secret_access_key_file":         always(noTransfer),
	"gs_access_key_id_file":             always(noTransfer),
	"gs_secret_access_key_file":         always(noTransfer),
	"encrypt_execute_directory":         unlessFalse("execute directories are not encrypted"),
	"manifest":                          unlessFalse("the starter writes no manifest"),
	"manifest_dir":                      always("the starter writes no manifest"),
	"want_remote_io": {reason: "jobs always reach their files through the shadow (remote I/O), as with want_remote_io = true",
		accept: func(v string) bool { b, err := parseBool("", v); return err == nil && b }},

	// matchmaking
	"cuda_version":         always(noGPUs),
	"gpus_minimum_runtime": always(noGPUs),
	"image_size":           always("the job's image size is measured, not requested; use request_memory"),

	// policy
	"keep_claim_idle":      always("the agent releases a claim when it has no job for it"),
	"next_job_start_delay": always("jobs start as soon as they are matched"),

	// standard universe
	"allow_startup_script": always("jobs are not relinked; the executable is what runs"),

	// grid
	"grid_resource": always(noGrid), "globus_rematch": always(noGrid), "globus_resubmit": always(noGrid),
	"globus_rsl": always(noGrid), "nordugrid_rsl": always(noGrid), "cream_attributes": always(noGrid),
	"arc_application": always(noGrid), "arc_resources": always(noGrid), "arc_rte": always(noGrid),
	"azure_admin_key": always(noGrid), "azure_admin_username": always(noGrid), "azure_auth_file": always(noGrid),
	"azure_image": always(noGrid), "azure_location": always(noGrid), "azure_size": always(noGrid),
	"batch_extra_submit_args": always(noGrid), "batch_project": always(noGrid), "batch_queue": always(noGrid),
	"batch_runtime": always(noGrid), "boinc_authenticator_file": always(noGrid), "cloud_label_names": always(noGrid),
	"delegate_job_gsi_credentials_lifetime": always(noGrid),
	"ec2_access_key_id":                     always(noGrid), "ec2_ami_id": always(noGrid), "ec2_availability_zone": always(noGrid),
	"ec2_block_device_mapping": always(noGrid), "ec2_ebs_volumes": always(noGrid), "ec2_elastic_ip": always(noGrid),
	"ec2_iam_profile_arn": always(noGrid), "ec2_iam_profile_name": always(noGrid), "ec2_instance_type": always(noGrid),
	"ec2_keypair": always(noGrid), "ec2_keypair_file": always(noGrid), "ec2_parameter_names": always(noGrid),
	"ec2_secret_access_key": always(noGrid), "ec2_security_groups": always(noGrid), "ec2_security_ids": always(noGrid),
	"ec2_spot_price": always(noGrid), "ec2_tag_names": always(noGrid), "ec2_user_data": always(noGrid),
	"ec2_user_data_file": always(noGrid), "ec2_vpc_ip": always(noGrid), "ec2_vpc_subnet": always(noGrid),
	"wantnametag": always(noGrid),
	"gce_account": always(noGrid), "gce_auth_file": always(noGrid), "gce_image": always(noGrid),
	"gce_json_file": always(noGrid), "gce_machine_type": always(noGrid), "gce_metadata": always(noGrid),
	"gce_metadata_file": always(noGrid), "gce_preemptible": always(noGrid),
	"keystore_alias": always(noGrid), "keystore_file": always(noGrid), "keystore_passphrase_file": always(noGrid),
	"myproxycredentialname": always(noGrid), "myproxyhost": always(noGrid), "myproxynewproxylifetime": always(noGrid),
	"myproxypassword": always(noGrid), "myproxyrefreshthreshold": always(noGrid), "myproxyserverdn": always(noGrid),
	"transfer_error": always(noGrid), "transfer_input": always(noGrid), "transfer_output": always(noGrid),
	"x509userproxy": always(noCreds), "use_x509userproxy": unlessFalse(noCreds),
	"use_scitokens": unlessFalse(noCreds), "scitokens_file": always(noCreds), "use_oauth_services": always(noCreds),

	// parallel, java and scheduler universes
	"jar_files":     always(noJava),
	"java_vm_args":  always(noJava),
	"machine_count": always(noParallel),
	"rendezvousdir": always(noParallel),

	// vm universe
	"vm_disk": always(noVM), "vm_checkpoint": always(noVM), "vm_macaddr": always(noVM),
	"vm_memory": always(noVM), "vm_networking": always(noVM), "vm_networking_type": always(noVM),
	"vm_no_output_vm": always(noVM), "vm_type": always(noVM), "vmware_dir": always(noVM),
	"vmware_should_transfer_files": always(noVM), "vmware_snapshot_disk": always(noVM),
	"xen_initrd": always(noVM), "xen_kernel": always(noVM), "xen_kernel_params": always(noVM), "xen_root": always(noVM),

	// docker and container universes
	"docker_network_type": always(noContainer),
	"docker_pull_policy":  always(noContainer), "docker_override_entrypoint": always(noContainer),
	"container_target_dir":    always(noContainer),
	"container_service_names": always(noContainer), "transfer_container": always(noContainer),

	// advanced
	"concurrency_limits_expr": always("concurrency limits are named by concurrency_limits; an expression for them is not supported"),
	"copy_to_spool":           unlessFalse("executables are served by the shadow, never spooled"),
	"cron_day_of_month":       always(noCron),
	"cron_day_of_week":        always(noCron),
	"cron_hour":               always(noCron),
	"cron_minute":             always(noCron),
	"cron_month":              always(noCron),
	"cron_prep_time":          always(noCron),
	"cron_window":             always(noCron),
	"deferral_prep_time":      always(noCron),
	"deferral_time":           always(noCron),
	"deferral_window":         always(noCron),
	"dagman_log":              always(noDAGMan),
	"email_attributes":        always("Harrier sends no e-mail"),
	"match_list_length":       always("the agent does not keep the list of machines a job matched"),
	"kill_sig_timeout":        always("use job_max_vacate_time, as HTCondor has asked since 7.7.3"),
	"load_profile":            unlessFalse("jobs do not run a login profile"),
	"run_as_owner":            unlessFalse("jobs run as a slot user of the execute machine, never as their owner"),
	"noop_job":                unlessFalse("the agent has no no-op jobs"),
	"noop_job_exit_code":      always("the agent has no no-op jobs"),
	"noop_job_exit_signal":    always("the agent has no no-op jobs"),
	"remote_initialdir":       always("a job runs in a scratch directory of the execute machine and sees its initialdir through the shadow"),
}

// refused reports whether name (lower case) is a documented command that
// Harrier refuses: one in refusals, or of a family condor_submit reads by
// pattern. err says why value is refused; it is nil for the values the
// command accepts and for an empty value, which unsets a command.
func refused(name, value string) (known bool, err error) {
	r, ok := refusals[name]
	switch {
	case ok:
	case strings.HasPrefix(name, "request_"):
		r = always("custom machine resources (request_<name>) are not supported: " +
			"machines advertise only Cpus, Memory and Disk")
	case strings.HasPrefix(name, "ec2_tag_"), strings.HasPrefix(name, "ec2_parameter_"), strings.HasPrefix(name, "cloud_label_"):
		r = always(noGrid)
	case strings.HasSuffix(name, "_container_port"):
		r = always(noContainer)
	case strings.Contains(name, "_oauth_permissions"), strings.Contains(name, "_oauth_resource"):
		r = always(noCreds)
	default:
		return false, nil
	}
	if value == "" || r.accept != nil && r.accept(value) {
		return true, nil
	}
	return true, notSupported(name, r.reason)
}

func notSupported(name, reason string) error {
	return fmt.Errorf("command %q is not supported: %s", name, reason)
}

// valueNotSupported refuses one value of a command Harrier implements.
func valueNotSupported(name, value, reason string) error {
	return fmt.Errorf("%s = %s is not supported: %s", name, value, reason)
}
