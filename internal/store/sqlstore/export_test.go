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
