package starter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"harrier.dev/harrier/checkpoint"
	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/wire"
)

// errNoCheckpoint says the job cannot be checkpointed where it runs.
var errNoCheckpoint = errors.New("the job cannot be checkpointed here (not in a container)")

// checkpoints takes the job's checkpoints and sends them home: each image
// is made beside the job's scratch directory (outside its container),
// sealed, packed and streamed to the shadow, then removed here. The
// shadow stores it where the job's owner can change it: the seal, made
// with the pool's key, which no user holds, is how a restore tells an
// image one of the pool's starters made for this job from any other.
type checkpoints struct {
	client  wire.ShadowClient
	secret  string
	scratch string
	logger  *slog.Logger
	// seal seals the job's images and checks them before a restore; nil
	// when this machine cannot, and noSeal says why.
	seal   *checkpoint.Seal
	noSeal error
	n      atomic.Int64
	// lastImage is the size of the job's latest image, uncompressed, as
	// its ad records it (LastCkptImageSize); 0 if unknown.
	lastImage int64
	// syncFiles, if set, brings the job's writes to the submit side: a
	// checkpoint counts only once the files it goes with are there.
	syncFiles func(context.Context) error
	// keptByRunner are the runner's own directories in the scratch
	// directory, which the job's images do not carry (see scratchArchive).
	keptByRunner []string
	// image is the container image the job runs in, which its images
	// name (see imageRecordName); nil: the machine's own root.
	image *heldImage
	// output counts what the job has written of its streamed output,
	// which each image's information carries; nil: not counted.
	output *outputCount
}

// sealFor returns the seal of the job's images: the pool's key from the
// spec, bound to the job's GlobalJobId and Owner as the startd was told
// them with the claim. Without one, the job is neither checkpointed nor
// restored here, and the error says why.
func sealFor(spec *Spec) (*checkpoint.Seal, error) {
	if spec.CheckpointKeyFile == "" {
		return nil, errors.New("this machine has no checkpoint key")
	}
	key, err := checkpoint.LoadKey(spec.CheckpointKeyFile)
	if err != nil {
		return nil, err
	}
	ad, err := classad.Parse(spec.JobAd)
	if err != nil {
		return nil, fmt.Errorf("the job's ad: %w", err)
	}
	id, owner := stringAttr(ad, "GlobalJobId"), stringAttr(ad, "Owner")
	if id == "" || owner == "" {
		return nil, errors.New("the job has no GlobalJobId and Owner to bind its checkpoints to")
	}
	return key.For(id, owner), nil
}

// take checkpoints job; with vacate the job ends with the dump.
func (c *checkpoints) take(ctx context.Context, job Job, vacate bool) error {
	cp, ok := job.(Checkpointer)
	if !ok {
		return errNoCheckpoint
	}
	if c.seal == nil {
		return fmt.Errorf("cannot seal checkpoints: %w", c.noSeal)
	}
	// The job's memory now bounds its image, near enough: the image is
	// its processes' memory and a little more.
	var need int64
	if u, err := job.Usage(); err == nil {
		need = u.MemoryBytes
	}
	area, err := c.newImageArea(ctx, "ckpt."+filepath.Base(c.scratch)+"."+strconv.FormatInt(c.n.Add(1), 10), need)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	defer area.remove(c.logger)
	dir := area.image()
	// What else the image must agree with is taken at its moment, while
	// the dump has the job frozen: how much output the job had written,
	// and (unless the dump ends the job, after which nothing changes)
	// its scratch directory. Where the dump did not freeze the job
	// itself, they are taken as soon after as can be: a little output
	// written since is then counted too, and written again after a
	// restore; none is left out.
	var at frozenState
	ctx = checkpoint.WithFrozen(ctx, func() {
		began := time.Now()
		at.mu.Lock()
		defer at.mu.Unlock()
		defer func() { at.took = time.Since(began) }()
		at.taken = true
		if c.output != nil {
			at.stdout, at.stderr = c.output.at()
		}
		if !vacate {
			at.archiveErr = c.archiveScratch(ctx, dir)
		}
	})
	stats, err := cp.Checkpoint(ctx, dir, !vacate)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	at.mu.Lock()
	stats.Frozen += at.took // before CRIU, which counts its own
	info := &wire.CheckpointInfo{FrozenSeconds: stats.Frozen.Seconds(), DumpSeconds: stats.Dump.Seconds(),
		ImageBytes: stats.ImageBytes, Vacate: vacate, StdoutBytes: at.stdout, StderrBytes: at.stderr}
	taken, archiveErr := at.taken, at.archiveErr
	at.mu.Unlock()
	c.logger.Info("checkpoint dumped", "vacate", vacate, "frozen", stats.Frozen, "dump", stats.Dump)
	if !taken && c.output != nil {
		info.StdoutBytes, info.StderrBytes = c.output.at()
	}
	// Everything the job wrote before the dump froze it, and perhaps a
	// little after, which a job restored from it would write again.
	if c.syncFiles != nil {
		if err := c.syncFiles(ctx); err != nil {
			return fmt.Errorf("bring the job's writes to the submit side: %w", err)
		}
	}
	if !taken || vacate {
		archiveErr = c.archiveScratch(ctx, dir)
	}
	if archiveErr != nil {
		return fmt.Errorf("checkpoint: %w", archiveErr)
	}
	if c.image != nil {
		if err := c.image.record(dir); err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
	}
	began, cpu := time.Now(), processCPU()
	if err := c.upload(ctx, dir, info); err != nil {
		return fmt.Errorf("send checkpoint to the shadow: %w", err)
	}
	c.logger.Info("checkpoint sent", "vacate", vacate, "frozen", stats.Frozen, "image_bytes", stats.ImageBytes,
		"pre_dumps", stats.PreDumps, "pre_dump_time", stats.PreDump, "took", time.Since(began), "cpu", processCPU()-cpu)
	return nil
}

// frozenState is what a checkpoint took while the dump had the job
// frozen, set from the dump's goroutine.
type frozenState struct {
	mu             sync.Mutex
	taken          bool
	stdout, stderr *int64
	archiveErr     error // of the scratch directory's archive, unless a vacate
	took           time.Duration
}

// upload packs the image in dir and streams it to the shadow, info with
// its first chunk.
func (c *checkpoints) upload(ctx context.Context, dir string, info *wire.CheckpointInfo) error {
	// Cancelled on a failure, the call ends with an error at the shadow
	// too, which keeps the previous image.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.client.PutCheckpoint(ctx)
	if err != nil {
		return err
	}
	w := &chunkSender{stream: stream, buf: make([]byte, 0, chunkSize), first: &wire.CheckpointChunk{Secret: c.secret, Info: info}}
	_, err = checkpoint.Pack(w, dir, c.seal)
	if err == nil {
		err = w.flush()
	}
	if err != nil {
		return err
	}
	_, err = stream.CloseAndRecv()
	return err
}

// chunkSize is the size of the messages an image travels in.
const chunkSize = 1 << 20

// chunkSender is the upload stream as a writer: Pack writes the packed
// image straight into the next message, which is sent once full (and the
// last by flush). The first message carries first's secret and dump
// information. Send copies the message, so the buffer is reused.
type chunkSender struct {
	stream wire.Shadow_PutCheckpointClient
	first  *wire.CheckpointChunk
	buf    []byte
}

func (w *chunkSender) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := copy(w.buf[len(w.buf):cap(w.buf)], p)
		w.buf, p = w.buf[:len(w.buf)+k], p[k:]
		if len(w.buf) == cap(w.buf) {
			if err := w.flush(); err != nil {
				return n - len(p), err
			}
		}
	}
	return n, nil
}

// flush sends what has been written since the last message, and the
// first message even if empty.
func (w *chunkSender) flush() error {
	if len(w.buf) == 0 && w.first == nil {
		return nil
	}
	msg := w.first
	if msg == nil {
		msg = &wire.CheckpointChunk{}
	}
	w.first = nil
	msg.Data = w.buf
	err := w.stream.Send(msg)
	w.buf = w.buf[:0]
	return err
}

// chunkReceiver is the download stream as a reader. Every chunk is
// received into msg's one buffer (see wire's codec), which is reused once
// its bytes are read.
type chunkReceiver struct {
	stream wire.Shadow_GetCheckpointClient
	msg    wire.CheckpointChunk
	buf    []byte
}

func (r *chunkReceiver) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if cap(r.msg.Data) == 0 {
			r.msg.Data = make([]byte, 0, chunkSize)
		}
		if err := r.stream.RecvMsg(&r.msg); err != nil {
			return 0, err // io.EOF at the end of the image
		}
		r.buf = r.msg.Data
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// fetch downloads the job's latest image into a new image area (see
// imageArea), checking its seal: an error wrapping checkpoint.ErrForged
// says the image is not one of this pool's starters made for this job.
// The caller restores from the area's image and removes the area.
func (c *checkpoints) fetch(ctx context.Context) (*imageArea, error) {
	if c.seal == nil {
		return nil, fmt.Errorf("cannot check the seal of checkpoints: %w", c.noSeal)
	}
	began, cpu := time.Now(), processCPU()
	// Cancelled when the image is refused, the shadow stops sending.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.client.GetCheckpoint(ctx, &wire.GetCheckpointRequest{Secret: c.secret})
	if err != nil {
		return nil, err
	}
	area, err := c.newImageArea(ctx, "restore."+filepath.Base(c.scratch), c.lastImage)
	if err != nil {
		return nil, err
	}
	m, err := checkpoint.Unpack(&chunkReceiver{stream: stream}, area.image(), c.seal)
	if err != nil {
		area.remove(c.logger)
		return nil, err
	}
	c.logger.Info("checkpoint fetched", "image_bytes", m.Size(), "took", time.Since(began), "cpu", processCPU()-cpu)
	return area, nil
}

// imageArea is a directory beside the scratch directory that holds one
// image and CRIU's files around it (its log and statistics, the staging
// directory of pre-dumps), on a tmpfs of its own when the machine has
// the memory for it. An image is written once and read once, on its way
// between CRIU and the network: in memory that costs a copy, where ext4
// on our machines writes a 1 GiB image at 300-400 MB/s, seconds that a
// dump spends with the job frozen (docs/checkpoint-bench.md).
type imageArea struct {
	dir     string
	mounted bool
}

// newImageArea makes the image area name beside the scratch directory for
// an image of about need bytes (0: unknown). It mounts an owner-only
// tmpfs on it when need is known and at most memoryShare of the
// machine's available memory, with that share as the tmpfs's limit;
// otherwise, or when the mount fails, the area is on disk.
func (c *checkpoints) newImageArea(ctx context.Context, name string, need int64) (*imageArea, error) {
	a := &imageArea{dir: filepath.Join(filepath.Dir(c.scratch), name)}
	if err := os.Mkdir(a.dir, 0o700); err != nil {
		return nil, fmt.Errorf("image area: %w", err)
	}
	avail, err := memAvailable()
	limit := avail / memoryShare
	switch {
	case err != nil:
		c.logger.WarnContext(ctx, "checkpoint image on disk: cannot read the available memory", "err", err)
	case need <= 0 || need > limit:
		c.logger.InfoContext(ctx, "checkpoint image on disk", "need", need, "memory_available", avail)
	default:
		err := unix.Mount("tmpfs", a.dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC,
			"mode=0700,size="+strconv.FormatInt(limit, 10))
		if err != nil {
			c.logger.WarnContext(ctx, "checkpoint image on disk: cannot mount a tmpfs for it", "dir", a.dir, "err", err)
		}
		a.mounted = err == nil
	}
	return a, nil
}

// An image goes to memory only if it takes at most 1/memoryShare of the
// available memory, which leaves room for the restored job beside it
// (or, for a periodic checkpoint, the running one).
const memoryShare = 2

// memAvailable reads the kernel's estimate of the memory available to
// new work, in bytes.
func memAvailable() (int64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			f := strings.Fields(rest) // "16104444 kB"
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("/proc/meminfo: %q", line)
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/meminfo: %q: %w", line, err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("/proc/meminfo has no MemAvailable")
}

// image is the image's directory in the area, made by whoever writes it.
func (a *imageArea) image() string { return filepath.Join(a.dir, "image") }

// remove unmounts and removes the area with everything in it.
func (a *imageArea) remove(logger *slog.Logger) {
	if a.mounted {
		// Detached: a CRIU that has not yet let go must not keep the
		// memory of the image alive under a mount nobody can find.
		if err := unix.Unmount(a.dir, unix.MNT_DETACH); err != nil {
			logger.Warn("unmount the image area", "dir", a.dir, "err", err)
		}
	}
	if err := os.RemoveAll(a.dir); err != nil {
		logger.Warn("remove the image area", "dir", a.dir, "err", err)
	}
}

// processCPU is the CPU time this process has used so far. The starter
// logs what sending and fetching an image cost in it: on a loaded
// machine the transfer is bound by CPU, not by the network.
func processCPU() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
