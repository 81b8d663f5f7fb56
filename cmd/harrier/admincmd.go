package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/wire"
)

// errNotAdministrator is the answer to a user who is not the pool
// administrator.
var errNotAdministrator = errors.New("only the pool administrator may do this")

// runReconfig makes the masters of this host (or the master of HOST)
// re-read the configuration and pass SIGHUP on to their daemons, as
// condor_reconfig does.
func runReconfig(args []string, _ io.Reader, stdout io.Writer) error {
	tf := newToolFlags("reconfig")
	if err := tf.parse(args); err != nil {
		return err
	}
	if len(tf.fs.Args()) > 1 {
		return usagef("at most one HOST")
	}
	pc, err := findPool(*tf.pool)
	if err != nil {
		return err
	}
	return eachMaster(pc, first(tf.fs.Args()), func(ctx context.Context, host string, c wire.MasterAdminClient) error {
		if _, err := c.Reconfig(ctx, &wire.ReconfigRequest{}); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: the master and its daemons re-read the configuration.\n", host)
		return nil
	})
}

// daemonControl returns the command that turns daemons off, on, or
// restarts them, as condor_off, condor_on and condor_restart do. Off
// takes condor_off's modes: -graceful (the default: a startd vacates its
// jobs, checkpointed where they can be, to run again elsewhere),
// -peaceful (a startd takes no new job and stops once its jobs have
// finished; off does not wait for that) and -fast (a startd kills its
// jobs at once; they go back to Idle).
func daemonControl(verb string) func([]string, io.Reader, io.Writer) error {
	return func(args []string, _ io.Reader, stdout io.Writer) error {
		tf := newToolFlags(verb)
		daemon := tf.fs.String("daemon", "", "the daemon (matchmaker, agent, or a startd's name); default: every daemon")
		var graceful, peaceful, fast *bool
		if verb == "off" {
			graceful = tf.fs.Bool("graceful", false, "vacate running jobs, checkpointed where they can be, then stop (the default)")
			peaceful = tf.fs.Bool("peaceful", false, "start no new job; stop once the running jobs have finished")
			fast = tf.fs.Bool("fast", false, "kill running jobs at once, then stop")
		}
		if err := tf.parse(args); err != nil {
			return err
		}
		if len(tf.fs.Args()) > 1 {
			return usagef("at most one HOST")
		}
		mode := wire.StopMode_STOP_MODE_GRACEFUL
		if verb == "off" {
			switch {
			case *graceful && *peaceful, *graceful && *fast, *peaceful && *fast:
				return usagef("at most one of -graceful, -peaceful and -fast")
			case *peaceful:
				mode = wire.StopMode_STOP_MODE_PEACEFUL
			case *fast:
				mode = wire.StopMode_STOP_MODE_FAST
			}
		}
		pc, err := findPool(*tf.pool)
		if err != nil {
			return err
		}
		acted := 0
		err = eachMaster(pc, first(tf.fs.Args()), func(ctx context.Context, host string, c wire.MasterAdminClient) error {
			req := &wire.DaemonControlRequest{Daemon: *daemon, Mode: mode}
			var reply *wire.DaemonControlReply
			var err error
			switch verb {
			case "off":
				reply, err = c.Off(ctx, req)
			case "on":
				reply, err = c.On(ctx, req)
			default:
				reply, err = c.Restart(ctx, req)
			}
			// Asked for one daemon on every master of this host: the
			// masters without it have nothing to do.
			if status.Code(err) == codes.NotFound && first(tf.fs.Args()) == "" {
				return nil
			}
			if err != nil {
				return err
			}
			acted++
			var done []string
			for _, d := range reply.Daemons {
				if !slices.Contains(reply.Stopping, d) {
					done = append(done, d)
				}
			}
			if len(done) > 0 {
				fmt.Fprintf(stdout, "%s: %s %s\n", host, map[string]string{"off": "turned off", "on": "turned on", "restart": "restarted"}[verb],
					strings.Join(done, ", "))
			}
			if len(reply.Stopping) > 0 {
				fmt.Fprintf(stdout, "%s: turned off %s; stopping once the running jobs have finished\n", host, strings.Join(reply.Stopping, ", "))
			}
			return nil
		})
		if err == nil && acted == 0 {
			return fmt.Errorf("no master of this host runs %q", *daemon)
		}
		return err
	}
}

func first(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// eachMaster calls f with a client of the master of host, or of every
// master of this host (one per simulated host in a personal pool) if
// host is empty. Masters serve the administrator on a Unix socket in the
// pool's RUN directory that only root may open; the master of a host
// without one here is reached over the pool's TLS with the admin
// certificate, at the address its DaemonMaster ad gives.
func eachMaster(pc *poolConfig, host string, f func(ctx context.Context, host string, c wire.MasterAdminClient) error) error {
	runDir := runDirOf(pc)
	var hosts []string
	if host != "" {
		if _, err := os.Stat(masterSocket(runDir, host)); err != nil {
			return callRemoteMaster(pc, host, f)
		}
		hosts = []string{host}
	} else {
		socks, _ := filepath.Glob(masterSocket(runDir, "*"))
		for _, s := range socks {
			hosts = append(hosts, strings.TrimSuffix(strings.TrimPrefix(filepath.Base(s), "master."), ".sock"))
		}
		slices.Sort(hosts)
		if len(hosts) == 0 {
			return fmt.Errorf("no master runs on this host (no master socket in %s)", runDir)
		}
	}
	var errs []error
	for _, h := range hosts {
		if err := callMaster(masterSocket(runDir, h), h, f); err != nil {
			if errors.Is(err, errNotAdministrator) {
				return err
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// callMaster connects to the master's socket at sock and calls f.
func callMaster(sock, host string, f func(ctx context.Context, host string, c wire.MasterAdminClient) error) error {
	conn, err := dialAdmin(sock, "master of "+host)
	if err != nil {
		return err
	}
	defer conn.Close()
	// Stopping a daemon may take its whole grace time.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := f(ctx, host, wire.NewMasterAdminClient(conn)); err != nil {
		if status.Code(err) == codes.PermissionDenied {
			return errNotAdministrator
		}
		return rpcError(host, err)
	}
	return nil
}

// dialAdmin connects to the administrator's socket of a master or a
// daemon (what, for errors).
func dialAdmin(sock, what string) (*grpc.ClientConn, error) {
	// Dial once first: a refusal by the socket's permissions is said in
	// words, not as an unavailable server.
	probe, err := net.Dial("unix", sock)
	switch {
	case errors.Is(err, syscall.EACCES):
		return nil, errNotAdministrator
	case err != nil:
		return nil, fmt.Errorf("the %s does not answer at %s: %w", what, sock, err)
	}
	probe.Close()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("connect to the %s: %w", what, err)
	}
	return conn, nil
}

// callRemoteMaster finds the master of host in the collector and calls f
// with a client of it over the pool's TLS, as the administrator.
func callRemoteMaster(pc *poolConfig, host string, f func(ctx context.Context, host string, c wire.MasterAdminClient) error) error {
	_, adminTLS, err := pc.tlsConfigs(string(pki.RoleAdmin))
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return fmt.Errorf("%w (%w)", errNotAdministrator, err)
		}
		return err
	}
	agent, closeAgent, err := agentClient(pc)
	if err != nil {
		return err
	}
	defer closeAgent()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	reply, err := agent.QueryPool(ctx, &wire.QueryRequest{Type: typeDaemonMaster, Constraint: "Name == " + classad.String(host).String()})
	if err != nil {
		return rpcError("find the master of "+host, err)
	}
	if len(reply.Ads) == 0 {
		return fmt.Errorf("no master of %s is known to the collector", host)
	}
	ad, err := classad.Parse(reply.Ads[0])
	if err != nil {
		return fmt.Errorf("the master ad of %s: %w", host, err)
	}
	addr, _ := ad.EvalString("MasterAddr")
	if addr == "" {
		return fmt.Errorf("the master of %s takes no orders over the network", host)
	}
	// A master answers with its host's startd or agent certificate.
	conn, err := wire.Dial(addr, pki.ExpectRole(adminTLS, pki.RoleStartd, pki.RoleAgent))
	if err != nil {
		return fmt.Errorf("connect to the master of %s: %w", host, err)
	}
	defer conn.Close()
	if err := f(ctx, host, wire.NewMasterAdminClient(conn)); err != nil {
		if status.Code(err) == codes.PermissionDenied {
			return errNotAdministrator
		}
		return rpcError(host, err)
	}
	return nil
}
