package shadow

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"
)

// The owner's docker configuration gives the credentials of the one
// registry asked for, Docker Hub's under its old index address; no
// configuration, or no entry, gives none.
func TestDockerCredentials(t *testing.T) {
	dir := t.TempDir()
	if r, err := dockerCredentials(dir, "reg.example:5000"); err != nil || r.Found {
		t.Errorf("without a configuration: %v, %v", r, err)
	}
	auth := base64.StdEncoding.EncodeToString([]byte("alice:pw1"))
	conf := `{"auths": {"reg.example:5000": {"auth": "` + auth + `"}, "https://index.docker.io/v1/": {"username": "al", "password": "pw2"}}}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := dockerCredentials(dir, "reg.example:5000")
	if err != nil || !r.Found || r.Username != "alice" || r.Password != "pw1" {
		t.Errorf("reg.example:5000: %+v, %v", r, err)
	}
	r, err = dockerCredentials(dir, "index.docker.io")
	if err != nil || !r.Found || r.Username != "al" || r.Password != "pw2" {
		t.Errorf("Docker Hub: %+v, %v", r, err)
	}
	if r, err := dockerCredentials(dir, "other.example"); err != nil || r.Found {
		t.Errorf("another registry: %+v, %v", r, err)
	}
}
