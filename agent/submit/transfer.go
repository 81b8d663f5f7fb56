package submit

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"harrier.dev/harrier/classad"
)

// File transfer (should_transfer_files = YES): the lists are kept as
// HTCondor keeps them (TransferInput, TransferOutput,
// TransferOutputRemaps); the shadow and the starter act on them. Names
// stay within the job's directory on both sides: no ".." element, and
// on the execute side no absolute name. An input named by an absolute
// path is read by the shadow as the job's owner and lands at the top of
// the scratch directory, as in HTCondor.

// transferList splits a transfer list on commas; names may hold spaces.
func transferList(v string) []string {
	var names []string
	for n := range strings.SplitSeq(v, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	return names
}

// isURL reports whether a transfer_input_files entry is a URL, fetched on
// the execute machine by a plugin.
func isURL(name string) bool {
	scheme, rest, ok := strings.Cut(name, "://")
	return ok && rest != "" && scheme != "" && !strings.ContainsAny(scheme, "/ ")
}

// climbs reports whether a name has a ".." element.
func climbs(name string) bool {
	return slices.Contains(strings.Split(filepath.ToSlash(name), "/"), "..")
}

func setTransferInput(j *job, name, v string) error {
	names := transferList(v)
	for _, n := range names {
		if isURL(n) {
			continue
		}
		if climbs(n) {
			return valueNotSupported(name, n, "input files are named within the job's initial directory "+
				"(or by an absolute path); a name with \"..\" could land outside the job's scratch directory")
		}
	}
	j.ad.SetString("TransferInput", strings.Join(names, ","))
	return nil
}

func setTransferOutput(j *job, name, v string) error {
	names := transferList(v)
	for _, n := range names {
		if filepath.IsAbs(n) || climbs(n) {
			return valueNotSupported(name, n, "output files are named within the job's scratch directory")
		}
	}
	j.ad.SetString("TransferOutput", strings.Join(names, ","))
	return nil
}

// setTransferRemaps reads "name = newname; ...": newname, like the
// output it renames, stays within the job's initial directory.
func setTransferRemaps(j *job, name, v string) error {
	if inner, ok := doubleQuoted(v); ok {
		v = inner
	}
	for pair := range strings.SplitSeq(v, ";") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		from, to, ok := strings.Cut(pair, "=")
		from, to = strings.TrimSpace(from), strings.TrimSpace(to)
		if !ok || from == "" || to == "" {
			return fmt.Errorf("bad %s: %q is not NAME = NEWNAME", name, pair)
		}
		if filepath.IsAbs(to) || climbs(to) || isURL(to) || climbs(from) || filepath.IsAbs(from) {
			return valueNotSupported(name, pair, "outputs are renamed within the job's initial directory, "+
				"where the shadow writes them as the job's owner")
		}
	}
	j.ad.SetString("TransferOutputRemaps", v)
	return nil
}

// setTransferExecutable reads transfer_executable: false runs the
// executable named as a program of the execute machine.
func setTransferExecutable(j *job, name, v string) error {
	b, err := parseBool(name, v)
	if err != nil {
		return err
	}
	j.ad.SetBool("TransferExecutable", b)
	return nil
}

// setTransferPlugins reads "scheme[,scheme] = file; ...": the job's own
// transfer plugins, kept as TransferPlugins. Each file goes with the
// job's inputs (see finishTransfer), and the starter runs it, as the
// job's user, for URLs of its schemes.
func setTransferPlugins(j *job, name, v string) error {
	if inner, ok := doubleQuoted(v); ok {
		v = inner
	}
	for pair := range strings.SplitSeq(v, ";") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		schemes, file, ok := strings.Cut(pair, "=")
		schemes, file = strings.TrimSpace(schemes), strings.TrimSpace(file)
		if !ok || schemes == "" || file == "" {
			return fmt.Errorf("bad %s: %q is not SCHEME = FILE", name, pair)
		}
		for s := range strings.SplitSeq(schemes, ",") {
			if s = strings.TrimSpace(s); s == "" || strings.ContainsAny(s, ":/ ") {
				return fmt.Errorf("bad %s: %q is not a URL scheme", name, s)
			}
		}
		if isURL(file) || climbs(file) {
			return valueNotSupported(name, pair, "a plugin is a file of the submit machine, sent with the job's inputs")
		}
	}
	j.ad.SetString("TransferPlugins", v)
	return nil
}

// setOutputDestination reads output_destination, the URL the job's
// outputs go to instead of its initial directory.
func setOutputDestination(j *job, name, v string) error {
	if !isURL(v) {
		return fmt.Errorf("bad %s: %q is not a URL (scheme://...)", name, v)
	}
	j.ad.SetString("OutputDestination", v)
	return nil
}

// pluginFiles are the files of the job's own transfer plugins.
func pluginFiles(ad *classad.ClassAd) []string {
	v, _ := ad.EvalString("TransferPlugins")
	var files []string
	for pair := range strings.SplitSeq(v, ";") {
		if _, file, ok := strings.Cut(pair, "="); ok && strings.TrimSpace(file) != "" {
			files = append(files, strings.TrimSpace(file))
		}
	}
	return files
}

// finishTransfer adds the job's plugins to its inputs, and checks that a
// job with output_destination transfers its files, as HTCondor asks.
func finishTransfer(j *job) error {
	if files := pluginFiles(j.ad); len(files) > 0 {
		in, _ := j.ad.EvalString("TransferInput")
		names := transferList(in)
		for _, f := range files {
			if !slices.Contains(names, f) {
				names = append(names, f)
			}
		}
		j.ad.SetString("TransferInput", strings.Join(names, ","))
	}
	if _, ok := j.ad.EvalString("OutputDestination"); ok {
		if v, _ := j.ad.EvalString("ShouldTransferFiles"); !strings.EqualFold(v, "YES") {
			return errors.New("output_destination needs should_transfer_files = YES: the outputs leave from the job's scratch directory")
		}
	}
	return nil
}

// pluginClauses are the requirements of a job on the URL schemes it
// needs the machine to move: each scheme of its URL inputs and of its
// output_destination that neither the starter (file, http, https) nor
// one of the job's own plugins handles, as
// stringListIMember(scheme, TARGET.HasFileTransferPluginMethods).
func pluginClauses(j *job) []string {
	own := map[string]bool{}
	v, _ := j.ad.EvalString("TransferPlugins")
	for pair := range strings.SplitSeq(v, ";") {
		schemes, _, _ := strings.Cut(pair, "=")
		for s := range strings.SplitSeq(schemes, ",") {
			own[strings.ToLower(strings.TrimSpace(s))] = true
		}
	}
	in, _ := j.ad.EvalString("TransferInput")
	urls := transferList(in)
	if dest, ok := j.ad.EvalString("OutputDestination"); ok {
		urls = append(urls, dest)
	}
	var clauses []string
	seen := map[string]bool{}
	for _, u := range urls {
		if !isURL(u) {
			continue
		}
		scheme, _, _ := strings.Cut(u, "://")
		scheme = strings.ToLower(scheme)
		if own[scheme] || seen[scheme] || scheme == "file" || scheme == "http" || scheme == "https" {
			continue
		}
		seen[scheme] = true
		clauses = append(clauses, fmt.Sprintf("stringListIMember(%q, TARGET.HasFileTransferPluginMethods)", scheme))
	}
	return clauses
}
