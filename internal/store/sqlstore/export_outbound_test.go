package sqlstore

// ClaimOutboundSQL is the UPDATE that claims due outbound deliveries, for a
// dialect's SkipLocked.
func ClaimOutboundSQL(skipLocked string) string { return claimOutbound(skipLocked) }

// ReleaseChainSQL is the UPDATE that makes a task's next parked delivery
// due.
const ReleaseChainSQL = releaseChain

// OwedTasksSQL is the read of which of n tasks a subscription still owes.
func OwedTasksSQL(n int) string { return owedTasks(n) }
