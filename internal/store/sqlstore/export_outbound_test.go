package sqlstore

// ClaimOutboundSQL is the UPDATE that claims due outbound deliveries, as d
// runs it.
func ClaimOutboundSQL(d Driver) string { return claimOutbound(d) }

// ReleaseChainSQL is the UPDATE that makes a task's next parked delivery
// due.
const ReleaseChainSQL = releaseChain

// InsertOutboundDeliverySQL is the fan-out's INSERT of one delivery.
const InsertOutboundDeliverySQL = insertOutboundDelivery + `($5, CAST($6 AS BIGINT), $7, $8, CAST($9 AS TIMESTAMPTZ),
	CAST($10 AS BOOLEAN), CAST($11 AS TIMESTAMPTZ), CAST($12 AS BOOLEAN))) AS v) AS c WHERE true
	ON CONFLICT (subscription_id, event_id) DO NOTHING RETURNING subscription_id, event_id, next_attempt_at, lease_owner`

// ClaimOutboundPlanner is what a claim on PostgreSQL sets for its own
// transaction before its UPDATE.
const ClaimOutboundPlanner = claimOutboundPlanner
