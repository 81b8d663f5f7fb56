package starter

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"harrier.dev/harrier/classad"
)

// The files, in the scratch directory, where a job finds its own ad and
// its slot's as they were when it started, in the format of `harrier q
// -long` and `harrier status -long`, as HTCondor's jobs do (named by
// _CONDOR_JOB_AD and _CONDOR_MACHINE_AD). They are not among its outputs.
const (
	JobAdFile     = ".job.ad"
	MachineAdFile = ".machine.ad"
)

// writeAds writes the job's ad and its slot's (machineAd, new syntax; none
// if empty) into the scratch directory, before anything of the job's is
// there: they are made afresh, never through a name already present.
func writeAds(scratch string, job *classad.ClassAd, machineAd string) error {
	ads := [][2]string{{JobAdFile, job.MarshalOld()}}
	if machineAd != "" {
		m, err := classad.Parse(machineAd)
		if err != nil {
			return fmt.Errorf("the slot's ad: %w", err)
		}
		ads = append(ads, [2]string{MachineAdFile, m.MarshalOld()})
	}
	for _, ad := range ads {
		f, err := os.OpenFile(filepath.Join(scratch, ad[0]), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		_, err = f.WriteString(ad[1])
		if err := errors.Join(err, f.Close()); err != nil {
			return fmt.Errorf("write %s: %w", ad[0], err)
		}
	}
	return nil
}
