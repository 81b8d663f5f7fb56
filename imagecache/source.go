package imagecache

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// ErrNoImage reports a source that holds no image for this machine.
var ErrNoImage = errors.New("no image")

// Errors of a registry, as a job's hold reason tells them apart.
var (
	// ErrNotInRegistry: the registry answered, and has no such image.
	ErrNotInRegistry = errors.New("the registry has no such image")
	// ErrRegistryUnreachable: the registry did not answer.
	ErrRegistryUnreachable = errors.New("the registry does not answer")
	// ErrRegistryDenied: the registry wants credentials, or refused the
	// ones given.
	ErrRegistryDenied = errors.New("the registry refused access to the image")
)

// Registries is how this machine reaches image registries.
type Registries struct {
	// CAFile names a PEM file of certificate authorities whose
	// registries' certificates are trusted besides the system's.
	CAFile string
	// Auth is what the job's submitter gave for the image's registry;
	// nil: none, the pull is anonymous. It is only ever held in memory.
	Auth *authn.AuthConfig
}

// Open reads the image named by ref: a path to an OCI image layout
// directory or a docker-save tarball, or else a registry reference
// ("registry/name:tag", "name@sha256:…", "docker://…"). Nothing is
// fetched but the manifest and configuration. A registry's failure
// wraps ErrNotInRegistry, ErrRegistryUnreachable or ErrRegistryDenied
// where it is one of those.
func Open(ctx context.Context, ref string, reg Registries) (v1.Image, error) {
	if filepath.IsAbs(ref) {
		return openPath(ref)
	}
	r, err := name.ParseReference(strings.TrimPrefix(ref, "docker://"))
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", ref, err)
	}
	var tr http.RoundTripper = remote.DefaultTransport
	if reg.CAFile != "" {
		if tr, err = caTransport(reg.CAFile); err != nil {
			return nil, err
		}
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithTransport(httpsOnly{tr}),
		remote.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH})}
	if reg.Auth != nil {
		opts = append(opts, remote.WithAuth(authn.FromConfig(*reg.Auth)))
	}
	img, err := remote.Image(r, opts...)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", ref, registryError(err))
	}
	return img, nil
}

// caTransport is the default transport trusting the certificate
// authorities in caFile too.
func caTransport(caFile string) (http.RoundTripper, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("registry certificate authorities: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("registry certificate authorities: no certificate in %s", caFile)
	}
	tr := remote.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return tr, nil
}

// httpsOnly refuses plain HTTP. go-containerregistry falls back to it
// for registries on private and loopback addresses, where a user's
// credentials would then travel in the clear.
type httpsOnly struct{ rt http.RoundTripper }

func (h httpsOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" {
		return nil, fmt.Errorf("%s: registries are reached over HTTPS only", req.URL.Redacted())
	}
	return h.rt.RoundTrip(req)
}

// registryError wraps err with the sentinel that says what went wrong,
// where it can tell.
func registryError(err error) error {
	var te *transport.Error
	if errors.As(err, &te) {
		switch {
		case te.StatusCode == http.StatusNotFound:
			return fmt.Errorf("%w: %w", ErrNotInRegistry, err)
		case te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden:
			return fmt.Errorf("%w: %w", ErrRegistryDenied, err)
		}
		for _, d := range te.Errors {
			switch d.Code {
			case transport.ManifestUnknownErrorCode, transport.NameUnknownErrorCode:
				return fmt.Errorf("%w: %w", ErrNotInRegistry, err)
			case transport.UnauthorizedErrorCode, transport.DeniedErrorCode:
				return fmt.Errorf("%w: %w", ErrRegistryDenied, err)
			}
		}
		return err
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", ErrRegistryUnreachable, err)
	}
	return err
}

// openPath reads an image from a layout directory (its index's first
// image for this machine) or a docker-save tarball holding one image.
func openPath(p string) (v1.Image, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", p, err)
	}
	if !st.IsDir() {
		img, err := tarball.ImageFromPath(p, nil)
		if err != nil {
			return nil, fmt.Errorf("image tarball %s: %w", p, err)
		}
		return img, nil
	}
	idx, err := layout.ImageIndexFromPath(p)
	if err != nil {
		return nil, fmt.Errorf("image layout %s: %w", p, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("image layout %s: %w", p, err)
	}
	for _, d := range m.Manifests {
		if !d.MediaType.IsImage() {
			continue
		}
		if d.Platform != nil && (d.Platform.OS != "linux" || d.Platform.Architecture != runtime.GOARCH) {
			continue
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			return nil, fmt.Errorf("image layout %s: %w", p, err)
		}
		return img, nil
	}
	return nil, fmt.Errorf("image layout %s: %w for linux/%s", p, ErrNoImage, runtime.GOARCH)
}
