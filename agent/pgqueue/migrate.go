package pgqueue

import (
	"embed"

	"harrier.dev/harrier/internal/pgschema"
)

// The schema's versions: migrations/NNNN_what.sql takes the database from
// version NNNN-1 to NNNN.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// schema is the job queue's: its migrations, applied under an advisory
// lock, recorded in schema_version. A migration that must say whose the
// rows it finds are reads the agent applying it as harrier.agent.
var schema = pgschema.Schema{
	Files:        migrationFiles,
	Dir:          "migrations",
	VersionTable: "schema_version",
	Lock:         0x4861727269657251, // "HarrierQ"
}
