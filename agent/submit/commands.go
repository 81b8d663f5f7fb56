package submit

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/concurrency"
	"harrier.dev/harrier/jobargs"
)

// A command applies the expanded, non-empty value of one submit command to
// the job being built. name is the command's name, for messages.
type command func(j *job, name, v string) error

type commandEntry struct {
	name  string
	apply command
}

// commandTable lists the commands Harrier implements, in the order they
// are applied, which is also the order their attributes first appear in a
// job ad. Each takes effect: some daemon reads its attribute, or submit
// itself acts on it. Values Harrier cannot honour are refused by the
// command's function; commands refused whatever their value are in
// refuse.go.
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
	{"log_xml", onlyFalse("the job event log is always written in HTCondor's text format")},
	{"container_image", func(j *job, _, v string) error { j.image = v; return nil }},
	{"docker_image", func(j *job, _, v string) error { j.image = v; return nil }},
	{"requirements", setRequirements},
	{"rank", exprAttr("Rank")},
	{"request_cpus", exprAttr("RequestCpus")},
	{"request_memory", sizeAttr("RequestMemory", 1<<20, 1<<20)},
	{"request_disk", sizeAttr("RequestDisk", 1<<10, 1<<10)},
	{"request_gpus", setRequestGPUs},
	{"require_gpus", setRequireGPUs},
	{"gpus_minimum_capability", gpuBound("Capability", ">=")},
	{"gpus_maximum_capability", gpuBound("Capability", "<=")},
	{"gpus_minimum_memory", gpuBound("GlobalMemoryMb", ">=")},
	{"priority", intAttr("JobPrio")},
	{"hold", func(j *job, name, v string) (err error) { j.hold, err = parseBool(name, v); return err }},
	{"notification", setNotification},
	{"notify_user", stringAttr("NotifyUser")},
	{"should_transfer_files", oneOf("ShouldTransferFiles", "YES", "NO", "IF_NEEDED")},
	{"when_to_transfer_output", oneOf("WhenToTransferOutput", "ON_EXIT", "ON_EXIT_OR_EVICT", "ON_SUCCESS")},
	{"transfer_executable", setTransferExecutable},
	{"transfer_input_files", setTransferInput},
	{"transfer_output_files", setTransferOutput},
	{"transfer_output_remaps", setTransferRemaps},
	{"transfer_plugins", setTransferPlugins},
	{"output_destination", setOutputDestination},
	{"max_transfer_input_mb", intAttr("MaxTransferInputMB")},
	{"max_transfer_output_mb", intAttr("MaxTransferOutputMB")},
	{"preserve_relative_paths", boolAttr("PreserveRelativePaths")},
	{"want_submit_dir", boolAttr("WantSubmitDir")},
	{"stream_input", onlyFalse("the starter copies the job's input to the execute machine before the job starts")},
	{"stream_output", boolAttr("StreamOut")},
	{"stream_error", boolAttr("StreamErr")},
	{"periodic_hold", exprAttr("PeriodicHold")},
	{"periodic_hold_reason", exprAttr("PeriodicHoldReason")},
	{"periodic_hold_subcode", exprAttr("PeriodicHoldSubCode")},
	{"periodic_release", exprAttr("PeriodicRelease")},
	{"periodic_remove", exprAttr("PeriodicRemove")},
	{"periodic_vacate", exprAttr("PeriodicVacate")},
	{"on_exit_hold", exprAttr("OnExitHold")},
	{"on_exit_hold_reason", exprAttr("OnExitHoldReason")},
	{"on_exit_hold_subcode", exprAttr("OnExitHoldSubCode")},
	{"on_exit_remove", setOnExitRemove},
	{"leave_in_queue", exprAttr("LeaveJobInQueue")},
	{"max_retries", setMaxRetries},
	{"concurrency_limits", setConcurrencyLimits},
	{"allowed_job_duration", intAttr("AllowedJobDuration")},
	{"allowed_execute_duration", intAttr("AllowedExecuteDuration")},
	{"success_exit_code", setSuccessExitCode},
	{"retry_until", setRetryUntil},
	{"max_idle", intAttr("JobMaterializeMaxIdle")},
	{"max_materialize", intAttr("JobMaterializeLimit")},
	{"job_max_vacate_time", exprAttr("JobMaxVacateTime")},
	{"max_job_retirement_time", exprAttr("MaxJobRetirementTime")},
	{"kill_sig", signalAttr("KillSig")},
	{"remove_kill_sig", signalAttr("RemoveKillSig")},
	{"hold_kill_sig", signalAttr("HoldKillSig")},
	{"want_graceful_removal", boolAttr("WantGracefulRemoval")},
	{"job_lease_duration", setJobLease},
	{"want_checkpoint", boolAttr("WantCheckpoint")},
	{"checkpoint_interval", intAttr("CheckpointInterval")},
	{"checkpoint_exit_code", intAttr("SuccessCheckpointExitCode")},
	{"transfer_checkpoint_files", setCheckpointFiles},
	{"file_remaps", quotedAttr("FileRemaps")},
	{"local_files", listAttr("LocalFiles")},
	{"compress_files", listAttr("CompressFiles")},
	{"buffer_files", quotedAttr("BufferFiles")},
	{"buffer_size", intAttr("BufferSize")},
	{"buffer_block_size", intAttr("BufferBlockSize")},
	{"fetch_files", listAttr("FetchFiles")},
	{"append_files", listAttr("AppendFiles")},
	{"accounting_group", groupAttr("AcctGroup")},
	{"accounting_group_user", groupAttr("AcctGroupUser")},
	{"job_machine_attrs", attrNamesAttr("JobMachineAttrs")},
	{"job_machine_attrs_history_length", historyLengthAttr("JobMachineAttrsHistoryLength")},
	{"submit_event_notes", stringAttr("SubmitEventNotes")},
	{"job_ad_information_attrs", attrNamesAttr("JobAdInformationAttrs")},
	{"coresize", rlimitAttr("CoreSize")},
	{"stack_size", rlimitAttr("StackSize")},
	{"nice_user", boolAttr("NiceUser")},
	{"batch_name", stringAttr("JobBatchName")},
	{"jobbatchname", stringAttr("JobBatchName")},
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

// universes are the universes Harrier runs. The standard universe's
// promises, checkpoints and remote I/O without relinking, are what every
// Harrier job gets, so it runs like vanilla. Scheduler and local universe
// jobs run on the submit machine, started by the agent itself. The
// container and docker universes are vanilla jobs in their own container
// image (WantContainer, WantDocker), as in HTCondor.
var universes = map[string]int64{"standard": 1, "vanilla": 5, "container": 5, "docker": 5, "scheduler": 7, "local": 12}

// missingUniverses say why a documented universe is refused.
var missingUniverses = map[string]string{
	"grid":     noGrid,
	"java":     noJava,
	"parallel": noParallel,
	"vm":       noVM,
}

func setUniverse(j *job, name, v string) error {
	u, ok := universes[strings.ToLower(v)]
	if !ok {
		if why, ok := missingUniverses[strings.ToLower(v)]; ok {
			return valueNotSupported(name, v, why)
		}
		return fmt.Errorf("unknown universe %q (use vanilla, container, docker, standard, scheduler or local)", v)
	}
	j.ad.SetInt("JobUniverse", u)
	j.universe = ""
	if l := strings.ToLower(v); l == "container" || l == "docker" {
		j.universe = l
	}
	return nil
}

// setArguments reads both styles: a value in double quotes is HTCondor's
// new syntax (single quotes group, "" is a literal double quote), anything
// else the old one (white space separates, \" is a literal double quote).
func setArguments(j *job, name, v string) error {
	args, err := splitArgs(v)
	if err != nil {
		return fmt.Errorf("bad %s: %w", name, err)
	}
	j.ad.SetString("Arguments", jobargs.Join(args))
	return nil
}

// splitArgs splits a command line written in either of HTCondor's
// argument syntaxes.
func splitArgs(v string) ([]string, error) {
	if inner, ok := doubleQuoted(v); ok {
		s, err := unescapeDoubleQuotes(inner)
		if err != nil {
			return nil, err
		}
		return jobargs.Split(s)
	}
	if strings.HasPrefix(v, `"`) {
		return nil, errors.New("no closing double quote")
	}
	return strings.Fields(strings.ReplaceAll(v, `\"`, `"`)), nil
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

// setGetenv takes a boolean or a match list: names and patterns with "*"
// wildcards, separated by commas, semicolons or white space, matched
// ignoring case; a member starting with "!" rejects the names it matches.
// getenv = true is getenv = *.
func setGetenv(j *job, name, v string) error {
	if b, err := parseBool(name, v); err == nil {
		j.getenv = nil
		if b {
			j.getenv = []string{"*"}
		}
		return nil
	}
	j.getenv = strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ';' || unicode.IsSpace(r) })
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

// setNotification accepts never, the default: Harrier sends no e-mail.
func setNotification(j *job, name, v string) error {
	switch strings.ToLower(v) {
	case "never":
		j.ad.SetInt("JobNotification", 0)
		return nil
	case "always", "complete", "error":
		return valueNotSupported(name, v, "Harrier sends no e-mail; set notification = never or remove it "+
			"(the job event log, log = FILE, records every event of the job)")
	}
	return fmt.Errorf("bad %s %q (want never, always, complete or error)", name, v)
}

// defaultMaxRetries is condor_submit's DEFAULT_JOB_MAX_RETRIES, the
// retries a job with success_exit_code or retry_until and no max_retries
// gets.
const defaultMaxRetries = 2

// setConcurrencyLimits reads concurrency_limits: the pool's limited
// resources the job uses while it runs, "name" or "name:use" separated by
// commas, stored lower-cased as ConcurrencyLimits.
func setConcurrencyLimits(j *job, name, v string) error {
	uses, err := concurrency.Parse(v)
	if err != nil {
		return fmt.Errorf("bad %s: %w", name, err)
	}
	if len(uses) > 0 {
		j.ad.SetString("ConcurrencyLimits", concurrency.Format(uses))
	}
	return nil
}

func setMaxRetries(j *job, name, v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("bad %s: %q is not a non-negative integer", name, v)
	}
	j.ad.SetInt("JobMaxRetries", n)
	j.retries = true
	return nil
}

func setSuccessExitCode(j *job, name, v string) error {
	if err := intAttr("JobSuccessExitCode")(j, name, v); err != nil {
		return err
	}
	j.successCode, _ = j.ad.EvalInt("JobSuccessExitCode")
	j.retries = true
	return nil
}

// setRetryUntil reads retry_until: an exit code, or an expression, that
// ends the retries. It has no attribute of its own: finish puts it into
// OnExitRemove, as condor_submit does.
func setRetryUntil(j *job, name, v string) error {
	e, err := j.expr(name, v)
	if lit, ok := e.AsLiteral(); err == nil && ok {
		if _, isBool := lit.BoolValue(); !isBool && lit.Kind() != classad.IntKind {
			err = errors.New("a literal that is neither")
		}
	}
	if err != nil {
		return fmt.Errorf("%s = %s is invalid: it must be an integer or a boolean expression (%w)", name, v, err)
	}
	j.retryUntil = e
	j.retries = true
	return nil
}

func setOnExitRemove(j *job, name, v string) error {
	e, err := j.expr(name, v)
	if err != nil {
		return err
	}
	j.onExitRemove = e
	j.ad.Set("OnExitRemove", e)
	return nil
}

// setCheckpointFiles reads transfer_checkpoint_files: names of files or
// directories within the job's initial directory, which make up the
// checkpoint of a job that checkpoints itself (checkpoint_exit_code).
func setCheckpointFiles(j *job, name, v string) error {
	names := splitList(v)
	for _, n := range names {
		if !filepath.IsLocal(filepath.Clean(strings.TrimSuffix(n, "/"))) {
			return valueNotSupported(name, v, "checkpoint files are named within the job's initial directory, "+
				"where the job writes them through the shadow")
		}
	}
	j.ad.SetString("TransferCheckpoint", strings.Join(names, ","))
	return nil
}

// setJobLease sets JobLeaseDuration, in seconds: how long the job runs on
// when its shadow and starter lose each other (a network outage, a
// submit machine out of reach), for them to reconnect. Without it a job
// has no lease and stops when its shadow is lost.
func setJobLease(j *job, name, v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("%s = %s: want a number of seconds", name, v)
	}
	j.ad.SetInt("JobLeaseDuration", n)
	return nil
}

// onlyFalse accepts a command whose value is false, its default, and
// refuses any other value for reason.
func onlyFalse(reason string) command {
	return func(_ *job, name, v string) error {
		if b, err := parseBool(name, v); err == nil && !b {
			return nil
		}
		return valueNotSupported(name, v, reason)
	}
}

// oneOf accepts the values of an enumeration, in any case, and records
// the value in attr as HTCondor spells it.
func oneOf(attr string, values ...string) command {
	return func(j *job, name, v string) error {
		u := strings.ToUpper(strings.TrimSpace(v))
		if !slices.Contains(values, u) {
			return fmt.Errorf("bad %s %q (want %s)", name, v, strings.Join(values, ", "))
		}
		j.ad.SetString(attr, u)
		return nil
	}
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

// attrNamesAttr reads a list of attribute names (job_machine_attrs,
// job_ad_information_attrs).
func attrNamesAttr(attr string) command {
	return func(j *job, name, v string) error {
		names := splitList(v)
		for _, n := range names {
			if n == "" || '0' <= n[0] && n[0] <= '9' || strings.IndexFunc(n, func(r rune) bool { return r > 0x7f || !isWordByte(byte(r)) }) >= 0 {
				return fmt.Errorf("bad %s: %q is not an attribute name", name, n)
			}
		}
		j.ad.SetString(attr, strings.Join(names, ","))
		return nil
	}
}

// historyLengthAttr reads how many runs' values job_machine_attrs keeps:
// 0 to 100.
func historyLengthAttr(attr string) command {
	return func(j *job, name, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 100 {
			return fmt.Errorf("bad %s: %q is not a number from 0 to 100", name, v)
		}
		j.ad.SetInt(attr, int64(n))
		return nil
	}
}

// groupAttr reads an accounting group's name, or a user's in it: letters,
// digits, "_" and "-", in parts separated by dots (group_physics.theory).
func groupAttr(attr string) command {
	return func(j *job, name, v string) error {
		for _, part := range strings.Split(v, ".") {
			if part == "" || strings.IndexFunc(part, func(r rune) bool {
				return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '-')
			}) >= 0 {
				return fmt.Errorf("bad %s: %q: want letters, digits, _ and -, in parts separated by dots", name, v)
			}
		}
		j.ad.SetString(attr, v)
		return nil
	}
}

// rlimitAttr reads a resource limit in bytes (coresize, stack_size): a
// number of bytes, or -1 for none. The starter sets it on the job.
func rlimitAttr(attr string) command {
	return func(j *job, name, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < -1 {
			return fmt.Errorf("bad %s: %q is not a number of bytes (or -1 for no limit)", name, v)
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
