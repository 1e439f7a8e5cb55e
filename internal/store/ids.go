package store

import "github.com/google/uuid"

// TimeOrderedID returns a time-ordered UUID (version 7) for a row of an
// append-heavy table (deliveries, tasks, creation operations): each insert
// lands on the right edge of the primary-key B-tree instead of a random
// leaf, so a batch dirties a few index pages, not one per row (fewer WAL
// frames in SQLite, fewer full-page writes in PostgreSQL).
func TimeOrderedID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString() // the clock or entropy failed: still unique
	}
	return id.String()
}
