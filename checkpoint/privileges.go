package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/checkpoint-restore/go-criu/v8/crit"
	criu_core "github.com/checkpoint-restore/go-criu/v8/crit/images/criu-core"
	"github.com/checkpoint-restore/go-criu/v8/crit/images/inventory"
	"github.com/checkpoint-restore/go-criu/v8/crit/images/pstree"
	"github.com/moby/sys/capability"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"
)

// CRIU restores every process with the credentials its image records
// (core-TID.img, one per thread) and in the namespaces its image
// records (ids-PID.img, compared with the namespaces of the CRIU that
// made the dump, in inventory.img), as root. The seal keeps images from
// anywhere but the pool's starters; behind it, Restore also checks that
// no restored process would get more than a fresh start of the same job
// gets: the same user and group, no other supplementary groups, no
// capability beyond the container's, no new privileges where a fresh
// start has none, a seccomp filter where a fresh start has one, and the
// container's own namespaces (none shared with the host, no user
// namespace it does not make).

// ErrPrivilege reports an image whose processes would be restored with
// more privilege than a fresh start of the job gets.
var ErrPrivilege = errors.New("the image asks for more privilege than a fresh start of the job has")

// privileges is the most a process of the job may have: what a fresh
// start in the same container configuration gets.
type privileges struct {
	uid, gid uint32
	groups   []uint32
	// Capability sets, as bit masks over capability numbers.
	inh, prm, eff, bnd, amb uint64
	noNewPrivs              bool
	seccomp                 bool
	// ns is the CLONE_NEW* flags of the namespaces the container makes.
	ns uintptr
}

// namespaceKinds are the namespaces CRIU restores from ids-PID.img, with
// the configuration's name and CRIU's id of each.
var namespaceKinds = []struct {
	name string
	flag uintptr
	typ  configs.NamespaceType
	id   func(*criu_core.TaskKobjIdsEntry) uint32
}{
	{"mount", unix.CLONE_NEWNS, configs.NEWNS, (*criu_core.TaskKobjIdsEntry).GetMntNsId},
	{"pid", unix.CLONE_NEWPID, configs.NEWPID, (*criu_core.TaskKobjIdsEntry).GetPidNsId},
	{"network", unix.CLONE_NEWNET, configs.NEWNET, (*criu_core.TaskKobjIdsEntry).GetNetNsId},
	{"ipc", unix.CLONE_NEWIPC, configs.NEWIPC, (*criu_core.TaskKobjIdsEntry).GetIpcNsId},
	{"uts", unix.CLONE_NEWUTS, configs.NEWUTS, (*criu_core.TaskKobjIdsEntry).GetUtsNsId},
	{"user", unix.CLONE_NEWUSER, configs.NEWUSER, (*criu_core.TaskKobjIdsEntry).GetUserNsId},
}

// privilegesOf is what a fresh start of p in a container configured by
// cfg gets. No capabilities in cfg means none at all.
func privilegesOf(cfg *configs.Config, p *libcontainer.Process) (privileges, error) {
	if p.UID < 0 || p.GID < 0 {
		return privileges{}, fmt.Errorf("process user %d:%d", p.UID, p.GID)
	}
	pr := privileges{uid: uint32(p.UID), gid: uint32(p.GID), noNewPrivs: cfg.NoNewPrivileges, seccomp: cfg.Seccomp != nil}
	for _, g := range p.AdditionalGroups {
		pr.groups = append(pr.groups, uint32(g))
	}
	if c := cfg.Capabilities; c != nil {
		var err error
		for _, s := range []struct {
			mask  *uint64
			names []string
		}{{&pr.inh, c.Inheritable}, {&pr.prm, c.Permitted}, {&pr.eff, c.Effective}, {&pr.bnd, c.Bounding}, {&pr.amb, c.Ambient}} {
			if *s.mask, err = capMask(s.names); err != nil {
				return privileges{}, err
			}
		}
	}
	for _, k := range namespaceKinds {
		if cfg.Namespaces.Contains(k.typ) {
			pr.ns |= k.flag
		}
	}
	return pr, nil
}

// capMask turns capability names ("CAP_CHOWN") into a bit mask.
func capMask(names []string) (uint64, error) {
	var m uint64
	for _, n := range names {
		c, ok := capByName(n)
		if !ok {
			return 0, fmt.Errorf("unknown capability %q", n)
		}
		m |= 1 << uint(c)
	}
	return m, nil
}

func capByName(name string) (capability.Cap, bool) {
	want, ok := strings.CutPrefix(strings.ToUpper(name), "CAP_")
	if !ok {
		return 0, false
	}
	for _, c := range capability.ListKnown() {
		if strings.ToUpper(c.String()) == want {
			return c, true
		}
	}
	return 0, false
}

// checkPrivileges reads the processes of the image in dir and refuses,
// with an error wrapping ErrPrivilege, one that would be restored with
// more than want. A file it cannot read or decode is an error too:
// whatever CRIU would read must be checked.
func checkPrivileges(dir string, want privileges) error {
	var inv inventory.InventoryEntry
	if err := readOne(dir, "inventory.img", &inv); err != nil {
		return err
	}
	host := inv.GetRootIds()
	if host == nil {
		return fmt.Errorf("%w: inventory.img names no namespaces of its dumper", ErrPrivilege)
	}
	tasks, err := readEntries(dir, "pstree.img", &pstree.PstreeEntry{})
	if err != nil {
		return err
	}
	if len(tasks) == 0 {
		return fmt.Errorf("%w: pstree.img lists no process", ErrPrivilege)
	}
	for i, e := range tasks {
		task := e.(*pstree.PstreeEntry)
		pid := task.GetPid()
		if err := checkNamespaces(dir, pid, i == 0, host, want); err != nil {
			return err
		}
		// CRIU restores a zombie (its state in its main thread's core
		// image) as a process that exits at once: it runs no code, and
		// its thread list is not to be relied on.
		var core criu_core.CoreEntry
		if err := readOne(dir, coreName(pid), &core); err != nil {
			return err
		}
		if core.GetTc().GetTaskState() == taskDead {
			continue
		}
		for _, tid := range task.GetThreads() {
			thread := &core
			if tid != pid {
				thread = new(criu_core.CoreEntry)
				if err := readOne(dir, coreName(tid), thread); err != nil {
					return err
				}
			}
			if err := checkThread(thread, want); err != nil {
				return fmt.Errorf("%w: thread %d of process %d: %v", ErrPrivilege, tid, pid, err)
			}
		}
		if !slices.Contains(task.GetThreads(), pid) {
			if err := checkThread(&core, want); err != nil {
				return fmt.Errorf("%w: process %d: %v", ErrPrivilege, pid, err)
			}
		}
	}
	return nil
}

// taskDead is CRIU's state of a zombie (TASK_DEAD).
const taskDead = 2

// coreName is the core image of thread tid.
func coreName(tid uint32) string { return "core-" + strconv.FormatUint(uint64(tid), 10) + ".img" }

// checkNamespaces checks the namespaces process pid is restored in. CRIU
// makes a namespace where a process's id differs from its parent's (for
// the first process, from its dumper's), and puts a process whose id is
// its dumper's into CRIU's own: the host's. The first process must have
// ids; CRIU restores any other without ids in its parent's namespaces.
func checkNamespaces(dir string, pid uint32, first bool, host *criu_core.TaskKobjIdsEntry, want privileges) error {
	var ids criu_core.TaskKobjIdsEntry
	err := readOne(dir, "ids-"+strconv.FormatUint(uint64(pid), 10)+".img", &ids)
	if errors.Is(err, os.ErrNotExist) && !first {
		return nil
	}
	if err != nil {
		return err
	}
	for _, k := range namespaceKinds {
		own, dumper := k.id(&ids), k.id(host)
		switch {
		case want.ns&k.flag != 0 && (own == 0 || own == dumper):
			return fmt.Errorf("%w: process %d would be in the host's %s namespace", ErrPrivilege, pid, k.name)
		case want.ns&k.flag == 0 && k.flag == unix.CLONE_NEWUSER && own != dumper:
			return fmt.Errorf("%w: process %d would be in a user namespace of its own", ErrPrivilege, pid)
		}
	}
	return nil
}

// checkThread compares one thread's credentials with want.
func checkThread(core *criu_core.CoreEntry, want privileges) error {
	tc := core.GetThreadCore()
	c := tc.GetCreds()
	if c == nil {
		// CRIU would take them from creds-PID.img, images too old for
		// us to have made.
		return errors.New("no credentials in its core image")
	}
	for _, id := range []struct {
		what      string
		got, want uint32
	}{
		{"uid", c.GetUid(), want.uid}, {"euid", c.GetEuid(), want.uid}, {"suid", c.GetSuid(), want.uid}, {"fsuid", c.GetFsuid(), want.uid},
		{"gid", c.GetGid(), want.gid}, {"egid", c.GetEgid(), want.gid}, {"sgid", c.GetSgid(), want.gid}, {"fsgid", c.GetFsgid(), want.gid},
	} {
		if id.got != id.want {
			return fmt.Errorf("%s %d, a fresh start has %d", id.what, id.got, id.want)
		}
	}
	for _, g := range c.GetGroups() {
		if !slices.Contains(want.groups, g) {
			return fmt.Errorf("supplementary group %d", g)
		}
	}
	for _, s := range []struct {
		what  string
		words []uint32
		want  uint64
	}{
		{"inheritable", c.GetCapInh(), want.inh}, {"permitted", c.GetCapPrm(), want.prm}, {"effective", c.GetCapEff(), want.eff},
		{"bounding", c.GetCapBnd(), want.bnd}, {"ambient", c.GetCapAmb(), want.amb},
	} {
		if len(s.words) > 2 {
			return fmt.Errorf("%d words of %s capabilities", len(s.words), s.what)
		}
		var got uint64
		for i, w := range s.words {
			got |= uint64(w) << (32 * i)
		}
		if extra := got &^ s.want; extra != 0 {
			return fmt.Errorf("%s capabilities %#x, a fresh start has %#x", s.what, got, s.want)
		}
	}
	if want.noNewPrivs && c.GetNoNewPrivs() == 0 {
		return errors.New("no_new_privs unset")
	}
	if want.seccomp {
		mode := core.GetTc().GetOldSeccompMode()
		if tc.SeccompMode != nil {
			mode = tc.GetSeccompMode()
		}
		if mode != criu_core.SeccompMode_filter {
			return fmt.Errorf("seccomp %v, a fresh start is filtered", mode)
		}
	}
	return nil
}

// readOne decodes the one entry of the CRIU image file name in dir into
// m.
func readOne(dir, name string, m proto.Message) error {
	entries, err := readEntries(dir, name, m)
	if err != nil {
		return err
	}
	if len(entries) != 1 {
		return fmt.Errorf("%w: %s holds %d entries, want 1", ErrPrivilege, name, len(entries))
	}
	proto.Merge(m, entries[0])
	return nil
}

// readEntries decodes the entries of the CRIU image file name in dir,
// each of m's type.
func readEntries(dir, name string, m proto.Message) ([]proto.Message, error) {
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return nil, fmt.Errorf("check privileges: %w", err)
	}
	defer f.Close()
	img, err := crit.New(f, nil, "", false, false).Decode(m)
	if err != nil {
		return nil, fmt.Errorf("check privileges: %s: %w", name, err)
	}
	out := make([]proto.Message, len(img.Entries))
	for i, e := range img.Entries {
		out[i] = e.Message
	}
	return out, nil
}
