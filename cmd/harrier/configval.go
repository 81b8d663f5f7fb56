package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/wire"
)

// runConfigVal prints configuration values, as condor_config_val does:
// those of the pool's configuration file, or with -daemon NAME those the
// daemon runs on (including its defaults), asked through its master (of
// -host HOST, or of this host). -verbose adds where each value
// comes from; -dump prints every key (with -daemon: every key the daemon
// has looked up).
func runConfigVal(args []string, _ io.Reader, stdout io.Writer) error {
	tf := newToolFlags("config-val")
	daemon := tf.fs.String("daemon", "", "ask the daemon NAME (matchmaker, agent, or a startd's name) what it uses")
	host := tf.fs.String("host", "", "with -daemon: the host whose master runs it (default: this host)")
	verbose := tf.fs.Bool("verbose", false, "say where each value comes from")
	dump := tf.fs.Bool("dump", false, "print every key")
	if err := tf.parse(args); err != nil {
		return err
	}
	keys := tf.fs.Args()
	if *dump == (len(keys) > 0) {
		return usagef("give KEY... or -dump")
	}
	pc, err := findPool(*tf.pool)
	if err != nil {
		return err
	}
	var settings []*wire.ConfigSetting
	if *daemon == "" {
		if *dump {
			keys = pc.c.Keys()
		}
		for _, k := range keys {
			settings = append(settings, settingToWire(pc.c.Setting(k)))
		}
	} else if settings, err = daemonConfig(pc, *host, *daemon, keys); err != nil {
		return err
	}
	missing := 0
	for _, s := range settings {
		switch {
		case s.Error != "":
			fmt.Fprintf(stdout, "%s: %s\n", s.Key, s.Error)
			missing++
			continue
		case !s.Defined && !s.HasDefault && !*dump:
			fmt.Fprintf(stdout, "Not defined: %s\n", s.Key)
			missing++
			continue
		case *dump || *verbose:
			// A key a daemon looked up that is not defined is dumped
			// empty, which is what the daemon got.
			fmt.Fprintln(stdout, strings.TrimSpace(s.Key+" = "+s.Value))
		default:
			fmt.Fprintln(stdout, s.Value)
		}
		if *verbose {
			switch {
			case s.Defined:
				fmt.Fprintf(stdout, " # at %s\n", s.Origin)
			case s.HasDefault:
				fmt.Fprintf(stdout, " # not defined: the daemon's default\n")
			default:
				fmt.Fprintf(stdout, " # not defined\n")
			}
			switch n := s.Next; {
			case n == nil:
			case n.Defined:
				fmt.Fprintf(stdout, " # not applied: changed to %s at %s; takes effect when the daemon restarts\n", n.Value, n.Origin)
			default:
				fmt.Fprintf(stdout, " # not applied: no longer defined; its default takes effect when the daemon restarts\n")
			}
		}
	}
	if missing > 0 {
		return exitError(1)
	}
	return nil
}

// daemonConfig asks daemon name, through its master (that of host, or
// whichever of this host's masters runs it), to describe keys (every key
// it uses if none).
func daemonConfig(pc *poolConfig, host, name string, keys []string) ([]*wire.ConfigSetting, error) {
	var settings []*wire.ConfigSetting
	found := false
	err := eachMaster(pc, host, func(ctx context.Context, _ string, c wire.MasterAdminClient) error {
		reply, err := c.DaemonConfig(ctx, &wire.DaemonConfigRequest{Daemon: name, Request: &wire.ConfigRequest{Keys: keys}})
		if status.Code(err) == codes.NotFound && host == "" {
			return nil // another master's daemon
		}
		if err != nil {
			return err
		}
		settings, found = reply.Settings, true
		return nil
	})
	if err == nil && !found {
		err = fmt.Errorf("no master of this host runs %q", name)
	}
	return settings, err
}
