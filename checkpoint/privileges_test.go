package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/checkpoint-restore/go-criu/v8/crit"
	criu_core "github.com/checkpoint-restore/go-criu/v8/crit/images/criu-core"
	"github.com/checkpoint-restore/go-criu/v8/crit/images/inventory"
	"github.com/opencontainers/runc/libcontainer"
	"google.golang.org/protobuf/proto"
)

// alterImage rewrites every entry of the CRIU image files matching
// pattern in dir with fn; entry is an empty message of their type.
func alterImage[T proto.Message](t *testing.T, dir, pattern string, entry T, fn func(T)) {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, pattern))
	if len(paths) == 0 {
		t.Fatalf("no %s in the image", pattern)
	}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		img, err := crit.New(f, nil, "", false, false).Decode(entry)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, e := range img.Entries {
			fn(e.Message.(T))
		}
		out, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := crit.New(nil, out, "", false, false).Encode(img); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out.Close()
	}
}

// TestForgedImage alters the image of a job that runs as nobody, as its
// owner could in the store: to be restored as root with every
// capability, with capabilities alone, in the host's pid namespace, in a
// user namespace of its own, or allowed new privileges. Sealed by anyone
// without the pool's key, Unpack refuses it as forged; sealed with the
// key (a starter gone bad), Restore refuses it before CRIU reads a byte.
// The image as dumped restores, and the job counts on.
func TestForgedImage(t *testing.T) {
	needCRIU(t)
	ctx := context.Background()
	tmp, root, jobDir := jobDirs(t)
	writeInput(t, jobDir)
	id := "ckpt-forged"
	cfg := containerConfig(t, id, jobDir, 256<<20)
	args := []string{"sh", "-c", countScript}
	j := startJob(t, root, id, cfg, args, nil)
	countsFile := filepath.Join(jobDir, "counts.txt")
	waitCount(t, countsFile, 3)
	img := filepath.Join(tmp, "img")
	if _, err := Dump(ctx, j.c, DumpOptions{ImageDir: img, LoopbackOnly: true}); err != nil {
		j.stop(t)
		t.Fatal(err)
	}
	j.gone(t)
	before := counts(t, countsFile)

	var host *criu_core.TaskKobjIdsEntry
	alterImage(t, img, "inventory.img", &inventory.InventoryEntry{}, func(e *inventory.InventoryEntry) { host = e.GetRootIds() })
	forgeries := map[string]func(t *testing.T, dir string){
		"root with every capability": func(t *testing.T, dir string) {
			alterImage(t, dir, "core-*.img", &criu_core.CoreEntry{}, func(e *criu_core.CoreEntry) {
				c := e.GetThreadCore().GetCreds()
				zero, all := uint32(0), []uint32{0xffffffff, 0x1ff}
				c.Uid, c.Euid, c.Suid, c.Fsuid, c.Gid, c.Egid, c.Sgid, c.Fsgid = &zero, &zero, &zero, &zero, &zero, &zero, &zero, &zero
				c.CapInh, c.CapPrm, c.CapEff, c.CapBnd = all, all, all, all
			})
		},
		"every capability": func(t *testing.T, dir string) {
			alterImage(t, dir, "core-*.img", &criu_core.CoreEntry{}, func(e *criu_core.CoreEntry) {
				c := e.GetThreadCore().GetCreds()
				all := []uint32{0xffffffff, 0x1ff}
				c.CapPrm, c.CapEff, c.CapBnd = all, all, all
			})
		},
		"the host's pid namespace": func(t *testing.T, dir string) {
			alterImage(t, dir, "ids-*.img", &criu_core.TaskKobjIdsEntry{}, func(e *criu_core.TaskKobjIdsEntry) {
				e.PidNsId = proto.Uint32(host.GetPidNsId())
			})
		},
		"a user namespace": func(t *testing.T, dir string) {
			alterImage(t, dir, "ids-*.img", &criu_core.TaskKobjIdsEntry{}, func(e *criu_core.TaskKobjIdsEntry) {
				e.UserNsId = proto.Uint32(host.GetUserNsId() + 1000)
			})
		},
		"new privileges": func(t *testing.T, dir string) {
			alterImage(t, dir, "core-*.img", &criu_core.CoreEntry{}, func(e *criu_core.CoreEntry) {
				e.GetThreadCore().GetCreds().NoNewPrivs = proto.Uint32(0)
			})
		},
	}
	mallory, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	for name, forge := range forgeries {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "img")
			if out, err := exec.Command("cp", "-a", img, dir).CombinedOutput(); err != nil {
				t.Fatalf("copy the image: %v: %s", err, out)
			}
			forge(t, dir)
			received := dir + ".received"

			var buf bytes.Buffer
			if _, err := Pack(&buf, dir, mallory.For("submit#1.0#1700000000", "alice")); err != nil {
				t.Fatal(err)
			}
			if _, err := Unpack(&buf, received, testSeal); !errors.Is(err, ErrForged) {
				t.Fatalf("sealed without the pool's key: %v, want ErrForged", err)
			}

			buf.Reset()
			if _, err := Pack(&buf, dir, testSeal); err != nil {
				t.Fatal(err)
			}
			if _, err := Unpack(&buf, received, testSeal); err != nil {
				t.Fatalf("sealed with the pool's key: %v", err)
			}
			p, _ := newProcess(args, nil)
			_, _, err := Restore(ctx, RestoreOptions{Root: root, ID: id, Config: cfg, Process: p, ImageDir: received})
			if !errors.Is(err, ErrPrivilege) {
				t.Fatalf("restore: %v, want ErrPrivilege", err)
			}
			t.Logf("refused: %v", err)
			if _, err := os.Stat(filepath.Join(received+".restore", "restore.log")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("CRIU ran: %v", err)
			}
			if _, err := libcontainer.Load(root, id); err == nil {
				t.Error("the refused restore left a container")
			}
		})
	}

	received, _ := transfer(t, img)
	p, out := newProcess(args, nil)
	c, _, err := Restore(ctx, RestoreOptions{Root: root, ID: id, Config: cfg, Process: p, ImageDir: received})
	if err != nil {
		t.Fatalf("restore the image as dumped: %v", err)
	}
	r := &job{c: c, p: p, out: out}
	defer r.stop(t)
	checkUnbroken(t, waitCount(t, countsFile, len(before)+3))
}
