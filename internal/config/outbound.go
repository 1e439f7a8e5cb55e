package config

import (
	"fmt"
	"time"

	"gopkg.in/yaml.v3"
)

// Outbound is the outbound webhooks block as written (docs/design.md,
// "Task events out"). Decoding checks it, so a bad value stops the start
// with the line it is on.
type Outbound struct {
	// AllowHTTP lets subscriptions use http:// URLs (https only otherwise).
	AllowHTTP bool `yaml:"allow_http"`
	// AllowPrivate lets the gateway connect to loopback, private,
	// link-local, multicast and unspecified addresses (refused otherwise,
	// when connecting).
	AllowPrivate bool `yaml:"allow_private"`
	// RetrySchedule is the wait before each retry of a failed attempt (Go
	// durations); after the last the event is failed for that
	// subscription. Empty: the default schedule.
	RetrySchedule []string `yaml:"retry_schedule"`
	// DisableAfter disables a subscription whose every attempt has failed
	// for this long (a Go duration; empty: 120h; 0: never).
	DisableAfter string `yaml:"disable_after"`
}

// OutboundPolicy is Outbound parsed.
type OutboundPolicy struct {
	AllowHTTP     bool
	AllowPrivate  bool
	RetrySchedule []time.Duration
	DisableAfter  time.Duration
}

// DefaultRetrySchedule: retries after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and
// 10 h, eight attempts over about 27.5 hours.
var DefaultRetrySchedule = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour,
	5 * time.Hour, 10 * time.Hour, 10 * time.Hour}

// DefaultDisableAfter is how long a subscription may fail every attempt
// before it is disabled: five days.
const DefaultDisableAfter = 120 * time.Hour

// Policy parses the block, defaults filled in.
func (o Outbound) Policy() (OutboundPolicy, error) {
	p := OutboundPolicy{AllowHTTP: o.AllowHTTP, AllowPrivate: o.AllowPrivate, DisableAfter: DefaultDisableAfter}
	if len(o.RetrySchedule) == 0 {
		p.RetrySchedule = append([]time.Duration(nil), DefaultRetrySchedule...)
	}
	for i, v := range o.RetrySchedule {
		d, err := parseRetry(v)
		if err != nil {
			return OutboundPolicy{}, fmt.Errorf("outbound.retry_schedule[%d]: %w", i, err)
		}
		p.RetrySchedule = append(p.RetrySchedule, d)
	}
	if o.DisableAfter != "" {
		d, err := time.ParseDuration(o.DisableAfter)
		switch {
		case err != nil:
			return OutboundPolicy{}, fmt.Errorf("outbound.disable_after: %q is not a duration (e.g. 120h)", o.DisableAfter)
		case d < 0:
			return OutboundPolicy{}, fmt.Errorf("outbound.disable_after: %q must be positive, or 0 to never disable", o.DisableAfter)
		}
		p.DisableAfter = d
	}
	return p, nil
}

func parseRetry(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not a duration (e.g. 5s, 30m)", v)
	case d <= 0:
		return 0, fmt.Errorf("%q must be positive", v)
	}
	return d, nil
}

// outboundKeys are the block's keys, in the order errors list them.
const outboundKeys = "allow_http, allow_private, retry_schedule, disable_after"

// UnmarshalYAML reads the block strictly (an unknown key is an error, as
// elsewhere in the file) and checks each value, naming its line.
func (o *Outbound) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: outbound: must be a mapping (%s)", n.Line, outboundKeys)
	}
	var out Outbound
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		if seen[key.Value] {
			return fmt.Errorf("line %d: outbound.%s: given twice", key.Line, key.Value)
		}
		seen[key.Value] = true
		switch key.Value {
		case "allow_http", "allow_private":
			var b bool
			if val.Kind != yaml.ScalarNode || val.Decode(&b) != nil {
				return fmt.Errorf("line %d: outbound.%s: must be true or false", val.Line, key.Value)
			}
			if key.Value == "allow_http" {
				out.AllowHTTP = b
			} else {
				out.AllowPrivate = b
			}
		case "retry_schedule":
			if val.Kind != yaml.SequenceNode || len(val.Content) == 0 {
				return fmt.Errorf("line %d: outbound.retry_schedule: must be a list of durations (e.g. [5s, 5m, 30m])", val.Line)
			}
			for j, item := range val.Content {
				if item.Kind != yaml.ScalarNode {
					return fmt.Errorf("line %d: outbound.retry_schedule[%d]: must be a duration", item.Line, j)
				}
				if _, err := parseRetry(item.Value); err != nil {
					return fmt.Errorf("line %d: outbound.retry_schedule[%d]: %w", item.Line, j, err)
				}
				out.RetrySchedule = append(out.RetrySchedule, item.Value)
			}
		case "disable_after":
			if val.Kind != yaml.ScalarNode || val.Value == "" {
				return fmt.Errorf("line %d: outbound.disable_after: must be a duration (e.g. 120h)", val.Line)
			}
			out.DisableAfter = val.Value
			if _, err := (Outbound{DisableAfter: val.Value}).Policy(); err != nil {
				return fmt.Errorf("line %d: %w", val.Line, err)
			}
		default:
			return fmt.Errorf("line %d: outbound: unknown key %q (%s)", key.Line, key.Value, outboundKeys)
		}
	}
	*o = out
	return nil
}
