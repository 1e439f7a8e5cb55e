package config

import (
	"fmt"
	"time"

	"gopkg.in/yaml.v3"
)

// Retention is the retention block as written: Go durations ("168h"),
// each empty for its default. Decoding checks it (RetentionPolicy), so a
// bad value stops the start with the line it is on.
type Retention struct {
	Processed string `yaml:"processed"`
	Failed    string `yaml:"failed"`
	Events    string `yaml:"events"`
	Interval  string `yaml:"interval"`
}

// RetentionPolicy is Retention parsed. A zero Processed, Failed or Events
// keeps those rows forever.
type RetentionPolicy struct {
	// Processed: succeeded, ignored and suppressed deliveries, counted from
	// when they finished.
	Processed time.Duration
	// Failed: failed deliveries, counted from when they failed.
	Failed time.Duration
	// Events: outbox events every consumer has read, counted from when
	// they were appended.
	Events time.Duration
	// Interval: how often the pruner runs.
	Interval time.Duration
}

// Retention defaults.
const (
	DefaultRetainProcessed   = 168 * time.Hour
	DefaultRetainFailed      = 720 * time.Hour
	DefaultRetainEvents      = 168 * time.Hour
	DefaultRetentionInterval = 10 * time.Minute
)

// retentionKey is one key of the block.
type retentionKey struct {
	name string
	def  time.Duration
	raw  func(*Retention) *string
	dst  func(*RetentionPolicy) *time.Duration
}

var retentionKeys = []retentionKey{
	{"processed", DefaultRetainProcessed, func(r *Retention) *string { return &r.Processed }, func(p *RetentionPolicy) *time.Duration { return &p.Processed }},
	{"failed", DefaultRetainFailed, func(r *Retention) *string { return &r.Failed }, func(p *RetentionPolicy) *time.Duration { return &p.Failed }},
	{"events", DefaultRetainEvents, func(r *Retention) *string { return &r.Events }, func(p *RetentionPolicy) *time.Duration { return &p.Events }},
	{"interval", DefaultRetentionInterval, func(r *Retention) *string { return &r.Interval }, func(p *RetentionPolicy) *time.Duration { return &p.Interval }},
}

// Policy parses the block: an empty key takes its default; a negative
// duration, or an interval that is not positive, is an error.
func (r Retention) Policy() (RetentionPolicy, error) {
	var p RetentionPolicy
	for _, k := range retentionKeys {
		d, err := k.parse(*k.raw(&r))
		if err != nil {
			return p, err
		}
		*k.dst(&p) = d
	}
	return p, nil
}

func (k retentionKey) parse(v string) (time.Duration, error) {
	if v == "" {
		return k.def, nil
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		return 0, fmt.Errorf("retention.%s: %q is not a duration (e.g. 168h, 10m)", k.name, v)
	case k.name == "interval" && d <= 0:
		return 0, fmt.Errorf("retention.%s: %q must be positive", k.name, v)
	case d < 0:
		return 0, fmt.Errorf("retention.%s: %q must be positive, or 0 to keep forever", k.name, v)
	}
	return d, nil
}

// UnmarshalYAML reads the block strictly (an unknown key is an error, as
// elsewhere in the file) and checks each duration, naming its line.
func (r *Retention) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: retention: must be a mapping of durations (processed, failed, events, interval)", n.Line)
	}
	var out Retention
	seen := map[string]bool{}
next:
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		for _, k := range retentionKeys {
			if k.name != key.Value {
				continue
			}
			if seen[k.name] {
				return fmt.Errorf("line %d: retention.%s: given twice", key.Line, k.name)
			}
			seen[k.name] = true
			if val.Kind != yaml.ScalarNode || val.Value == "" {
				return fmt.Errorf("line %d: retention.%s: must be a duration (e.g. 168h, 10m)", val.Line, k.name)
			}
			if _, err := k.parse(val.Value); err != nil {
				return fmt.Errorf("line %d: %w", val.Line, err)
			}
			*k.raw(&out) = val.Value
			continue next
		}
		return fmt.Errorf("line %d: retention: unknown key %q (processed, failed, events, interval)", key.Line, key.Value)
	}
	*r = out
	return nil
}
