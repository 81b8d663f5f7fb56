package main

import (
	"strings"
	"testing"

	"harrier.dev/harrier/classad"
)

func TestDrainingTable(t *testing.T) {
	var b strings.Builder
	tab := newDrainingTable(&b)
	tab.now = 1000
	for _, src := range []string{
		`[ Machine = "exec1"; State = "Claimed"; Activity = "Retiring"; LastDrainStartTime = 940; DrainReason = "new disks" ]`,
		`[ Machine = "exec1"; State = "Drained"; Activity = "Idle"; LastDrainStartTime = 940; DrainReason = "new disks" ]`,
		`[ Machine = "exec2"; State = "Drained"; Activity = "Idle"; DrainReason = "by root@cm" ]`,
	} {
		ad, err := classad.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		tab.row(ad)
	}
	tab.flush()
	want := "Machine Slots Jobs Draining   ST    Reason\n" +
		"exec1   2     1    0+00:01:00 Cr,Di new disks\n" +
		"exec2   1     0    ?          Di    by root@cm\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
