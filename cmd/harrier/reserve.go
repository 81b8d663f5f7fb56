package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/user"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc"

	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/wire"
)

// runReserve asks the matchmaker for an advance reservation of N machines
// in a window, which the administrator's policy (RESERVATION_POLICY_FILE)
// grants or refuses; -list shows the reservations whose windows have not
// ended, -cancel ID gives one back. Users reserve for themselves through
// their agent; the pool administrator (root, with the pool's admin
// certificate) also for others (--user) and cancels any.
func runReserve(args []string, _ io.Reader, stdout io.Writer) error {
	tf := newToolFlags("reserve")
	nodes := tf.fs.Int("nodes", 0, "how many machines")
	start := tf.fs.String("start", "", "the window's start: Unix seconds or ISO 8601 (2026-05-01T14:00, local time unless it says)")
	end := tf.fs.String("end", "", "the window's end, as --start")
	owner := tf.fs.String("user", "", "reserve for this user (administrator)")
	list := tf.fs.Bool("list", false, "list the reservations whose windows have not ended")
	cancelID := tf.fs.String("cancel", "", "cancel the reservation ID")
	if err := tf.parse(args); err != nil {
		return err
	}
	if len(tf.fs.Args()) > 0 {
		return usagef("reserve takes no arguments: %q", tf.fs.Args())
	}
	pc, err := findPool(*tf.pool)
	if err != nil {
		return err
	}
	me, err := user.Current()
	if err != nil {
		return err
	}
	client, closeFn, err := reservationsClient(pc, me.Uid == "0")
	if err != nil {
		return err
	}
	defer closeFn()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	switch {
	case *list:
		reply, err := client.ListReservations(ctx, &wire.ListReservationsRequest{})
		if err != nil {
			return rpcError("reserve -list", err)
		}
		printReservations(stdout, reply.Reservations)
		return nil
	case *cancelID != "":
		reply, err := client.CancelReservation(ctx, &wire.CancelReservationRequest{Id: *cancelID, Requester: me.Username})
		if err != nil {
			return rpcError("reserve -cancel", err)
		}
		fmt.Fprintf(stdout, "Reservation %s of %s cancelled.\n", reply.Reservation.Id, reply.Reservation.Owner)
		return nil
	}
	if *nodes < 1 || *start == "" || *end == "" {
		return usagef("reserve wants --nodes N --start T --end T (or -list, -cancel ID)")
	}
	from, err := parseWhen(*start)
	if err != nil {
		return usagef("--start: %v", err)
	}
	to, err := parseWhen(*end)
	if err != nil {
		return usagef("--end: %v", err)
	}
	if *owner == "" {
		*owner = me.Username
	}
	reply, err := client.Reserve(ctx, &wire.ReserveRequest{Owner: *owner, Start: from.Unix(), End: to.Unix(), Nodes: int32(*nodes), Requester: me.Username})
	if err != nil {
		return rpcError("reserve", err)
	}
	if !reply.Accepted {
		fmt.Fprintf(stdout, "Reservation refused: %s\n", reply.Reason)
		return exitError(1)
	}
	r := reply.Reservation
	fmt.Fprintf(stdout, "Reservation %s granted to %s: %d machine(s) from %s to %s: %s\n", r.Id, r.Owner, len(r.Nodes),
		when(r.Start), when(r.End), strings.Join(r.Nodes, " "))
	fmt.Fprintf(stdout, "Submit its jobs with: +ReservationId = %q\n", r.Id)
	return nil
}

// reservationsClient talks to the matchmaker's Reservations service: as
// the pool administrator with the admin certificate when admin, or else
// through the local agent, which names the caller.
func reservationsClient(pc *poolConfig, admin bool) (reservationsAPI, func(), error) {
	if !admin {
		client, closeFn, err := agentClient(pc)
		if err != nil {
			return nil, nil, err
		}
		return client, closeFn, nil
	}
	addr, err := pc.require("MATCHMAKER_ADDR")
	if err != nil {
		return nil, nil, err
	}
	_, tlsCfg, err := pc.tlsConfigs(string(pki.RoleAdmin))
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return nil, nil, fmt.Errorf("only the pool administrator may do this (%w)", err)
		}
		return nil, nil, err
	}
	conn, err := wire.Dial(addr, pki.ExpectRole(tlsCfg, pki.RoleMatchmaker))
	if err != nil {
		return nil, nil, err
	}
	return wire.NewReservationsClient(conn), func() { conn.Close() }, nil
}

// reservationsAPI is what both the agent's and the matchmaker's services
// offer for reservations.
type reservationsAPI interface {
	Reserve(ctx context.Context, in *wire.ReserveRequest, opts ...grpc.CallOption) (*wire.ReserveReply, error)
	ListReservations(ctx context.Context, in *wire.ListReservationsRequest, opts ...grpc.CallOption) (*wire.ListReservationsReply, error)
	CancelReservation(ctx context.Context, in *wire.CancelReservationRequest, opts ...grpc.CallOption) (*wire.CancelReservationReply, error)
}

// parseWhen reads a time as Unix seconds or ISO 8601 (with or without
// seconds, a zone, or the T), local time when it names no zone.
func parseWhen(s string) (time.Time, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(n, 0), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02T15:04Z07:00"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is neither Unix seconds nor ISO 8601 (2006-01-02T15:04[:05][Z|±hh:mm])", s)
}

func when(unix int64) string { return time.Unix(unix, 0).Format("2006-01-02 15:04:05 MST") }

// printReservations prints one line per reservation, by start time.
func printReservations(w io.Writer, rs []*wire.ReservationInfo) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tOWNER\tSTART\tEND\tMACHINES")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Id, r.Owner, when(r.Start), when(r.End), strings.Join(r.Nodes, " "))
	}
	tw.Flush()
	fmt.Fprintf(w, "\n%d reservations\n", len(rs))
}
