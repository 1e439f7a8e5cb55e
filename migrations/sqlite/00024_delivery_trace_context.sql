-- +goose Up
-- The W3C traceparent of a delivery's receipt span, kept with the
-- delivery so that every processing attempt, on any replica and however
-- late, joins the receipt's trace. NULL when tracing was off.
ALTER TABLE deliveries ADD COLUMN trace_context TEXT;

-- +goose Down
ALTER TABLE deliveries DROP COLUMN trace_context;
