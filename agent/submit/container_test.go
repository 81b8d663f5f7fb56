package submit

import (
	"path/filepath"
	"strings"
	"testing"
)

// A container universe job names its image, a file made absolute from
// the initial directory or a docker:// reference, and requires a machine
// that runs container jobs; a docker universe job names a registry
// image and requires HasDocker; container_image alone is enough.
func TestContainerUniverse(t *testing.T) {
	env := testEnv(t, map[string]string{"img.tar": "x"})
	for _, tc := range []struct {
		name, src, attr, want, req string
	}{
		{"container file", "universe = container\ncontainer_image = ./img.tar\n", "ContainerImage", filepath.Join(env.Dir, "img.tar"), "TARGET.HasContainer"},
		{"container alone", "container_image = img.tar\n", "ContainerImage", filepath.Join(env.Dir, "img.tar"), "TARGET.HasContainer"},
		{"container registry", "universe = container\ncontainer_image = docker://debian:12\n", "ContainerImage", "docker://debian:12", "TARGET.HasContainer"},
		{"docker", "universe = docker\ndocker_image = debian:12\n", "DockerImage", "debian:12", "TARGET.HasDocker"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ads := jobsOf(t, tc.src+"executable = job.sh\nqueue\n", env)
			if got, _ := ads[0].EvalString(tc.attr); got != tc.want {
				t.Errorf("%s = %q, want %q", tc.attr, got, tc.want)
			}
			want := "WantContainer"
			if tc.attr == "DockerImage" {
				want = "WantDocker"
			}
			if b, _ := ads[0].EvalBool(want); !b {
				t.Errorf("%s not true", want)
			}
			if u, _ := ads[0].EvalInt("JobUniverse"); u != 5 {
				t.Errorf("JobUniverse %d", u)
			}
			if req, _ := ads[0].Lookup("Requirements"); !strings.Contains(req.String(), tc.req) {
				t.Errorf("Requirements %s lacks %s", req, tc.req)
			}
		})
	}
	for _, tc := range []struct{ name, src, want string }{
		{"no image", "universe = container\n", "universe = container needs container_image"},
		{"no docker image", "universe = docker\n", "universe = docker needs docker_image"},
		{"missing file", "universe = container\ncontainer_image = nothere.tar\n", "container_image nothere.tar: no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Parse([]byte(tc.src+"executable = job.sh\nqueue\n"), "job.sub", env)
			if err == nil {
				_, err = d.Jobs(1, env)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
