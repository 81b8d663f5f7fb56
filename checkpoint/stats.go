package checkpoint

import (
	"fmt"
	"os"
	"time"

	"github.com/checkpoint-restore/go-criu/v8/stats"
)

// DumpStats are CRIU's statistics of a dump (its stats-dump file).
type DumpStats struct {
	// Freezing is how long freezing the job took; Frozen how long it
	// stayed frozen, which is the job's downtime when it keeps running.
	Freezing time.Duration `json:"freezing"`
	Frozen   time.Duration `json:"frozen"`
	// MemDump is the time spent collecting memory, MemWrite the part of
	// it spent writing pages to the image.
	MemDump      time.Duration `json:"memdump"`
	MemWrite     time.Duration `json:"memwrite"`
	PagesScanned uint64        `json:"pages_scanned"`
	PagesWritten uint64        `json:"pages_written"`
}

// RestoreStats are CRIU's statistics of a restore (stats-restore).
type RestoreStats struct {
	Forking       time.Duration `json:"forking"`
	Restore       time.Duration `json:"restore"`
	PagesRestored uint64        `json:"pages_restored"`
}

// usec converts CRIU's microseconds.
func usec(v uint32) time.Duration { return time.Duration(v) * time.Microsecond }

// readDumpStats reads stats-dump, which CRIU writes in its working
// directory (not the image directory).
func readDumpStats(workDir string) (DumpStats, error) {
	d, err := os.Open(workDir)
	if err != nil {
		return DumpStats{}, fmt.Errorf("dump statistics: %w", err)
	}
	defer d.Close()
	s, err := stats.CriuGetDumpStats(d)
	if err != nil {
		return DumpStats{}, fmt.Errorf("dump statistics: %w", err)
	}
	return DumpStats{
		Freezing: usec(s.GetFreezingTime()), Frozen: usec(s.GetFrozenTime()),
		MemDump: usec(s.GetMemdumpTime()), MemWrite: usec(s.GetMemwriteTime()),
		PagesScanned: s.GetPagesScanned(), PagesWritten: s.GetPagesWritten(),
	}, nil
}

// readRestoreStats reads stats-restore from CRIU's working directory.
func readRestoreStats(workDir string) (RestoreStats, error) {
	d, err := os.Open(workDir)
	if err != nil {
		return RestoreStats{}, fmt.Errorf("restore statistics: %w", err)
	}
	defer d.Close()
	s, err := stats.CriuGetRestoreStats(d)
	if err != nil {
		return RestoreStats{}, fmt.Errorf("restore statistics: %w", err)
	}
	return RestoreStats{
		Forking: usec(s.GetForkingTime()), Restore: usec(s.GetRestoreTime()),
		PagesRestored: s.GetPagesRestored(),
	}, nil
}
