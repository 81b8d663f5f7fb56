package iofs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// errLocalAddress refuses http names that point at the execute machine
// itself.
var errLocalAddress = errors.New("iofs: http names may not point at this machine")

// defaultHTTPClient reaches only addresses that are not the execute
// machine's own: iofs runs in the machine's network namespace, outside the
// job's container, and must not open the machine's local services to the
// job's owner (who chooses the names, through the shadow).
func defaultHTTPClient() *http.Client {
	d := &net.Dialer{Timeout: 30 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return err
		}
		ip, err := netip.ParseAddr(host)
		if err != nil || ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsUnspecified() {
			return fmt.Errorf("%w: %s", errLocalAddress, address)
		}
		return nil
	}}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = d.DialContext
	t.Proxy = nil
	return &http.Client{Transport: t}
}

// webErr turns a failed request into an errno.
func webErr(what, p string, err error) error {
	if errors.Is(err, errLocalAddress) {
		return fmt.Errorf("http %s %s: %v: %w", what, p, err, syscall.EACCES)
	}
	return fmt.Errorf("http %s %s: %v: %w", what, p, err, syscall.EIO)
}

// web is the backend of the "http" and "https" methods: read-only files
// read with range requests.
type web struct {
	readOnly
	scheme string
	client *http.Client
}

func (w *web) url(p string) string { return w.scheme + ":" + p }

// Requests are not abandoned when the job gets a signal; see call.
func (w *web) stat(ctx context.Context, p string) (Attr, error) {
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodHead, w.url(p), nil)
	if err != nil {
		return Attr{}, fmt.Errorf("http stat %s: %v: %w", p, err, syscall.EINVAL)
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return Attr{}, webErr("stat", p, err)
	}
	resp.Body.Close()
	if err := statusErr(resp); err != nil {
		return Attr{}, err
	}
	if resp.ContentLength < 0 {
		return Attr{}, fmt.Errorf("http stat %s: no length: %w", p, syscall.EIO)
	}
	a := Attr{Mode: unix.S_IFREG | 0o444, Nlink: 1, Size: uint64(resp.ContentLength)}
	a.Blocks = (a.Size + 511) / 512
	if t, err := http.ParseTime(resp.Header.Get("Last-Modified")); err == nil {
		a.Mtime = t.UnixNano()
	} else {
		a.Mtime = time.Now().UnixNano()
	}
	a.Atime, a.Ctime = a.Mtime, a.Mtime
	return a, nil
}

func statusErr(resp *http.Response) error {
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return syscall.ENOENT
	case resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusUnauthorized:
		return syscall.EACCES
	case resp.StatusCode >= 300:
		return fmt.Errorf("http: %s: %w", resp.Status, syscall.EIO)
	}
	return nil
}

func (w *web) open(ctx context.Context, p string, flags, _ uint32) (handle, Attr, error) {
	if flags&unix.O_ACCMODE != unix.O_RDONLY || flags&(unix.O_CREAT|unix.O_TRUNC) != 0 {
		return nil, Attr{}, syscall.EROFS
	}
	a, err := w.stat(ctx, p)
	if err != nil {
		return nil, Attr{}, err
	}
	return &webFile{w: w, url: w.url(p), attr: a}, a, nil
}

// webFile is a file read by range requests.
type webFile struct {
	w    *web
	url  string
	attr Attr
}

func (f *webFile) ReadAt(ctx context.Context, dest []byte, off int64) ([]byte, error) {
	size := int64(f.attr.Size)
	if off >= size || len(dest) == 0 {
		return nil, nil
	}
	end := min(off+int64(len(dest)), size)
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodGet, f.url, nil)
	if err != nil {
		return nil, syscall.EINVAL
	}
	req.Header.Set("Range", "bytes="+strconv.FormatInt(off, 10)+"-"+strconv.FormatInt(end-1, 10))
	resp, err := f.w.client.Do(req)
	if err != nil {
		return nil, webErr("read", f.url, err)
	}
	defer resp.Body.Close()
	if err := statusErr(resp); err != nil {
		return nil, err
	}
	body := io.Reader(resp.Body)
	if resp.StatusCode == http.StatusOK {
		// The server ignored the range: skip to it.
		if _, err := io.CopyN(io.Discard, body, off); err != nil {
			return nil, fmt.Errorf("http read %s: %v: %w", f.url, err, syscall.EIO)
		}
	}
	n, err := io.ReadFull(body, dest[:end-off])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("http read %s: %v: %w", f.url, err, syscall.EIO)
	}
	return dest[:n], nil
}

func (f *webFile) WriteAt(context.Context, []byte, int64) (int, error) { return 0, syscall.EBADF }
func (f *webFile) Truncate(context.Context, int64) error               { return syscall.EROFS }
func (f *webFile) Stat(context.Context) (Attr, error)                  { return f.attr, nil }
func (f *webFile) Flush(context.Context) error                         { return nil }
func (f *webFile) Sync(context.Context) error                          { return nil }
func (f *webFile) Close(context.Context) error                         { return nil }
