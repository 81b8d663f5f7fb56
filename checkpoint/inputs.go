package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/checkpoint-restore/go-criu/v8/crit"
	"github.com/checkpoint-restore/go-criu/v8/crit/images/fdinfo"
	remap "github.com/checkpoint-restore/go-criu/v8/crit/images/remap-file-path"
)

// Input is a regular file the job holds open or has mapped whose size
// CRIU recorded at the dump and insists on at restore: every file not
// opened write-only for appending (CRIU's should_check_size).
type Input struct {
	// Path is the file's name as the job sees it, inside the container.
	Path string `json:"path"`
	Size int64  `json:"size"`
}

// readInputs lists the Inputs of a dump from the image's files.img,
// which CRIU wrote with the sizes it will check. Reading the image
// rather than /proc before the dump keeps this process from doing I/O
// on the job's (possibly stuck) FUSE mount, and it is exactly CRIU's
// view.
func readInputs(imageDir string) ([]Input, error) {
	f, err := os.Open(filepath.Join(imageDir, "files.img"))
	if err != nil {
		return nil, fmt.Errorf("read inputs: %w", err)
	}
	defer f.Close()
	img, err := crit.New(f, nil, "", false, true).Decode(&fdinfo.FileEntry{})
	if err != nil {
		return nil, fmt.Errorf("read inputs: files.img: %w", err)
	}
	removed, err := removedFiles(imageDir)
	if err != nil {
		return nil, fmt.Errorf("read inputs: %w", err)
	}
	seen := map[string]bool{}
	var out []Input
	for _, e := range img.Entries {
		fe, ok := e.Message.(*fdinfo.FileEntry)
		if !ok || fe.GetType() != fdinfo.FdTypes_REG {
			continue
		}
		reg := fe.GetReg()
		// An external file (the job's input, DumpOptions.Input) is
		// handed back at restore, not looked for; nor is one the job
		// removed, which travels in the image.
		if reg == nil || reg.Size == nil || reg.GetExt() || removed[reg.GetId()] {
			continue
		}
		name := "/" + strings.TrimPrefix(reg.GetName(), "/")
		if seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, Input{Path: name, Size: int64(reg.GetSize())})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// removedFiles returns the ids of the files the job held open after it
// removed them, which CRIU saved in the image (ghost files) and makes
// anew at restore: the image's remap-fpath.img, if any.
func removedFiles(imageDir string) (map[uint32]bool, error) {
	f, err := os.Open(filepath.Join(imageDir, "remap-fpath.img"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	img, err := crit.New(f, nil, "", false, true).Decode(&remap.RemapFilePathEntry{})
	if err != nil {
		return nil, fmt.Errorf("remap-fpath.img: %w", err)
	}
	ids := map[uint32]bool{}
	for _, e := range img.Entries {
		if r, ok := e.Message.(*remap.RemapFilePathEntry); ok && r.GetRemapType() == remap.RemapType_GHOST {
			ids[r.GetOrigId()] = true
		}
	}
	return ids, nil
}

// ErrInputChanged reports an input of the job that is not as it was at
// the dump: CRIU would refuse to restore.
var ErrInputChanged = errors.New("input changed since the checkpoint")

// InputChange is one input that differs from the dump's record.
type InputChange struct {
	Input
	// HostPath is where the file was looked for.
	HostPath string
	// Now is its size now, -1 if it is gone.
	Now int64
}

// InputsError lists the inputs that changed; it wraps ErrInputChanged.
type InputsError struct{ Changed []InputChange }

func (e *InputsError) Error() string {
	var b strings.Builder
	b.WriteString(ErrInputChanged.Error())
	for i, c := range e.Changed {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString(", ")
		}
		if c.Now < 0 {
			fmt.Fprintf(&b, "%s is gone", c.Path)
		} else {
			fmt.Fprintf(&b, "%s has %d bytes, not %d", c.Path, c.Now, c.Size)
		}
	}
	return b.String()
}

func (e *InputsError) Unwrap() error { return ErrInputChanged }

// CheckInputs compares the recorded inputs with the files as they are
// now. resolve maps the job's name of a file to one this process can
// stat (the submit-side file behind the job's working directory, say);
// inputs it returns false for are not checked. The error is an
// *InputsError if some input changed.
func CheckInputs(inputs []Input, resolve func(path string) (string, bool)) error {
	var changed []InputChange
	for _, in := range inputs {
		host, ok := resolve(in.Path)
		if !ok {
			continue
		}
		fi, err := os.Stat(host)
		switch {
		case errors.Is(err, os.ErrNotExist):
			changed = append(changed, InputChange{Input: in, HostPath: host, Now: -1})
		case err != nil:
			return fmt.Errorf("check input %s: %w", in.Path, err)
		case fi.Size() != in.Size:
			changed = append(changed, InputChange{Input: in, HostPath: host, Now: fi.Size()})
		}
	}
	if changed != nil {
		return &InputsError{Changed: changed}
	}
	return nil
}
