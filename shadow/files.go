package shadow

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"harrier.dev/harrier/classad"
)

// Hold codes, as HTCondor numbers them.
const (
	holdCodeOutput = 12 // the job's output or error file could not be written
)

// jobFiles knows which submit-side files belong to a job. The shadow serves
// only these names: a starter asks for "executable" or "input", never for
// a path of its choosing.
type jobFiles struct {
	executable string
	input      string
	output     string
	errPath    string
}

func newJobFiles(job *classad.ClassAd) (*jobFiles, error) {
	iwd, _ := job.EvalString("Iwd")
	abs := func(attr string) string {
		p, ok := job.EvalString(attr)
		if !ok || p == "" {
			return ""
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(iwd, p)
		}
		return filepath.Clean(p)
	}
	f := &jobFiles{executable: abs("Cmd"), input: abs("In"), output: abs("Out"), errPath: abs("Err")}
	if f.executable == "" {
		return nil, errors.New("job ad has no Cmd")
	}
	return f, nil
}

func (f *jobFiles) readable(name string) (string, error) {
	switch name {
	case "executable":
		return f.executable, nil
	case "input":
		if f.input == "" || f.input == os.DevNull {
			return "", errors.New("the job has no input file")
		}
		return f.input, nil
	}
	return "", fmt.Errorf("no file %q for this job", name)
}

// outputs holds the job's stdout and stderr files open while it runs.
type outputs struct {
	files [3]*os.File // indexed by fd; nil discards
}

// openOutputs creates (truncates) the job's output and error files, as
// HTCondor does when a job starts, or appends to them for a job that has a
// checkpoint to resume from (truncate empties them should its restore fail
// and the job start afresh).
func (f *jobFiles) openOutputs(appendTo bool) (*outputs, error) {
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if appendTo {
		flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	o := &outputs{}
	for fd, p := range [3]string{1: f.output, 2: f.errPath} {
		if fd == 0 {
			continue
		}
		if p == "" || p == os.DevNull {
			continue
		}
		if fd == 2 && p == f.output && o.files[1] != nil {
			o.files[2] = o.files[1]
			continue
		}
		file, err := os.OpenFile(p, flags, 0o644)
		if err != nil {
			o.close()
			return nil, fmt.Errorf("open job output: %w", err)
		}
		o.files[fd] = file
	}
	return o, nil
}

// truncate empties the output files, opened for appending, for a job that
// starts afresh instead of being restored: its output then holds only
// what the new run writes, as after a first start.
func (o *outputs) truncate() error {
	var errs []error
	for fd, f := range o.files {
		if f == nil || (fd == 2 && o.files[1] == f) {
			continue
		}
		if err := f.Truncate(0); err != nil {
			errs = append(errs, fmt.Errorf("truncate %s: %w", f.Name(), err))
		}
	}
	return errors.Join(errs...)
}

func (o *outputs) write(fd int, data []byte) error {
	if fd < 1 || fd > 2 || o.files[fd] == nil {
		return nil
	}
	_, err := o.files[fd].Write(data)
	return err
}

func (o *outputs) close() error {
	// Out and Err may be one file, opened once.
	if o.files[2] == o.files[1] {
		o.files[2] = nil
	}
	var errs []error
	for fd, f := range o.files {
		if f == nil {
			continue
		}
		errs = append(errs, f.Close())
		o.files[fd] = nil
	}
	return errors.Join(errs...)
}
