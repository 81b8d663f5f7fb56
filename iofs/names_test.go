package iofs_test

import (
	"testing"
	"time"

	"harrier.dev/harrier/iofs"
)

// TestRemovedNames: a name the job removed is absent to it for a moment
// without asking the shadow, as sqlite's rollback journal is at the start
// of every transaction: a file made on the submit side meanwhile shows
// once that moment and the kernel's memory of the answer have passed. A
// name the job makes again, in any way, is there at once, even for a
// lookup the kernel must send again (its entries dropped).
func TestRemovedNames(t *testing.T) {
	e := newEnvWith(t, "", iofs.Options{Timeout: 4 * time.Second})
	e.writeSubmit("journal", "old")
	got := e.run(t, "sh", "-c", `rm journal && echo new > "$0/journal" && { test -e journal && echo there || echo absent; }`, e.submit)
	if got != "absent\n" {
		t.Errorf("a name looked up right after the job removed it: %q, want absent, without asking the shadow", got)
	}
	deadline := time.Now().Add(30 * time.Second)
	for e.run(t, "sh", "-c", `cat journal 2>/dev/null || true`) != "new\n" {
		if time.Now().After(deadline) {
			t.Fatal("the journal made on the submit side never showed")
		}
		time.Sleep(100 * time.Millisecond)
	}

	const again = `forget() { sync; echo 2 > /proc/sys/vm/drop_caches; }
echo one > a && rm a && echo two > a && forget && cat a
mkdir d && echo x > d/x && rm d/x && rmdir d && mkdir e && echo moved > e/x && mv e d && forget && cat d/x
echo target > t && ln t h && rm h && ln t h && forget && cat h
ln -s t s && rm s && ln -s t s && forget && readlink s
mkfifo f && rm f && mkfifo f && forget && test -p f && echo fifo
mkdir m && rmdir m && mkdir m && forget && test -d m && echo dir
echo r > r1 && echo gone > r2 && rm r2 && mv r1 r2 && forget && cat r2
true
`
	if got, want := e.run(t, "sh", "-c", again), "two\nmoved\ntarget\nt\nfifo\ndir\nr\n"; got != want {
		t.Errorf("names made again by the job:\n%s\nwant:\n%s", got, want)
	}
}
