package jobqueue

import (
	"context"
	"fmt"
	"testing"

	"harrier.dev/harrier/classad"
)

// jobAd returns a typical job ad of 25 attributes, as a submission of
// cluster c makes for proc p.
func jobAd(c, p int) *classad.ClassAd {
	ad := classad.New()
	ad.SetInt("ClusterId", int64(c))
	ad.SetInt("ProcId", int64(p))
	ad.SetString("Owner", "alice")
	ad.SetString("Cmd", "/home/alice/bin/analyse")
	ad.SetString("Arguments", fmt.Sprintf("--input in.%d.dat --seed %d", p, p*7))
	ad.SetString("Iwd", "/home/alice/run")
	ad.SetString("In", "/dev/null")
	ad.SetString("Out", fmt.Sprintf("out.%d", p))
	ad.SetString("Err", fmt.Sprintf("err.%d", p))
	ad.SetString("UserLog", "/home/alice/run/job.log")
	ad.SetInt("JobUniverse", 5)
	ad.SetInt("JobStatus", 1)
	ad.SetInt("QDate", 1795000000)
	ad.SetInt("RequestCpus", 1)
	ad.SetInt("RequestMemory", 2048)
	ad.SetInt("RequestDisk", 1048576)
	ad.SetBool("ShouldTransferFiles", false)
	ad.SetString("Environment", "PATH=/usr/bin:/bin HOME=/home/alice")
	ad.SetInt("MaxRetries", 3)
	ad.SetInt("NumJobStarts", 0)
	ad.SetInt("ImageSize", 1000)
	must(ad.SetExpr("Requirements", `(TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Memory >= RequestMemory)`))
	must(ad.SetExpr("Rank", "TARGET.Mips"))
	must(ad.SetExpr("PeriodicRemove", "(JobStatus == 5) && (time() - EnteredCurrentStatus > 86400)"))
	ad.SetInt("EnteredCurrentStatus", 1795000000)
	return ad
}

// jobIDOf reads the id attributes of a job ad.
func jobIDOf(ad *classad.ClassAd) JobID {
	c, _ := ad.EvalInt("ClusterId")
	p, _ := ad.EvalInt("ProcId")
	return JobID{int(c), int(p)}
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func openT(t testing.TB, dir string, opts Options) *Log {
	t.Helper()
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l
}

func commitT(t testing.TB, s Store, txn *Txn) {
	t.Helper()
	if err := s.Commit(context.Background(), txn); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

// dump renders the whole queue for comparison: ids, counter and ads.
func dump(l *Log) string {
	out := fmt.Sprintf("next=%d\n", l.q.nextCluster)
	l.Scan(func(id JobID, ad *classad.ClassAd) bool {
		out += id.String() + " " + ad.String() + "\n"
		return true
	})
	return out
}

func expr(s string) classad.Expr {
	x, err := classad.ParseExpr(s)
	must(err)
	return x
}
