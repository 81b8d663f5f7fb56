package starter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/user"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"harrier.dev/harrier/asuser"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/transfer"
	"harrier.dev/harrier/transferplugin"
)

// holdCodeOutputDestination is HTCondor's code for an output that did
// not reach output_destination: the code of a failed transfer of the
// job's files, as HTCondor gives it.
const holdCodeOutputDestination = holdCodeInput

// jobUser is who the starter's transfer plugins run as, and who writes
// output to a file:// destination: the job's own user where the runner
// has one, else nobody. A starter that is not root can only be itself
// (nil).
func (s *Starter) jobUser() (*asuser.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	if r, ok := s.runner.(JobUserRunner); ok {
		uid, gid := r.JobUser()
		if uid != 0 {
			return &asuser.Credential{UID: uint32(uid), GID: uint32(gid), Groups: []uint32{}}, nil
		}
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, fmt.Errorf("no unprivileged user to run transfer plugins as: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("user nobody: %w", err)
	}
	return &asuser.Credential{UID: uint32(uid), GID: uint32(gid), Groups: []uint32{}}, nil
}

// execCredential is c for a child process; nil runs it as the starter.
func execCredential(c *asuser.Credential) *syscall.Credential {
	if c == nil {
		return nil
	}
	return &syscall.Credential{Uid: c.UID, Gid: c.GID, Groups: c.Groups}
}

// userPlugins are the job's own plugins (transfer_plugins = "scheme =
// file; ..."), by lower-case scheme: each came with its inputs, at the
// top of the scratch directory under its last path element.
func (x *fileTransfer) userPlugins() map[string]string {
	v, _ := x.job.EvalString("TransferPlugins")
	m := map[string]string{}
	for pair := range strings.SplitSeq(v, ";") {
		schemes, file, ok := strings.Cut(pair, "=")
		if !ok || strings.TrimSpace(file) == "" {
			continue
		}
		for s := range strings.SplitSeq(schemes, ",") {
			if s = strings.ToLower(strings.TrimSpace(s)); s != "" {
				m[s] = filepath.Join(x.scratch, filepath.Base(strings.TrimSpace(file)))
			}
		}
	}
	return m
}

// pluginFor is the plugin for URLs of scheme: the job's own, else the
// machine's; "" for the starter's built-in file and http(s).
func (x *fileTransfer) pluginFor(scheme string) (string, error) {
	scheme = strings.ToLower(scheme)
	if p, ok := x.userPlugins()[scheme]; ok {
		return p, nil
	}
	if p, ok := x.plugins[scheme]; ok {
		return p, nil
	}
	if transferplugin.Builtin(scheme) {
		return "", nil
	}
	return "", fmt.Errorf("no transfer plugin for %s:// URLs on this machine", scheme)
}

// letUserWrite gives the top of the scratch directory to the job's user,
// so that a plugin running as that user may write there, and nowhere
// root alone may.
func (x *fileTransfer) letUserWrite() error {
	if x.user == nil {
		return nil
	}
	return os.Chown(x.scratch, int(x.user.UID), int(x.user.GID))
}

// letUserRun gives the job's own plugins, received as root with the
// job's inputs, to the job's user, who runs them.
func (x *fileTransfer) letUserRun(root *os.Root) error {
	if x.user == nil {
		return nil
	}
	for _, p := range x.userPlugins() {
		name := filepath.Base(p)
		st, err := root.Lstat(name)
		if err != nil {
			return fmt.Errorf("transfer plugin %s: %w", name, err)
		}
		if !st.Mode().IsRegular() {
			return fmt.Errorf("transfer plugin %s: not a regular file", name)
		}
		if err := root.Lchown(name, int(x.user.UID), int(x.user.GID)); err != nil {
			return fmt.Errorf("transfer plugin %s: %w", name, err)
		}
	}
	return nil
}

// fetchURLs puts the URL inputs at the top of the scratch directory under
// their last path elements: through a plugin for its schemes, in one run
// of each plugin, or by the starter. The error names the URL.
func (x *fileTransfer) fetchURLs(ctx context.Context, root *os.Root, urls []string) (int, int64, error) {
	var (
		n     int
		size  int64
		byRun = map[string][]transferplugin.File{}
		order []string
	)
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			return n, size, &transferplugin.FileError{URL: raw, Err: err}
		}
		plugin, err := x.pluginFor(u.Scheme)
		if err != nil {
			return n, size, &transferplugin.FileError{URL: raw, Err: err}
		}
		if plugin == "" {
			b, err := fetchURL(ctx, root, raw)
			if err != nil {
				return n, size, &transferplugin.FileError{URL: raw, Err: err}
			}
			n, size = n+1, size+b
			continue
		}
		name := path.Base(u.Path)
		if name == "/" || name == "." || name == "" {
			return n, size, &transferplugin.FileError{URL: raw, Err: errors.New("the URL names no file")}
		}
		if _, ok := byRun[plugin]; !ok {
			order = append(order, plugin)
		}
		byRun[plugin] = append(byRun[plugin], transferplugin.File{URL: raw, LocalFile: filepath.Join(x.scratch, name)})
	}
	if len(order) > 0 {
		if err := x.letUserWrite(); err != nil {
			return n, size, fmt.Errorf("scratch directory: %w", err)
		}
		if err := x.letUserRun(root); err != nil {
			return n, size, err
		}
	}
	for _, plugin := range order {
		res, err := transferplugin.Run(ctx, plugin, x.scratch, execCredential(x.user), false, byRun[plugin])
		if err != nil {
			return n, size, err
		}
		for _, r := range res {
			n, size = n+1, size+r.Bytes
		}
	}
	return n, size, nil
}

// outputFiles expands the items of outputItems into the regular files
// under them, each with its name at the destination. Links are not
// followed (and not sent).
func outputFiles(root *os.Root, items [][2]string) ([][2]string, error) {
	var files [][2]string
	for _, it := range items {
		err := fs.WalkDir(root.FS(), filepath.ToSlash(it[0]), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.Type().IsRegular() {
				if !d.IsDir() {
					return &transfer.FileError{Name: p, Err: transfer.ErrEscape}
				}
				return nil
			}
			rel := strings.TrimPrefix(strings.TrimPrefix(p, filepath.ToSlash(it[0])), "/")
			as := path.Join(it[1], rel)
			if as == "" || as == "." {
				as = path.Base(p)
			}
			files = append(files, [2]string{p, as})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return files, nil
}

// toDestination sends the job's outputs to output_destination instead of
// home, under their names there after transfer_output_remaps: a file:// directory of this machine, written as the job's user;
// an http(s):// URL, one PUT a file; or a plugin's scheme, in one upload.
// The error names the file.
func (x *fileTransfer) toDestination(ctx context.Context, root *os.Root, dest string, items [][2]string) (int, int64, error) {
	files, err := outputFiles(root, items)
	if err != nil {
		return 0, 0, err
	}
	if rename := transfer.OutputRemaps(x.job.EvalString("TransferOutputRemaps")); rename != nil {
		for i := range files {
			files[i][1] = rename(files[i][1])
		}
	}
	u, err := url.Parse(dest)
	if err != nil {
		return 0, 0, fmt.Errorf("output_destination %s: %w", dest, err)
	}
	base := strings.TrimSuffix(dest, "/")
	plugin, err := x.pluginFor(u.Scheme)
	if err != nil {
		return 0, 0, &transferplugin.FileError{URL: dest, Err: err}
	}
	var size int64
	if plugin != "" {
		list := make([]transferplugin.File, len(files))
		for i, f := range files {
			list[i] = transferplugin.File{URL: base + "/" + f[1], LocalFile: filepath.Join(x.scratch, f[0])}
		}
		if err := x.letUserWrite(); err != nil {
			return 0, 0, err
		}
		// The plugin reads them as the job's user: the starter's own
		// (its standard output and error) become that user's.
		for _, f := range files {
			if x.user != nil {
				if err := root.Lchown(f[0], int(x.user.UID), int(x.user.GID)); err != nil {
					return 0, 0, &transfer.FileError{Name: f[0], Err: err}
				}
			}
		}
		res, err := transferplugin.Run(ctx, plugin, x.scratch, execCredential(x.user), true, list)
		if err != nil {
			return 0, 0, err
		}
		for _, r := range res {
			size += r.Bytes
		}
		return len(files), size, nil
	}
	for _, f := range files {
		var n int64
		var err error
		switch strings.ToLower(u.Scheme) {
		case "file":
			n, err = x.putFile(root, f[0], filepath.Join(u.Path, filepath.FromSlash(f[1])))
		default:
			n, err = putHTTP(ctx, root, f[0], base+"/"+(&url.URL{Path: f[1]}).EscapedPath())
		}
		if err != nil {
			return 0, 0, &transfer.FileError{Name: f[0], Err: err}
		}
		size += n
	}
	return len(files), size, nil
}

// stdioItems are the job's spooled standard output and error, under the
// names of its output and error files, for output_destination, where
// HTCondor sends them too.
func (sp *outputSpool) stdioItems(job *classad.ClassAd) [][2]string {
	if sp == nil {
		return nil
	}
	var items [][2]string
	for fd, attr := range map[int]string{1: "Out", 2: "Err"} {
		name, _ := job.EvalString(attr)
		if !sp.spooled[fd] || name == "" || name == os.DevNull {
			continue
		}
		items = append(items, [2]string{spoolNames[fd], filepath.Base(name)})
	}
	slices.SortFunc(items, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	return items
}

// putFile copies a file of the scratch directory to dst, as the job's
// user: into a temporary name beside it, then renamed, so that no partial
// file is seen under its name.
func (x *fileTransfer) putFile(root *os.Root, name, dst string) (int64, error) {
	src, err := openRegular(root, name, os.O_RDONLY)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	var cred asuser.Credential
	if x.user != nil {
		cred = *x.user
	}
	tmp := dst + ".harrier-part"
	var n int64
	// The copy runs with the user's identity on one thread: parents made
	// and the file written as the user, through no link of another's.
	err = asuser.Do(cred, func() error {
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
		if err != nil {
			return err
		}
		if n, err = io.Copy(f, src); err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp, dst)
		}
		if err != nil {
			os.Remove(tmp)
		}
		return err
	})
	return n, err
}

// putHTTP uploads a file of the scratch directory with an HTTP PUT.
func putHTTP(ctx context.Context, root *os.Root, name, dst string) (int64, error) {
	f, err := openRegular(root, name, os.O_RDONLY)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, urlTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, dst, f)
	if err != nil {
		return 0, err
	}
	req.ContentLength = st.Size()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return 0, fmt.Errorf("PUT %s: %s", dst, resp.Status)
	}
	return st.Size(), nil
}
