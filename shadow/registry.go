package shadow

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/docker/cli/cli/config"
	"github.com/google/go-containerregistry/pkg/name"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/wire"
)

// A job's container image may be in a registry that wants credentials.
// They are its owner's, where docker, podman's docker mode and crane keep
// them: ~/.docker/config.json (or a credential helper it names). The
// shadow, running as the owner, reads them when the starter asks, for
// the registry of the job's own image only, and sends them over the
// starter's TLS session; they are written nowhere on the way, neither
// in the job's ad nor in the spool nor on the execute machine.

// RegistryCredentials answers the starter with the owner's credentials
// for the registry of the job's image.
func (v *service) RegistryCredentials(_ context.Context, req *wire.RegistryCredentialsRequest) (*wire.RegistryCredentialsReply, error) {
	s := v.s
	if !s.checkSecret(req.Secret) {
		return nil, status.Error(codes.PermissionDenied, errBadSecret.Error())
	}
	ref, _ := s.job.EvalString("ContainerImage")
	if ref == "" {
		ref, _ = s.job.EvalString("DockerImage")
	}
	if ref == "" || filepath.IsAbs(ref) {
		return nil, status.Error(codes.FailedPrecondition, "the job names no registry image")
	}
	r, err := name.ParseReference(strings.TrimPrefix(ref, "docker://"))
	if err != nil {
		return nil, status.Error(codes.FailedPrecondition, fmt.Sprintf("the job's image %s: %v", ref, err))
	}
	u, err := user.LookupId(strconv.Itoa(os.Getuid()))
	if err != nil {
		return nil, status.Error(codes.Internal, fmt.Sprintf("look up the job's owner: %v", err))
	}
	reply, err := dockerCredentials(filepath.Join(u.HomeDir, ".docker"), r.Context().RegistryStr())
	if err != nil {
		s.logger.Warn("cannot read the owner's registry credentials", "registry", r.Context().RegistryStr(), "err", err)
		return nil, status.Error(codes.Internal, err.Error())
	}
	s.logger.Info("registry credentials asked for", "registry", r.Context().RegistryStr(), "found", reply.Found)
	return reply, nil
}

// dockerCredentials reads the credentials for registry from the docker
// configuration directory dir (a user's ~/.docker).
func dockerCredentials(dir, registry string) (*wire.RegistryCredentialsReply, error) {
	if _, err := os.Stat(filepath.Join(dir, config.ConfigFileName)); errors.Is(err, fs.ErrNotExist) {
		return &wire.RegistryCredentialsReply{}, nil
	}
	cf, err := config.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, config.ConfigFileName), err)
	}
	// Docker keeps Docker Hub's under its old index address.
	key := registry
	if registry == name.DefaultRegistry {
		key = "https://index.docker.io/v1/"
	}
	ac, err := cf.GetAuthConfig(key)
	if err != nil {
		return nil, fmt.Errorf("registry credentials for %s: %w", registry, err)
	}
	found := ac.Username != "" || ac.Password != "" || ac.Auth != "" || ac.IdentityToken != "" || ac.RegistryToken != ""
	return &wire.RegistryCredentialsReply{Found: found, Username: ac.Username, Password: ac.Password, Auth: ac.Auth,
		IdentityToken: ac.IdentityToken, RegistryToken: ac.RegistryToken}, nil
}
