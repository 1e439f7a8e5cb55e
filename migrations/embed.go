// Package migrations embeds the SQL schema, one folder per dialect with the
// same version numbers, applied with goose at start-up and by `gateway migrate`.
package migrations

import "embed"

// Postgres holds the PostgreSQL migrations under "postgres/".
//
//go:embed postgres/*.sql
var Postgres embed.FS

// SQLite holds the SQLite migrations under "sqlite/".
//
//go:embed sqlite/*.sql
var SQLite embed.FS
