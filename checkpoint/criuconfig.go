package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"
)

// Dump and Restore tell CRIU what libcontainer has no option for
// through a CRIU configuration file named by the container's label (see
// ConfigFileLabel):
//
//   - A job's standard input, when it is a file (HTCondor's input), is
//     opened on the execute machine outside the job's container and
//     handed to it: CRIU finds no mount of the container that holds it
//     and refuses to dump the job. Dump declares it external, by its
//     mount and inode (CRIU still records where the job was in it);
//     Restore hands CRIU the same file again, opened afresh on this
//     machine, and CRIU places the job where it was.
//   - A file the job holds open after removing it (a temporary file, as
//     Python's tempfile, sort or SQLite make them) travels in the image,
//     whatever its size (ghostLimit).

// ghostLimit is the largest removed file the job holds open that a dump
// copies into the image. CRIU's default, 1 MiB, refuses the checkpoint
// of any job with a larger temporary file; the job's own disk and
// memory limits are what bound them.
const ghostLimit = "1024G"

// ErrNoInput says a restore was given no input file for a job whose dump
// recorded one.
var ErrNoInput = errors.New("the job reads an input file, and none was given to restore it with")

// criuConfigLabel is the container label libcontainer reads CRIU's
// configuration file from.
const criuConfigLabel = "org.criu.config"

// criuConfigName is that file, in the container's state directory.
const criuConfigName = "criu.conf"

// ConfigFileLabel is the label a container's configuration must carry
// for its job's input file to be dumped and restored (DumpOptions.Input,
// RestoreOptions.Input); root and id are its libcontainer state root and
// ID. The file lives in the container's state directory and is written
// by Dump and Restore; CRIU ignores it while it does not exist.
func ConfigFileLabel(root, id string) string {
	return criuConfigLabel + "=" + filepath.Join(root, id, criuConfigName)
}

// criuConfigPath is the CRIU configuration file cfg names.
func criuConfigPath(cfg *configs.Config) (string, error) {
	for _, l := range cfg.Labels {
		if v, ok := strings.CutPrefix(l, criuConfigLabel+"="); ok && v != "" {
			return v, nil
		}
	}
	return "", fmt.Errorf("the container has no %s label (see ConfigFileLabel)", criuConfigLabel)
}

// writeCRIUConfig makes the CRIU configuration file path hold lines.
func writeCRIUConfig(path string, lines ...string) error {
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		return fmt.Errorf("CRIU configuration: %w", err)
	}
	return nil
}

// inputKeyPattern is what inputKey makes.
var inputKeyPattern = regexp.MustCompile(`^file\[[0-9a-f]+:[0-9a-f]+\]$`)

// inputKey is CRIU's name of the file f in an image: file[mount:inode].
func inputKey(f *os.File) (string, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return "", fmt.Errorf("input: %w", err)
	}
	// A pipe or socket is CRIU's to hand over (libcontainer does so for
	// the job's standard I/O): only a file is declared external.
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", fmt.Errorf("input %s is not a regular file", f.Name())
	}
	mnt, err := mountID(f)
	if err != nil {
		return "", fmt.Errorf("input: %w", err)
	}
	return fmt.Sprintf("file[%x:%x]", mnt, st.Ino), nil
}

// mountID is the ID of the mount f was opened on, from its fdinfo.
func mountID(f *os.File) (uint64, error) {
	b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(int(f.Fd())))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "mnt_id:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, errors.New("no mnt_id in fdinfo")
}

// dumpConfig writes the CRIU configuration of a dump of c, replacing a
// restore's, and returns the input's key (none without an input). A
// container without the label is dumped with CRIU's defaults, unless
// it has an input.
func dumpConfig(c *libcontainer.Container, input *os.File) (string, error) {
	cfg := c.Config()
	path, err := criuConfigPath(&cfg)
	if err != nil {
		if input == nil {
			return "", nil
		}
		return "", err
	}
	lines := []string{"ghost-limit " + ghostLimit}
	var key string
	if input != nil {
		if key, err = inputKey(input); err != nil {
			return "", err
		}
		lines = append(lines, "external "+key)
	}
	return key, writeCRIUConfig(path, lines...)
}

// restoreConfig writes the CRIU configuration of a restore into a
// container made from cfg whose dump recorded the input key: the file
// CRIU is given as its standard input stands for it.
func restoreConfig(cfg *configs.Config, key string) error {
	// The image is sealed; still, nothing but a key of inputKey's form
	// goes into CRIU's configuration.
	if !inputKeyPattern.MatchString(key) {
		return fmt.Errorf("%w: input key %q", ErrBadImage, key)
	}
	path, err := criuConfigPath(cfg)
	if err != nil {
		return err
	}
	return writeCRIUConfig(path, "inherit-fd fd[0]:"+key)
}
