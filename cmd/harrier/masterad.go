package main

import (
	"context"
	"crypto/tls"
	"log/slog"
	"os"
	"strings"
	"time"

	"harrier.dev/harrier/classad"
	"harrier.dev/harrier/master"
	"harrier.dev/harrier/pki"
	"harrier.dev/harrier/wire"
)

// TypeDaemonMaster is the type of a master's ad in the collector.
const typeDaemonMaster = "DaemonMaster"

// advertiseMaster publishes the master's DaemonMaster ad every
// UPDATE_INTERVAL until ctx is done, then withdraws it. The master
// advertises with clientTLS, its host's startd or agent certificate (see
// hostTLS), which the collector allows for this type of ad only. adminAddr
// is where it serves the administrator over TLS.
func advertiseMaster(ctx context.Context, m *master.Master, pc *poolConfig, host string, started time.Time, adminAddr string, clientTLS *tls.Config, logger *slog.Logger) {
	addr, err := pc.require("MATCHMAKER_ADDR")
	if err != nil {
		logger.Warn("master ad not advertised", "err", err)
		return
	}
	interval, err := pc.c.Duration("UPDATE_INTERVAL", 10*time.Second)
	if err != nil {
		logger.Warn("master ad not advertised", "err", err)
		return
	}
	conn, err := wire.Dial(addr, pki.ExpectRole(clientTLS, pki.RoleMatchmaker))
	if err != nil {
		logger.Warn("master ad not advertised", "err", err)
		return
	}
	defer conn.Close()
	collector := wire.NewCollectorClient(conn)
	lease := int32(3 * interval / time.Second)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if st, err := m.Status(ctx); err == nil {
			ad := masterAd(host, os.Getpid(), started, st)
			ad.SetString("MasterAddr", adminAddr)
			cctx, cancel := wire.WithTimeout(ctx)
			_, err := collector.Advertise(cctx, &wire.AdvertiseRequest{Type: typeDaemonMaster, Name: host, Ad: ad.String(), LeaseSeconds: lease})
			cancel()
			if err != nil && ctx.Err() == nil {
				logger.Debug("advertise the master's ad", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			cctx, cancel := wire.WithTimeout(context.WithoutCancel(ctx))
			_, _ = collector.Invalidate(cctx, &wire.InvalidateRequest{Type: typeDaemonMaster, Name: host})
			cancel()
			return
		case <-t.C:
		}
	}
}

// masterAd is a master's DaemonMaster ad, as HTCondor's condor_master
// publishes it: its start time, its daemons (DaemonList), and for each
// daemon NAME_Pid, NAME_StartTime, NAME_Restarts and NAME_Off, NAME being
// the daemon's name with every character not allowed in an attribute
// name made '_'.
func masterAd(host string, pid int, started time.Time, st []master.DaemonStatus) *classad.ClassAd {
	ad := classad.New()
	ad.SetString("MyType", typeDaemonMaster)
	ad.SetString("Name", host)
	ad.SetString("Machine", host)
	ad.SetInt("MasterPid", int64(pid))
	ad.SetInt("DaemonStartTime", started.Unix())
	ad.SetInt("MyCurrentTime", time.Now().Unix())
	var names []string
	restarts := 0
	for _, d := range st {
		names = append(names, d.Name)
		restarts += d.Restarts
		a := attrName(d.Name)
		ad.SetInt(a+"_Pid", int64(d.Pid))
		ad.SetInt(a+"_StartTime", d.Started.Unix())
		ad.SetInt(a+"_Restarts", int64(d.Restarts))
		ad.SetBool(a+"_Off", d.Off)
	}
	ad.SetString("DaemonList", strings.Join(names, ", "))
	ad.SetInt("Restarts", int64(restarts))
	return ad
}

// attrName makes name usable as (the start of) an attribute name.
func attrName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	return string(b)
}
