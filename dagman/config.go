package dagman

import (
	"fmt"
	"time"

	"harrier.dev/harrier/config"
)

// withConfig fills the options left zero from the DAG's CONFIG file, or
// from HTCondor's defaults. A negative limit in opts means no limit.
func withConfig(dag *DAG, opts Options) (Options, error) {
	c := config.New()
	if dag.Config != "" {
		var err error
		if c, err = config.Load(dag.Config, nil); err != nil {
			return opts, fmt.Errorf("the DAG's CONFIG file: %w", err)
		}
	}
	limit := func(v *int, key string, def int64) error {
		if *v != 0 {
			return nil
		}
		n, err := c.Int(key, def)
		*v = int(n)
		return err
	}
	for _, l := range []struct {
		v   *int
		key string
		def int64
	}{
		{&opts.MaxJobs, "DAGMAN_MAX_JOBS_SUBMITTED", 0},
		{&opts.MaxIdle, "DAGMAN_MAX_JOBS_IDLE", 1000},
		{&opts.MaxPre, "DAGMAN_MAX_PRE_SCRIPTS", 20},
		{&opts.MaxPost, "DAGMAN_MAX_POST_SCRIPTS", 20},
	} {
		if err := limit(l.v, l.key, l.def); err != nil {
			return opts, fmt.Errorf("the DAG's CONFIG file: %w", err)
		}
	}
	if opts.PollInterval <= 0 {
		d, err := c.Duration("DAGMAN_USER_LOG_SCAN_INTERVAL", 5*time.Second)
		if err != nil {
			return opts, fmt.Errorf("the DAG's CONFIG file: %w", err)
		}
		if d <= 0 {
			d = 5 * time.Second
		}
		opts.PollInterval = d
	}
	if !opts.AlwaysRunPost {
		b, err := c.Bool("DAGMAN_ALWAYS_RUN_POST", false)
		if err != nil {
			return opts, fmt.Errorf("the DAG's CONFIG file: %w", err)
		}
		opts.AlwaysRunPost = b
	}
	return opts, nil
}
