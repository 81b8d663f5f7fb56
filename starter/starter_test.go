package starter

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"harrier.dev/harrier/checkpoint"
	"harrier.dev/harrier/classad"
)

func TestSignalNumber(t *testing.T) {
	for in, want := range map[string]unix.Signal{
		"": unix.SIGTERM, "SIGTERM": unix.SIGTERM, "term": unix.SIGTERM, "SIGINT": unix.SIGINT,
		"KILL": unix.SIGKILL, "9": unix.SIGKILL, " SIGUSR1 ": unix.SIGUSR1, "nonsense": unix.SIGTERM, "99": unix.SIGTERM,
	} {
		if got := signalNumber(in); got != want {
			t.Errorf("signalNumber(%q) = %v, want %v", in, got, want)
		}
	}
}

// TestStoppingFor reads how a job is stopped: its kill_sig, and
// job_max_vacate_time as its grace time before SIGKILL.
func TestStoppingFor(t *testing.T) {
	for src, want := range map[string]stopping{
		`[ A = 1 ]`: {unix.SIGTERM, killGrace},
		`[ KillSig = "SIGINT"; JobMaxVacateTime = 60 ]`: {unix.SIGINT, time.Minute},
		`[ JobMaxVacateTime = 0 ]`:                      {unix.SIGTERM, 0},
		`[ JobMaxVacateTime = -1 ]`:                     {unix.SIGTERM, killGrace},
		`[ JobMaxVacateTime = "soon" ]`:                 {unix.SIGTERM, killGrace},
	} {
		ad, err := classad.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		if got := stoppingFor(ad); got != want {
			t.Errorf("stoppingFor(%s) = %+v, want %+v", src, got, want)
		}
	}
}

func TestWantCheckpoint(t *testing.T) {
	for src, want := range map[string]bool{
		`[ A = 1 ]`:                      true,
		`[ WantCheckpoint = true ]`:      true,
		`[ WantCheckpoint = false ]`:     false,
		`[ WantCheckpoint = undefined ]`: true,
	} {
		ad, err := classad.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		if got := wantCheckpoint(ad); got != want {
			t.Errorf("wantCheckpoint(%s) = %v, want %v", src, got, want)
		}
	}
}

func TestJobEnvKeepsTheJobsOwnLast(t *testing.T) {
	env := jobEnv([]string{"PATH=/opt/bin", "A=1", "OMP_NUM_THREADS=7"}, "/scratch", "/home/u/run", []string{"OMP_NUM_THREADS", "MKL_NUM_THREADS"}, 4)
	for _, kv := range []string{"_CONDOR_JOB_AD=/scratch/.job.ad", "_CONDOR_MACHINE_AD=/scratch/.machine.ad", "_CONDOR_JOB_IWD=/home/u/run", "MKL_NUM_THREADS=4"} {
		if !slices.Contains(env, kv) {
			t.Errorf("%s missing: %q", kv, env)
		}
	}
	// The job's own setting of a thread variable wins.
	if i, j := slices.Index(env, "OMP_NUM_THREADS=4"), slices.Index(env, "OMP_NUM_THREADS=7"); i < 0 || j < i {
		t.Errorf("job's OMP_NUM_THREADS does not override the slot's: %q", env)
	}
	if !slices.Contains(env, "_CONDOR_SCRATCH_DIR=/scratch") || !slices.Contains(env, "TMPDIR=/scratch") {
		t.Errorf("scratch variables missing: %q", env)
	}
	// A later entry wins when a program reads the environment, so the
	// job's own PATH must come after the default one.
	if i, j := slices.Index(env, "PATH=/usr/local/bin:/usr/bin:/bin"), slices.Index(env, "PATH=/opt/bin"); i < 0 || j < i {
		t.Errorf("job's PATH does not override the default: %q", env)
	}
}

func TestSpecCheckRequiresTheEssentials(t *testing.T) {
	for _, in := range []string{
		`{}`,
		`{"job_ad": "[A=1]"}`,
		`{"job_ad": "[A=1]", "shadow_addr": "h:1"}`,
		`{"job_ad": "[A=1]", "shadow_addr": "h:1", "shadow_fingerprint": "f1"}`,
	} {
		var s Spec
		if err := json.Unmarshal([]byte(in), &s); err != nil {
			t.Fatal(err)
		}
		if err := s.Check(); err == nil {
			t.Errorf("Check accepted an incomplete spec %s", in)
		}
	}
	s := Spec{JobAd: "[A=1]", ShadowAddr: "h:1", ShadowFingerprint: "f1", ScratchDir: "/s"}
	if err := s.Check(); err != nil {
		t.Errorf("Check(%+v) = %v", s, err)
	}
}

// TestSealFor binds a job's checkpoints to the pool's key and to the job
// as its startd was told it, and says why when it cannot: no key on the
// machine, a key file others can read, a job without an identity.
func TestSealFor(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "checkpoint.key")
	if err := checkpoint.CreateKeyFile(key); err != nil {
		t.Fatal(err)
	}
	ad := `[ GlobalJobId = "submit#1.0#1700000000"; Owner = "alice" ]`
	s, err := sealFor(&Spec{JobAd: ad, CheckpointKeyFile: key})
	if err != nil || s == nil {
		t.Fatalf("sealFor: %v", err)
	}
	open := filepath.Join(dir, "open.key")
	b, _ := os.ReadFile(key)
	if err := os.WriteFile(open, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, spec := range map[string]*Spec{
		"no key":          {JobAd: ad},
		"key others read": {JobAd: ad, CheckpointKeyFile: open},
		"missing key":     {JobAd: ad, CheckpointKeyFile: filepath.Join(dir, "gone.key")},
		"no GlobalJobId":  {JobAd: `[ Owner = "alice" ]`, CheckpointKeyFile: key},
		"no Owner":        {JobAd: `[ GlobalJobId = "submit#1.0#1700000000" ]`, CheckpointKeyFile: key},
	} {
		if s, err := sealFor(spec); err == nil || s != nil {
			t.Errorf("%s: sealFor = %v, %v; want an error", name, s, err)
		}
	}
}

// TestImageArea puts an image that fits in half the available memory on
// a tmpfs of its own, owner-only and gone with the area, and one of
// unknown size or too large on the disk beside the scratch directory.
func TestImageArea(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root (CI runs as root)")
	}
	base := t.TempDir()
	c := &checkpoints{scratch: filepath.Join(base, "scratch.slot1"), logger: slog.New(slog.DiscardHandler)}
	avail, err := memAvailable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		need     int64
		inMemory bool
	}{
		{"small", 1 << 20, true},
		{"unknown", 0, false},
		{"too-large", avail, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := c.newImageArea(context.Background(), "ckpt."+tc.name, tc.need)
			if err != nil {
				t.Fatal(err)
			}
			if filepath.Dir(a.dir) != base {
				t.Errorf("area %s is not beside the scratch directory", a.dir)
			}
			var st unix.Statfs_t
			if err := unix.Statfs(a.dir, &st); err != nil {
				t.Fatal(err)
			}
			if inMemory := st.Type == unix.TMPFS_MAGIC; inMemory != tc.inMemory {
				t.Errorf("image of %d bytes (%d available): in memory %v, want %v", tc.need, avail, inMemory, tc.inMemory)
			}
			if err := os.Mkdir(a.image(), 0o700); err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Stat(a.dir); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("area mode %v (%v), want 0700", fi.Mode().Perm(), err)
			}
			a.remove(c.logger)
			if _, err := os.Stat(a.dir); !os.IsNotExist(err) {
				t.Errorf("the area outlived its removal: %v", err)
			}
		})
	}
}

// coresize and stack_size become the job's limits; -1 is none; a value
// that is neither is left to the machine.
func TestJobRlimits(t *testing.T) {
	for _, tc := range []struct {
		ad   string
		want []Rlimit
	}{
		{`[ Cmd = "x" ]`, nil},
		{`[ CoreSize = 0 ]`, []Rlimit{{unix.RLIMIT_CORE, 0}}},
		{`[ CoreSize = -1; StackSize = 16777216 ]`, []Rlimit{{unix.RLIMIT_CORE, unix.RLIM_INFINITY}, {unix.RLIMIT_STACK, 16 << 20}}},
		{`[ CoreSize = -7; StackSize = "big" ]`, nil},
	} {
		ad, err := classad.Parse(tc.ad)
		if err != nil {
			t.Fatal(err)
		}
		if got := jobRlimits(ad); !slices.Equal(got, tc.want) {
			t.Errorf("%s: limits %v, want %v", tc.ad, got, tc.want)
		}
	}
}
