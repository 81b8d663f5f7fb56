package submit

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"harrier.dev/harrier/jobargs"
)

// A command applies the expanded, non-empty value of one submit command to
// the job being built. name is the command's name, for messages.
type command func(j *job, name, v string) error

type commandEntry struct {
	name  string
	apply command
}

// commandTable lists the commands in the order they are applied, which is
// also the order their attributes first appear in a job ad.
var commandTable = []commandEntry{
	{"universe", setUniverse},
	{"executable", func(j *job, _, v string) error { j.exe = v; return nil }},
	{"arguments", setArguments},
	{"environment", setEnvironment},
	{"getenv", setGetenv},
	{"initialdir", setIwd},
	{"initial_dir", setIwd},
	{"input", func(j *job, _, v string) error { j.input = v; return nil }},
	{"output", func(j *job, _, v string) error { j.output = v; return nil }},
	{"error", func(j *job, _, v string) error { j.errPath = v; return nil }},
	{"log", func(j *job, _, v string) error { j.log = v; return nil }},
	{"requirements", setRequirements},
	{"rank", exprAttr("Rank")},
	{"request_cpus", exprAttr("RequestCpus")},
	{"request_memory", sizeAttr("RequestMemory", 1<<20, 1<<20)},
	{"request_disk", sizeAttr("RequestDisk", 1<<10, 1<<10)},
	{"request_gpus", exprAttr("RequestGPUs")},
	{"priority", intAttr("JobPrio")},
	{"hold", func(j *job, name, v string) (err error) { j.hold, err = parseBool(name, v); return err }},
	{"notification", setNotification},
	{"notify_user", stringAttr("NotifyUser")},
	{"should_transfer_files", enumAttr("ShouldTransferFiles", "YES", "NO", "IF_NEEDED")},
	{"when_to_transfer_output", enumAttr("WhenToTransferOutput", "ON_EXIT", "ON_EXIT_OR_EVICT", "ON_SUCCESS")},
	{"transfer_executable", setTransferExecutable},
	{"transfer_input_files", listAttr("TransferInput")},
	{"transfer_output_files", listAttr("TransferOutput")},
	{"transfer_output_remaps", quotedAttr("TransferOutputRemaps")},
	{"stream_output", boolAttr("StreamOut")},
	{"stream_error", boolAttr("StreamErr")},
	{"periodic_hold", exprAttr("PeriodicHold")},
	{"periodic_hold_reason", exprAttr("PeriodicHoldReason")},
	{"periodic_hold_subcode", exprAttr("PeriodicHoldSubCode")},
	{"periodic_release", exprAttr("PeriodicRelease")},
	{"periodic_remove", exprAttr("PeriodicRemove")},
	{"on_exit_hold", exprAttr("OnExitHold")},
	{"on_exit_hold_reason", exprAttr("OnExitHoldReason")},
	{"on_exit_hold_subcode", exprAttr("OnExitHoldSubCode")},
	{"on_exit_remove", exprAttr("OnExitRemove")},
	{"leave_in_queue", exprAttr("LeaveJobInQueue")},
	{"max_retries", intAttr("MaxRetries")},
	{"max_idle", intAttr("JobMaterializeMaxIdle")},
	{"max_materialize", intAttr("JobMaterializeLimit")},
	{"job_max_vacate_time", exprAttr("JobMaxVacateTime")},
	{"kill_sig", signalAttr("KillSig")},
	{"remove_kill_sig", signalAttr("RemoveKillSig")},
	{"hold_kill_sig", signalAttr("HoldKillSig")},
	{"deferral_time", exprAttr("DeferralTime")},
	{"allowed_job_duration", intAttr("AllowedJobDuration")},
	{"allowed_execute_duration", intAttr("AllowedExecuteDuration")},
	{"job_lease_duration", intAttr("JobLeaseDuration")},
	{"want_checkpoint", boolAttr("WantCheckpoint")},
	{"checkpoint_interval", intAttr("CheckpointInterval")},
	{"file_remaps", quotedAttr("FileRemaps")},
	{"local_files", listAttr("LocalFiles")},
	{"compress_files", listAttr("CompressFiles")},
	{"buffer_files", quotedAttr("BufferFiles")},
	{"buffer_size", intAttr("BufferSize")},
	{"buffer_block_size", intAttr("BufferBlockSize")},
	{"fetch_files", listAttr("FetchFiles")},
	{"append_files", listAttr("AppendFiles")},
	{"coresize", intAttr("CoreSize")},
	{"accounting_group", func(j *job, _, v string) error { j.acctGroup = v; return nil }},
	{"accounting_group_user", func(j *job, _, v string) error { j.acctUser = v; return nil }},
	{"nice_user", boolAttr("NiceUser")},
	{"concurrency_limits", stringAttr("ConcurrencyLimits")},
	{"batch_name", stringAttr("JobBatchName")},
	{"description", stringAttr("JobDescription")},
	{"skip_filechecks", func(j *job, name, v string) (err error) { j.skipChecks, err = parseBool(name, v); return err }},
}

// commands indexes commandTable by name; commandOrder lists the names.
var commands, commandOrder = func() (map[string]command, []string) {
	m := make(map[string]command, len(commandTable))
	order := make([]string, len(commandTable))
	for i, c := range commandTable {
		m[c.name], order[i] = c.apply, c.name
	}
	return m, order
}()

// unsupported are documented condor_submit commands Harrier refuses, with
// the reason given to the user.
var unsupported = map[string]string{
	"docker_image":          "the docker universe is not available",
	"container_image":       "the container universe is not available",
	"machine_count":         "the parallel universe is not available",
	"grid_resource":         "the grid universe is not available",
	"java_vm_args":          "the java universe is not available",
	"jar_files":             "the java universe is not available",
	"vm_type":               "the vm universe is not available",
	"vm_memory":             "the vm universe is not available",
	"vm_disk":               "the vm universe is not available",
	"x509userproxy":         "X.509 proxies are not supported",
	"use_x509userproxy":     "X.509 proxies are not supported",
	"output_destination":    "output goes back to the submit machine",
	"transfer_plugins":      "file transfer plugins are not supported",
	"encrypt_input_files":   "file transfer encryption is controlled by the pool",
	"encrypt_output_files":  "file transfer encryption is controlled by the pool",
	"run_as_owner":          "jobs always run as a pool user on the execute side",
	"load_profile":          "jobs do not run a login profile",
	"copy_to_spool":         "executables are served by the shadow, never spooled",
	"rendezvousdir":         "the parallel universe is not available",
	"next_job_start_delay":  "jobs start as soon as they are matched",
	"max_transfer_input_mb": "transfer limits are not implemented",
}

var universes = map[string]int64{"standard": 1, "vanilla": 5, "local": 12}

func setUniverse(j *job, _, v string) error {
	u, ok := universes[strings.ToLower(v)]
	if !ok {
		switch strings.ToLower(v) {
		case "scheduler", "grid", "java", "parallel", "vm", "docker", "container":
			return fmt.Errorf("universe %q is not supported (use vanilla, standard or local)", v)
		}
		return fmt.Errorf("unknown universe %q (use vanilla, standard or local)", v)
	}
	j.ad.SetInt("JobUniverse", u)
	return nil
}

// setArguments reads both styles: a value in double quotes is HTCondor's
// new syntax (single quotes group, "" is a literal double quote), anything
// else the old one (white space separates, \" is a literal double quote).
func setArguments(j *job, name, v string) error {
	var args []string
	if inner, ok := doubleQuoted(v); ok {
		s, err := unescapeDoubleQuotes(inner)
		if err != nil {
			return fmt.Errorf("bad %s: %w", name, err)
		}
		if args, err = jobargs.Split(s); err != nil {
			return fmt.Errorf("bad %s: %w", name, err)
		}
	} else {
		if strings.HasPrefix(v, `"`) {
			return fmt.Errorf("bad %s: no closing double quote", name)
		}
		args = strings.Fields(strings.ReplaceAll(v, `\"`, `"`))
	}
	j.ad.SetString("Arguments", jobargs.Join(args))
	return nil
}

// setEnvironment reads both styles: in double quotes, NAME=value words in
// the new syntax; otherwise the old NAME=value;NAME=value.
func setEnvironment(j *job, name, v string) error {
	var entries []string
	if inner, ok := doubleQuoted(v); ok {
		s, err := unescapeDoubleQuotes(inner)
		if err != nil {
			return fmt.Errorf("bad %s: %w", name, err)
		}
		if entries, err = jobargs.SplitEnv(s); err != nil {
			return fmt.Errorf("bad %s: %w", name, err)
		}
	} else {
		if strings.HasPrefix(v, `"`) {
			return fmt.Errorf("bad %s: no closing double quote", name)
		}
		for _, e := range strings.Split(v, ";") {
			if e = strings.TrimSpace(e); e == "" {
				continue
			}
			if i := strings.IndexByte(e, '='); i <= 0 {
				return fmt.Errorf("bad %s: entry %q is not NAME=value", name, e)
			}
			entries = append(entries, e)
		}
	}
	j.env = entries
	return nil
}

// setGetenv takes a boolean or a list of variable names, which may hold
// shell wildcards.
func setGetenv(j *job, name, v string) error {
	if b, err := parseBool(name, v); err == nil {
		j.getenv = nil
		if b {
			j.getenv = []string{"*"}
		}
		return nil
	}
	j.getenv = splitList(v)
	return nil
}

func setIwd(j *job, _, v string) error {
	j.iwd = v
	return nil
}

func setRequirements(j *job, name, v string) error {
	if _, err := j.expr(name, v); err != nil {
		return err
	}
	j.requirements = v
	return nil
}

var notifications = map[string]int64{"never": 0, "always": 1, "complete": 2, "error": 3}

func setNotification(j *job, name, v string) error {
	n, ok := notifications[strings.ToLower(v)]
	if !ok {
		return fmt.Errorf("bad %s %q (want never, always, complete or error)", name, v)
	}
	j.ad.SetInt("JobNotification", n)
	return nil
}

func setTransferExecutable(j *job, name, v string) error {
	b, err := parseBool(name, v)
	if err != nil {
		return err
	}
	j.transferExe = b
	j.ad.SetBool("TransferExecutable", b)
	return nil
}

// exprAttr sets attr to the value read as a ClassAd expression.
func exprAttr(attr string) command {
	return func(j *job, name, v string) error {
		e, err := j.expr(name, v)
		if err != nil {
			return err
		}
		j.ad.Set(attr, e)
		return nil
	}
}

// sizeAttr sets attr to a size in units of out bytes; a plain number is in
// units of def bytes. A value that is not a number with a unit is read as an
// expression.
func sizeAttr(attr string, def, out float64) command {
	return func(j *job, name, v string) error {
		n, literal, err := parseSize(v, def, out)
		if err != nil {
			return fmt.Errorf("bad %s: %w", name, err)
		}
		if attr == "RequestDisk" {
			j.requestDisk = true
		}
		if literal {
			j.ad.SetInt(attr, n)
			return nil
		}
		return exprAttr(attr)(j, name, v)
	}
}

func intAttr(attr string) command {
	return func(j *job, name, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("bad %s: %q is not an integer", name, v)
		}
		j.ad.SetInt(attr, n)
		return nil
	}
}

func boolAttr(attr string) command {
	return func(j *job, name, v string) error {
		b, err := parseBool(name, v)
		if err != nil {
			return err
		}
		j.ad.SetBool(attr, b)
		return nil
	}
}

func stringAttr(attr string) command {
	return func(j *job, _, v string) error {
		j.ad.SetString(attr, v)
		return nil
	}
}

// quotedAttr sets a string attribute whose value users often write in
// double quotes, which are dropped.
func quotedAttr(attr string) command {
	return func(j *job, _, v string) error {
		if inner, ok := doubleQuoted(v); ok {
			v = inner
		}
		j.ad.SetString(attr, v)
		return nil
	}
}

// listAttr sets attr to a comma-separated list of the names in v, which may
// be separated by commas or white space.
func listAttr(attr string) command {
	return func(j *job, _, v string) error {
		j.ad.SetString(attr, strings.Join(splitList(v), ","))
		return nil
	}
}

func enumAttr(attr string, allowed ...string) command {
	return func(j *job, name, v string) error {
		u := strings.ToUpper(v)
		for _, a := range allowed {
			if u == a {
				j.ad.SetString(attr, a)
				return nil
			}
		}
		return fmt.Errorf("bad %s %q (want %s)", name, v, strings.Join(allowed, ", "))
	}
}

func signalAttr(attr string) command {
	return func(j *job, name, v string) error {
		s, err := parseSignal(v)
		if err != nil {
			return fmt.Errorf("bad %s: %w", name, err)
		}
		j.ad.SetString(attr, s)
		return nil
	}
}

func parseBool(name, v string) (bool, error) {
	switch strings.ToLower(v) {
	case "true", "t", "yes", "y", "1":
		return true, nil
	case "false", "f", "no", "n", "0":
		return false, nil
	}
	return false, fmt.Errorf("bad %s: %q is not true or false", name, v)
}

func splitList(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
}

// doubleQuoted returns what is inside s if s is wrapped in double quotes.
func doubleQuoted(s string) (string, bool) {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1], true
	}
	return "", false
}

// unescapeDoubleQuotes turns "" into " inside a double-quoted value and
// refuses a lone double quote, which would have ended the value.
func unescapeDoubleQuotes(s string) (string, error) {
	if !strings.Contains(s, `"`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			if i+1 >= len(s) || s[i+1] != '"' {
				return "", fmt.Errorf("lone double quote inside a double-quoted value (write \"\" for a literal one)")
			}
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String(), nil
}
