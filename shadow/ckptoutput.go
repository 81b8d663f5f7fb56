package shadow

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"harrier.dev/harrier/atomicfile"
	"harrier.dev/harrier/checkpoint"
	"harrier.dev/harrier/wire"
)

// A job restored from a checkpoint writes again what it wrote after the
// checkpoint was taken. Its streamed output has those lines already,
// from the run that went on after it (a periodic checkpoint, then a
// crash), so the shadow keeps, beside each image, where the output files
// ended when it was taken, and cuts them back there when the job is
// restored from that image. Files the job writes itself are the job's
// to keep consistent, as with any restart.

// OutputMarkFile is where, in the owner's checkpoint directory, the end
// of the job's output files at its image's checkpoint is kept.
func OutputMarkFile(storeDir, key string) string {
	return filepath.Join(storeDir, key+".output")
}

// outputMark is where the job's output and error files ended when its
// image was taken; Image is the image's stamp (checkpoint.Store.Stamp).
type outputMark struct {
	Image  string `json:"image"`
	Stdout *int64 `json:"stdout,omitempty"`
	Stderr *int64 `json:"stderr,omitempty"`
}

// outputBase is how long the output files were when the job started (or
// was restored), after which the starter counts its output.
type outputBase struct {
	size [3]int64
	has  [3]bool
	same bool // one file for both: the starter's two counts add up
}

// base returns the files' lengths now.
func (o *outputs) base() (*outputBase, error) {
	b := &outputBase{same: o.files[1] != nil && o.files[2] == o.files[1]}
	for fd := 1; fd <= 2; fd++ {
		if o.files[fd] == nil {
			continue
		}
		st, err := o.files[fd].Stat()
		if err != nil {
			return nil, err
		}
		b.size[fd], b.has[fd] = st.Size(), true
	}
	return b, nil
}

// at returns where the files ended once the job had written stdout and
// stderr bytes (nil: not counted) since b.
func (b *outputBase) at(stdout, stderr *int64) (outputMark, bool) {
	var m outputMark
	if b == nil {
		return m, false
	}
	if b.same {
		if stdout != nil && stderr != nil {
			v := b.size[1] + *stdout + *stderr
			m.Stdout = &v
		}
	} else {
		if b.has[1] && stdout != nil {
			v := b.size[1] + *stdout
			m.Stdout = &v
		}
		if b.has[2] && stderr != nil {
			v := b.size[2] + *stderr
			m.Stderr = &v
		}
	}
	return m, m.Stdout != nil || m.Stderr != nil
}

// markOutput keeps, beside the image just stored, where the output files
// ended at its checkpoint, as info counts it; without a count (output
// kept in the scratch directory, a shadow that did not see the job
// start) any mark of an older image goes.
func (s *Shadow) markOutput(store *checkpoint.Store, info *wire.CheckpointInfo) error {
	path := OutputMarkFile(s.spec.CheckpointDir, s.spec.CheckpointKey)
	s.mu.Lock()
	base := s.outBase
	s.mu.Unlock()
	m, ok := base.at(info.StdoutBytes, info.StderrBytes)
	if !ok {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	stamp, err := store.Stamp(s.spec.CheckpointKey)
	if err != nil {
		return err
	}
	m.Image = stamp
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, b, 0o600)
}

// rollBackOutput cuts the output files back to where they ended at the
// checkpoint of the image the job was just restored from, if that is
// known.
func (s *Shadow) rollBackOutput(o *outputs) error {
	b, err := os.ReadFile(OutputMarkFile(s.spec.CheckpointDir, s.spec.CheckpointKey))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var m outputMark
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("output mark: %w", err)
	}
	store, err := s.imageStore()
	if err != nil {
		return err
	}
	if stamp, err := store.Stamp(s.spec.CheckpointKey); err != nil || stamp != m.Image {
		return err // another image's mark: nothing known of this one
	}
	for fd, end := range [3]*int64{1: m.Stdout, 2: m.Stderr} {
		f := o.files[fd]
		if f == nil || end == nil || (fd == 2 && o.files[1] == f) {
			continue
		}
		st, err := f.Stat()
		if err != nil {
			return err
		}
		if st.Size() > *end {
			if err := f.Truncate(*end); err != nil {
				return fmt.Errorf("truncate %s: %w", f.Name(), err)
			}
			s.logger.Info("output cut back to the restored checkpoint", "file", f.Name(), "from", st.Size(), "to", *end)
		}
	}
	return nil
}
