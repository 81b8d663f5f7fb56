package submit

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
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
			scheme, _, _ := strings.Cut(n, "://")
			switch strings.ToLower(scheme) {
			case "file", "http", "https":
			default:
				return valueNotSupported(name, n, "the starter fetches file://, http:// and https:// URLs itself; "+
					"other schemes need transfer_plugins, which Harrier does not run yet")
			}
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
