package main

import (
	"os/user"
	"strconv"
	"testing"
)

func lookupIDs(t testing.TB, name string) (uint32, uint32) {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Skipf("no user %s on this machine: %v", name, err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return uint32(uid), uint32(gid)
}
