package starter

import (
	"encoding/json"
	"fmt"
	"io"
)

// Spec is what a startd tells a starter about a job: which job, where its
// shadow is, and where the starter may work. The startd writes it as JSON on
// the starter's standard input.
type Spec struct {
	// Slot is the slot name ("slot1@host") the job runs in.
	Slot string `json:"slot"`
	// Host is the execute machine's name, reported to the shadow.
	Host string `json:"host"`
	// ClaimID identifies the claim the job runs under.
	ClaimID string `json:"claim_id"`
	// JobAd is the job's ad in new ClassAd syntax, as the agent sent it.
	JobAd string `json:"job_ad"`
	// ShadowAddr and Secret are how the starter finds and proves itself to
	// the job's shadow; ShadowFingerprint is the SHA-256 of the shadow's
	// session certificate, the only one the starter accepts (a shadow has
	// no pool certificate: see pki.Session).
	ShadowAddr        string `json:"shadow_addr"`
	ShadowFingerprint string `json:"shadow_fingerprint"`
	Secret            string `json:"secret"`
	// ScratchDir is an empty directory owned by this job; the startd
	// removes it after the starter exits.
	ScratchDir string `json:"scratch_dir"`
	// Sandbox says how the job runs: "container" (the sandbox package)
	// or "process" (a plain child process, where containers are not
	// available). The startd chooses and advertises its choice.
	Sandbox string `json:"sandbox,omitempty"`
	// ScratchLimitKB caps the job's scratch directory whatever its
	// request (KiB; 0: no cap): the slot's share of the machine's disk or
	// the administrator's limit.
	ScratchLimitKB int64 `json:"scratch_limit_kb,omitempty"`
	// Reusable says that the startd may give the starter the claim's next
	// job: once a job has ended, the starter writes a line on its standard
	// output and reads the next job's spec from its standard input, until
	// that ends.
	Reusable bool `json:"reusable,omitempty"`
	// TLS material of the execute host, signed by the pool CA.
	CertFile string `json:"cert_file"`
	KeyFile  string `json:"key_file"`
	CAFile   string `json:"ca_file"`
	// CheckpointKeyFile is the pool's checkpoint key (see
	// checkpoint.LoadKey), which every execute machine of the pool
	// shares and no user holds: the starter seals the job's checkpoint
	// images with it and restores only images sealed with it for the
	// same job. Empty: this machine takes and restores no checkpoints.
	CheckpointKeyFile string `json:"checkpoint_key_file,omitempty"`
}

// ReadSpec decodes the next Spec from dec and checks that the fields a
// starter cannot work without are present. At the end of the stream it
// returns io.EOF.
func ReadSpec(dec *json.Decoder) (*Spec, error) {
	var s Spec
	if err := dec.Decode(&s); err != nil {
		if err == io.EOF {
			return nil, err
		}
		return nil, fmt.Errorf("read starter spec: %w", err)
	}
	switch {
	case s.JobAd == "":
		return nil, fmt.Errorf("starter spec: no job ad")
	case s.ShadowAddr == "" || s.ShadowFingerprint == "":
		return nil, fmt.Errorf("starter spec: no shadow address or fingerprint")
	case s.ScratchDir == "":
		return nil, fmt.Errorf("starter spec: no scratch directory")
	}
	return &s, nil
}

// Write encodes the spec for a starter's standard input.
func (s *Spec) Write(w io.Writer) error {
	return json.NewEncoder(w).Encode(s)
}
