package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"harrier.dev/harrier/checkpoint"
	"harrier.dev/harrier/pki"
)

// runPKI makes the credentials of a pool spread over several hosts (a
// personal pool makes its own): "pki init" creates the pool CA and the
// checkpoint key, "pki issue" a daemon's certificate, signed by the CA,
// to be copied to the host that runs it. See docs/install.md.
func runPKI(args []string, _ io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return usagef("want init or issue")
	}
	fs := flag.NewFlagSet("pki "+args[0], flag.ContinueOnError)
	dir := fs.String("dir", "", "the directory holding the pool CA (ca.pem, ca.key)")
	pool := fs.String("pool", "harrier", "the pool's name, in the CA certificate (init)")
	hosts := fs.String("hosts", "", "the daemon host's addresses and names, comma-separated (issue)")
	out := fs.String("out", "", "where to write ROLE.pem and ROLE.key (issue; default: --dir)")
	if err := fs.Parse(args[1:]); err != nil {
		return usagef("%v", err)
	}
	if *dir == "" {
		return usagef("--dir is required")
	}
	switch args[0] {
	case "init":
		if err := os.MkdirAll(*dir, 0o700); err != nil {
			return err
		}
		if _, err := pki.CreateCA(*dir, *pool); err != nil {
			return fmt.Errorf("create pool CA: %w", err)
		}
		if err := checkpoint.CreateKeyFile(filepath.Join(*dir, "checkpoint.key")); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Pool CA and checkpoint key created in %s; keep ca.key there, and copy ca.pem to every host.\n", *dir)
		return nil
	case "issue":
		if fs.NArg() != 1 {
			return usagef("want one identity, ROLE@HOST (matchmaker, agent or startd)")
		}
		identity := fs.Arg(0)
		role, host, ok := strings.Cut(identity, "@")
		if !ok || host == "" || !pki.RoleOf(identity).Known() {
			return usagef("identity %q: want ROLE@HOST with ROLE matchmaker, agent or startd", identity)
		}
		ca, err := pki.LoadCA(*dir)
		if err != nil {
			return err
		}
		dest := *out
		if dest == "" {
			dest = *dir
		}
		var names []string
		for _, h := range strings.Split(*hosts, ",") {
			if h = strings.TrimSpace(h); h != "" {
				names = append(names, h)
			}
		}
		cert, key := filepath.Join(dest, role+".pem"), filepath.Join(dest, role+".key")
		if err := ca.Issue(identity, names, cert, key); err != nil {
			return fmt.Errorf("issue %s: %w", identity, err)
		}
		fmt.Fprintf(stdout, "Issued %s: %s and %s.\n", identity, cert, key)
		return nil
	}
	return usagef("unknown pki command %q", args[0])
}
