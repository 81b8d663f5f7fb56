package checkpoint_test

import (
	"context"
	"errors"
	"log"
	"net"
	"path/filepath"
	"strings"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"

	"harrier.dev/harrier/checkpoint"
)

// A vacate on the execute machine: dump the job, which ends it, and
// stream the image to the shadow.
func ExampleDump() {
	var (
		ctx  = context.Background()
		c    *libcontainer.Container // the job's running container
		p    *libcontainer.Process   // its init process
		iofs = "/var/lib/harrier/execute/dir_42/job"
		home net.Conn // to the shadow
	)
	res, err := checkpoint.Dump(ctx, c, checkpoint.DumpOptions{
		ImageDir:  "/var/lib/harrier/execute/dir_42/ckpt",
		AbortFUSE: []string{iofs},
	})
	if errors.Is(err, checkpoint.ErrTimeout) {
		log.Printf("no checkpoint, the job runs on: %v", err)
		return
	}
	_, _ = p.Wait()
	_ = c.Destroy()
	log.Printf("frozen %v, %d pages", res.Stats.Frozen, res.Stats.PagesWritten)
	// Sealed with the pool's key, for this job alone.
	key, err := checkpoint.LoadKey("/etc/harrier/pki/checkpoint.key")
	if err != nil {
		log.Fatal(err)
	}
	_, _ = checkpoint.Pack(home, "/var/lib/harrier/execute/dir_42/ckpt", key.For("submit#42.0#1700000000", "alice"))
}

// The shadow keeps the image if it arrives whole and good, and checks the
// job's inputs before it sends the image on.
func ExampleStore() {
	var (
		from net.Conn // the execute machine's stream
		dir  = "/var/lib/harrier/spool/checkpoints"
	)
	store, err := checkpoint.OpenStore(dir)
	if err != nil {
		log.Fatal(err)
	}
	m, err := store.Put("42.0", from)
	if err != nil {
		log.Printf("checkpoint lost, the previous one stays: %v", err)
		return
	}
	err = checkpoint.CheckInputs(m.Info.Inputs, func(p string) (string, bool) {
		rel, ok := strings.CutPrefix(p, "/job/")
		return filepath.Join("/home/user/run1", rel), ok
	})
	if errors.Is(err, checkpoint.ErrInputChanged) {
		log.Printf("restart from scratch or hold, as the job says: %v", err)
	}
	_ = store.Remove("42.0") // when the job leaves the queue
}

// A restore on the next execute machine: unpack the image, checking its
// seal, mount iofs at the job's new directory, and restore into a
// container configured as a fresh start of the job would be here.
func ExampleRestore() {
	var (
		ctx     = context.Background()
		key     *checkpoint.Key // the pool's, from LoadKey
		image   net.Conn        // from the shadow
		newIofs = "/var/lib/harrier/execute/dir_77/job"
		// The job's container configuration, made afresh, with newIofs
		// bound at the job's directory.
		cfg *configs.Config
	)
	m, err := checkpoint.Unpack(image, "/var/lib/harrier/execute/dir_77/ckpt", key.For("submit#42.0#1700000000", "alice"))
	if errors.Is(err, checkpoint.ErrForged) {
		log.Printf("not our image, start from scratch: %v", err)
		return
	}
	if err != nil {
		log.Printf("bad image, start from scratch: %v", err)
		return
	}
	// (The shadow runs CheckInputs on m.Info.Inputs against the submit
	// directory before it sends the image.)
	_ = m
	p := &libcontainer.Process{Args: []string{"job"}, UID: 65534, GID: 65534, Init: true}
	c, res, err := checkpoint.Restore(ctx, checkpoint.RestoreOptions{
		Root: "/var/lib/harrier/execute/sandbox", ID: "slot1-42.0",
		Config: cfg, Process: p,
		ImageDir: "/var/lib/harrier/execute/dir_77/ckpt",
		FUSE:     []string{newIofs},
	})
	if err != nil {
		log.Printf("restore failed: %v", err)
		return
	}
	log.Printf("restored %s in %v", c.ID(), res.Wall)
	_, _ = p.Wait()
}
