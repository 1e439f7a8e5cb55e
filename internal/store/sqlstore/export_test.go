package sqlstore

// EnableSharedCommits makes s share commits whatever its driver prefers, so
// the mechanism is tested on every dialect.
func EnableSharedCommits(s *Store) { s.shared.enabled = true }

// QueuedSharedCommits is how many shared transactions wait for a group.
func QueuedSharedCommits(s *Store) int { return s.shared.groups.Queued() }

// CommittedSharedGroups counts the groups that committed together.
func CommittedSharedGroups(s *Store) int64 { return s.shared.committed.Load() }

// FinishDeliverySQL is the UPDATE that records a processed delivery.
const FinishDeliverySQL = finishDelivery

// ObserveLookupBatches makes s batch its entity lookups whatever its driver
// (SQLite then reads a batch's statements one after another) and calls
// observe with each batch's size before the batch reads.
func ObserveLookupBatches(s *Store, observe func(size int)) {
	q := newLookupQueue(s)
	run := q.Run
	q.Run = func(batch []lookupMember) []lookupResult {
		observe(len(batch))
		return run(batch)
	}
	s.lookups = q
}

// QueuedLookups is how many entity lookups wait for a batch.
func QueuedLookups(s *Store) int { return s.lookups.Queued() }

// BatchesLookups reports whether s reads concurrent entity lookups together.
func BatchesLookups(s *Store) bool { return s.lookups != nil }

// ClaimDeliveriesSQL is the UPDATE that claims due deliveries, for a
// dialect's SkipLocked.
func ClaimDeliveriesSQL(skipLocked string) string { return claimDeliveries(skipLocked) }
