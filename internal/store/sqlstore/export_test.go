package sqlstore

// SetSharedCommitGroups sets how many shared transactions may run at once.
func SetSharedCommitGroups(s *Store, n int) {
	s.shared.mu.Lock()
	defer s.shared.mu.Unlock()
	s.shared.limit = n
}

// QueuedSharedCommits is how many shared transactions wait for a group.
func QueuedSharedCommits(s *Store) int {
	s.shared.mu.Lock()
	defer s.shared.mu.Unlock()
	return len(s.shared.queue)
}

// CommittedSharedGroups counts the groups that committed together.
func CommittedSharedGroups(s *Store) int64 { return s.shared.committed.Load() }
