package sqlstore

// ClaimOutboundSQL is the UPDATE that claims due outbound deliveries, as d
// runs it.
func ClaimOutboundSQL(d Driver) string { return claimOutbound(d) }

// ReleaseChainSQL is the UPDATE that makes a task's next parked delivery
// due.
const ReleaseChainSQL = releaseChain

// InsertOutboundDeliverySQL is the fan-out's INSERT of one delivery.
const InsertOutboundDeliverySQL = insertOutboundDelivery + `($3, CAST($4 AS BIGINT), $5, $6, CAST($7 AS TIMESTAMPTZ),
	CAST($8 AS BOOLEAN), CAST($9 AS TIMESTAMPTZ))) AS v WHERE true`

// ClaimOutboundPlanner is what a claim on PostgreSQL sets for its own
// transaction before its UPDATE.
const ClaimOutboundPlanner = claimOutboundPlanner
