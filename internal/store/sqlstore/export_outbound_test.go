package sqlstore

// ClaimOutboundSQL is the UPDATE that claims due outbound deliveries, for a
// dialect's SkipLocked.
func ClaimOutboundSQL(skipLocked string) string { return claimOutbound(skipLocked) }

// ReleaseChainSQL is the UPDATE that makes a task's next parked delivery
// due.
const ReleaseChainSQL = releaseChain

// InsertOutboundDeliverySQL is the fan-out's INSERT of one delivery.
const InsertOutboundDeliverySQL = insertOutboundDelivery + `($3, CAST($4 AS BIGINT), $5, $6, CAST($7 AS TIMESTAMPTZ),
	CAST($8 AS BOOLEAN), CAST($9 AS TIMESTAMPTZ))) AS v WHERE true`
