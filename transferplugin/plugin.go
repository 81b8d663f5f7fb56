// Package transferplugin runs HTCondor file transfer plugins: programs
// that move files to and from URLs of a scheme the starter does not know
// itself.
//
// A plugin tells what it can do when run with -classad (Query): an ad
// with SupportedMethods, the URL schemes it handles, MultipleFileSupport
// and PluginVersion. It then moves files with the multiple-file protocol
// (Run): "plugin -infile IN -outfile OUT [-upload]", where IN holds one
// ad a file, with Url and LocalFileName, and the plugin writes to OUT one
// ad a file with TransferSuccess, TransferError, TransferUrl,
// TransferFileName and TransferTotalBytes, and exits 0 only if every file
// moved. Ads are read and written in old ClassAd syntax, separated by a
// blank line; result ads in new syntax ("[ ... ]") are read too.
//
// Plugins are programs of the execute machine's administrator or of the
// job's submitter: both run with the credential they are given, never
// the caller's root, and may write only beneath the directory they are
// given (see confine.go), where the kernel has Landlock.
package transferplugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"harrier.dev/harrier/classad"
)

// Builtin are the schemes the starter moves itself.
var builtin = []string{"file", "http", "https"}

// Builtin reports whether the starter moves URLs of scheme itself.
func Builtin(scheme string) bool { return slices.Contains(builtin, strings.ToLower(scheme)) }

// queryTimeout bounds a plugin's answer to -classad.
const queryTimeout = 20 * time.Second

// A Plugin is a transfer plugin program and what it said it supports.
type Plugin struct {
	Path string
	// Methods are the URL schemes it handles, lower case.
	Methods []string
	// MultipleFile is MultipleFileSupport: it takes -infile and -outfile.
	MultipleFile bool
	Version      string
}

// Query runs path -classad as cred (nil: the caller's own) and reads its
// capabilities.
func Query(ctx context.Context, path string, cred *syscall.Credential) (Plugin, error) {
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "-classad")
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	cmd.SysProcAttr = procAttr(cred)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := runConfined(cmd, nil, "")
	out := stdout.Bytes()
	if err != nil {
		return Plugin{}, fmt.Errorf("ask transfer plugin %s its capabilities: %w: %s", path, err, strings.TrimSpace(stderr.String()))
	}
	ads, err := parseAds(string(out))
	if err != nil || len(ads) == 0 {
		return Plugin{}, fmt.Errorf("transfer plugin %s -classad: no ad in its output: %v", path, err)
	}
	ad := ads[0]
	p := Plugin{Path: path}
	methods, _ := ad.EvalString("SupportedMethods")
	for m := range strings.SplitSeq(methods, ",") {
		if m = strings.ToLower(strings.TrimSpace(m)); m != "" {
			p.Methods = append(p.Methods, m)
		}
	}
	if len(p.Methods) == 0 {
		return Plugin{}, fmt.Errorf("transfer plugin %s supports no method (SupportedMethods)", path)
	}
	p.MultipleFile, _ = ad.EvalBool("MultipleFileSupport")
	p.Version, _ = ad.EvalString("PluginVersion")
	return p, nil
}

// A File is one file to move: from Url to LocalFileName (a download), or
// from LocalFileName to Url (an upload).
type File struct {
	URL       string
	LocalFile string
}

// A Result is what the plugin said of one file.
type Result struct {
	URL      string
	FileName string
	Success  bool
	Error    string
	Bytes    int64
}

// FileError is a file the plugin did not move, with its reason.
type FileError struct {
	URL string
	Err error
}

func (e *FileError) Error() string { return fmt.Sprintf("%s: %v", e.URL, e.Err) }
func (e *FileError) Unwrap() error { return e.Err }

// Run moves files with the plugin at path, run as cred in dir, which must
// be a directory the plugin may write: its -infile and -outfile are
// there, under names starting ".harrier". The plugin reads nothing else
// of dir's parent (the execute directory, with the other jobs' scratch
// directories). It returns the plugin's results; the error names the
// first file that did not move.
func Run(ctx context.Context, path, dir string, cred *syscall.Credential, upload bool, files []File) ([]Result, error) {
	work, err := os.MkdirTemp(dir, ".harrier-plugin-")
	if err != nil {
		return nil, fmt.Errorf("transfer plugin %s: %w", path, err)
	}
	defer os.RemoveAll(work)
	if cred != nil {
		if err := os.Chown(work, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("transfer plugin %s: %w", path, err)
		}
	}
	in, out := filepath.Join(work, "in"), filepath.Join(work, "out")
	var b strings.Builder
	for _, f := range files {
		ad := classad.New()
		ad.SetString("Url", f.URL)
		ad.SetString("LocalFileName", f.LocalFile)
		b.WriteString(ad.MarshalOld())
		b.WriteString("\n")
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		return nil, fmt.Errorf("transfer plugin %s: write its input: %w", path, err)
	}
	args := []string{"-infile", in, "-outfile", out}
	if upload {
		args = append(args, "-upload")
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "TMPDIR=" + dir, "_CONDOR_SCRATCH_DIR=" + dir}
	cmd.SysProcAttr = procAttr(cred)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	runErr := runConfined(cmd, []string{dir}, filepath.Dir(dir))
	// The outfile is the plugin's: read it through no link it put there.
	var text []byte
	if root, err := os.OpenRoot(work); err == nil {
		text, _ = root.ReadFile("out")
		root.Close()
	}
	ads, _ := parseAds(string(text))
	results := make([]Result, 0, len(ads))
	for _, ad := range ads {
		r := Result{}
		r.URL, _ = ad.EvalString("TransferUrl")
		r.FileName, _ = ad.EvalString("TransferFileName")
		r.Success, _ = ad.EvalBool("TransferSuccess")
		r.Error, _ = ad.EvalString("TransferError")
		r.Bytes, _ = ad.EvalInt("TransferTotalBytes")
		results = append(results, r)
	}
	for _, r := range results {
		if !r.Success {
			name := r.URL
			if name == "" {
				name = r.FileName
			}
			msg := r.Error
			if msg == "" {
				msg = "the transfer plugin reported a failure"
			}
			return results, &FileError{URL: name, Err: errors.New(msg)}
		}
	}
	if runErr != nil || len(results) < len(files) {
		name := ""
		if len(files) > 0 {
			name = files[min(len(results), len(files)-1)].URL
		}
		if runErr == nil {
			runErr = errors.New("no result for the file")
		}
		return results, &FileError{URL: name, Err: fmt.Errorf("transfer plugin %s: %w: %s", filepath.Base(path), runErr, strings.TrimSpace(stderr.String()))}
	}
	return results, nil
}

// parseAds reads ads in old syntax separated by blank lines, or in new
// syntax one after another.
func parseAds(text string) ([]*classad.ClassAd, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, nil
	}
	var ads []*classad.ClassAd
	if strings.HasPrefix(text, "[") {
		for _, src := range splitNew(text) {
			ad, err := classad.Parse(src)
			if err != nil {
				return ads, err
			}
			ads = append(ads, ad)
		}
		return ads, nil
	}
	for block := range strings.SplitSeq(strings.ReplaceAll(text, "\r\n", "\n"), "\n\n") {
		if strings.TrimSpace(block) == "" {
			continue
		}
		ad, err := classad.ParseOld(block)
		if err != nil {
			return ads, err
		}
		ads = append(ads, ad)
	}
	return ads, nil
}

// splitNew splits ads in new syntax at their outer brackets, skipping
// brackets in strings.
func splitNew(text string) []string {
	var out []string
	depth, start, inStr := 0, -1, false
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case inStr && c == '\\':
			i++
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '[':
			if depth == 0 {
				start = i
			}
			depth++
		case c == ']':
			depth--
			if depth == 0 && start >= 0 {
				out = append(out, text[start:i+1])
				start = -1
			}
		}
	}
	return out
}

// Methods maps each scheme to the first plugin that handles it.
func Methods(plugins []Plugin) map[string]string {
	m := make(map[string]string)
	for _, p := range plugins {
		for _, s := range p.Methods {
			if _, ok := m[s]; !ok {
				m[s] = p.Path
			}
		}
	}
	return m
}

// Advertised is HasFileTransferPluginMethods: the built-in schemes and
// the plugins', sorted, comma-separated.
func Advertised(methods map[string]string) string {
	all := slices.Clone(builtin)
	for s := range methods {
		if !slices.Contains(all, s) {
			all = append(all, s)
		}
	}
	slices.Sort(all)
	return strings.Join(all, ",")
}

// procAttr is how a plugin is started, as cred (nil: the caller's own
// user). Started by root, it is the first process of a process
// namespace of its own, so that when it ends the kernel ends whatever
// it started and left running: nothing of it outlives its run.
func procAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() == 0 {
		a.Cloneflags = syscall.CLONE_NEWPID
	}
	return a
}

// runConfined runs cmd on an OS thread of its own whose writes, and its
// children's, are confined to dirs, and its reads kept out of hide but
// for dirs (see confine). The thread is
// never unlocked: it keeps the restriction, and ends with the goroutine.
// It lives until cmd has exited, since a child's parent-death signal
// follows the thread that started it.
func runConfined(cmd *exec.Cmd, dirs []string, hide string) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := confine(dirs, []string{os.DevNull}, hide); err != nil && !errors.Is(err, ErrNoLandlock) {
			done <- fmt.Errorf("confine the plugin: %w", err)
			return
		}
		done <- cmd.Run()
	}()
	return <-done
}
