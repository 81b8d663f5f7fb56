package checkpoint

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
	"unsafe"

	"github.com/opencontainers/runc/libcontainer"
	"golang.org/x/sys/unix"
)

// ErrNoPreCopy reports that CRIU cannot track dirty memory here (the
// kernel has no soft-dirty bits), so there are no pre-dumps: every dump
// is a full one.
var ErrNoPreCopy = errors.New("pre-copy is not supported on this machine")

// Features are the optional CRIU capabilities of this machine.
type Features struct {
	// PreCopy is dirty-memory tracking, which iterative pre-dumps need.
	PreCopy bool
}

// Probe finds which optional features this machine has for CRIU. It
// looks at the kernel itself rather than running "criu check --feature
// mem_dirty_track", which starts a process that probes the whole kernel
// (kerndat) to answer: the bit CRIU's pre-dumps rely on is read here in
// a few microseconds.
func Probe(ctx context.Context) (Features, error) {
	if err := ctx.Err(); err != nil {
		return Features{}, fmt.Errorf("probe: %w", err)
	}
	ok, err := softDirty()
	if err != nil {
		return Features{}, fmt.Errorf("probe soft-dirty tracking: %w", err)
	}
	return Features{PreCopy: ok}, nil
}

// softDirty reports whether the kernel tracks soft-dirty pages, which
// CRIU's pre-dumps need (CONFIG_MEM_SOFT_DIRTY): it clears this process's
// soft-dirty bits, as CRIU does before a pre-dump, writes a fresh page and
// reads the page's soft-dirty bit (55) in /proc/self/pagemap, which only a
// tracking kernel sets.
func softDirty() (bool, error) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("4"), 0); err != nil {
		if errors.Is(err, unix.EINVAL) {
			return false, nil
		}
		return false, err
	}
	size := os.Getpagesize()
	page, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return false, err
	}
	defer unix.Munmap(page)
	page[0] = 1
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return false, err
	}
	defer f.Close()
	var entry [8]byte
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(page)))
	if _, err := f.ReadAt(entry[:], int64(addr/uintptr(size))*8); err != nil {
		return false, err
	}
	return binary.LittleEndian.Uint64(entry[:])&(1<<55) != 0, nil
}

// PreDump copies the job's memory into opts.ImageDir while the job keeps
// running, freezing it only long enough to start tracking dirty pages.
// A later PreDump or Dump with Parent set to this image directory then
// writes only the pages dirtied since, so the final freeze is short.
// Where f.PreCopy is false it returns ErrNoPreCopy and does nothing.
func PreDump(ctx context.Context, c *libcontainer.Container, f Features, opts DumpOptions) (*Result, error) {
	if !f.PreCopy {
		return nil, fmt.Errorf("pre-dump: %w", ErrNoPreCopy)
	}
	return dump(ctx, c, opts, true)
}

// MaxPreDumps bounds the pre-dumps of one checkpoint: each costs a short
// freeze and a pass over the job's memory, and a job that dirties its
// memory as fast as it is copied gains nothing from more.
const MaxPreDumps = 3

// preDumpName is the subdirectory of a pre-copy image that holds its
// n-th pre-dump (from 1).
func preDumpName(n int) string { return "pre." + strconv.Itoa(n) }

// morePreDumps says whether a checkpoint whose pre-dumps so far wrote
// the given numbers of pages should make another before its final dump:
// while fewer than MaxPreDumps were made and the last one wrote fewer
// pages than the one before (the dirty set still shrinks).
func morePreDumps(written []uint64) bool {
	switch n := len(written); {
	case n == 0:
		return true
	case n >= MaxPreDumps:
		return false
	case n == 1:
		return written[0] > 0
	default:
		return written[n-1] < written[n-2] && written[n-1] > 0
	}
}

// DumpPreCopy checkpoints c like Dump, with pre-copy where f.PreCopy:
// first pre-dumps while the job runs (until morePreDumps says stop),
// then the final dump, which writes only the pages dirtied since the
// last pre-dump and so keeps the job frozen for less time. The image
// stays self-contained: the pre-dumps end up in opts.ImageDir as pre.1,
// pre.2, ..., each "parent" link relative (the final dump's to its last
// pre-dump, each pre-dump's to the one before), so Pack carries them
// and Restore on another machine needs nothing else. The Result's
// PreDumps are the pre-dumps' statistics.
//
// Where f.PreCopy is false, or opts.Parent is set, it is exactly Dump.
// A pre-dump that fails is logged and dropped: the checkpoint goes on
// with a full dump, unless CRIU is stuck (ErrStuck) or ctx is done,
// which end the checkpoint with the error. opts.Timeout bounds the
// whole: the pre-dumps share its first half.
func DumpPreCopy(ctx context.Context, c *libcontainer.Container, f Features, opts DumpOptions) (*Result, error) {
	if !f.PreCopy || opts.Parent != "" {
		return Dump(ctx, c, opts)
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", c.ID(), err)
	}
	// The pre-dumps are made beside the image (Dump makes the image
	// directory itself) and moved into it once the final dump is done.
	staging := filepath.Clean(o.ImageDir) + ".pre"
	if err := os.Mkdir(staging, 0o700); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", c.ID(), err)
	}
	defer os.RemoveAll(staging)
	var (
		pres    []PreDumpStats
		written []uint64
	)
	// The whole checkpoint keeps to o.Timeout: the pre-dumps share its
	// first half, and the final dump has what is left.
	deadline := time.Now().Add(o.Timeout)
	preDeadline := time.Now().Add(o.Timeout / 2)
	for morePreDumps(written) && time.Until(preDeadline) > 0 {
		n := len(pres) + 1
		po := DumpOptions{
			ImageDir: filepath.Join(staging, preDumpName(n)), Timeout: time.Until(preDeadline), Grace: o.Grace,
			AbortFUSE: o.AbortFUSE, LoopbackOnly: o.LoopbackOnly, Logger: o.Logger,
		}
		if n > 1 {
			po.Parent = filepath.Join("..", preDumpName(n-1))
		}
		res, err := PreDump(ctx, c, f, po)
		if err != nil && (errors.Is(err, ErrStuck) || ctx.Err() != nil) {
			// A CRIU stuck on the job's files would hold the final dump
			// up as well; a cancelled checkpoint is over.
			return nil, err
		}
		if err != nil {
			o.Logger.Warn("pre-dump failed; the checkpoint makes a full dump", "container", c.ID(), "pre_dump", n, "err", err)
			pres = nil
			break
		}
		pres = append(pres, PreDumpStats{Stats: res.Stats, Wall: res.Wall})
		written = append(written, res.Stats.PagesWritten)
	}
	if len(pres) > 0 {
		o.Parent = filepath.Join("..", filepath.Base(staging), preDumpName(len(pres)))
	}
	o.Timeout = time.Until(deadline)
	res, err := Dump(ctx, c, o)
	if err != nil || len(pres) == 0 {
		return res, err
	}
	if err := nestPreDumps(o.ImageDir, staging, len(pres)); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", c.ID(), err)
	}
	res.PreDumps = pres
	if err := writeInfo(o.ImageDir, res); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", c.ID(), err)
	}
	return res, nil
}

// nestPreDumps moves the n pre-dumps staging/pre.1 ... pre.n into the
// image directory dir and points dir's "parent" link, which the final
// dump made to the staging directory, at pre.n instead. The pre-dumps'
// own links (pre.k/parent -> ../pre.k-1) hold as they are.
func nestPreDumps(dir, staging string, n int) error {
	for k := 1; k <= n; k++ {
		if err := os.Rename(filepath.Join(staging, preDumpName(k)), filepath.Join(dir, preDumpName(k))); err != nil {
			return fmt.Errorf("nest pre-dumps: %w", err)
		}
	}
	link := filepath.Join(dir, "parent")
	if err := os.Remove(link); err != nil {
		return fmt.Errorf("nest pre-dumps: %w", err)
	}
	if err := os.Symlink(preDumpName(n), link); err != nil {
		return fmt.Errorf("nest pre-dumps: %w", err)
	}
	return nil
}
