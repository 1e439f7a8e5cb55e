package config

import (
	"fmt"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// UnmarshalYAML reads a connection, taking api_base_url, the older name of
// api_url, into APIURL: one field, two names. A connection giving both
// with different values is refused. yaml.v3 does not pass the file's
// KnownFields on to an unmarshaler, so unknown keys (of the connection and
// of its hooks) are refused here, in the decoder's own words.
func (c *Connection) UnmarshalYAML(node *yaml.Node) error {
	type plain Connection // the same fields, without this method
	var w struct {
		plain      `yaml:",inline"`
		APIBaseURL string `yaml:"api_base_url"`
	}
	if err := knownKeys(node, reflect.TypeOf(w), "Connection"); err != nil {
		return err
	}
	if hooks := mappingValue(node, "hooks"); hooks != nil && hooks.Kind == yaml.SequenceNode {
		for _, h := range hooks.Content {
			if err := knownKeys(h, reflect.TypeOf(Hook{}), "Hook"); err != nil {
				return err
			}
		}
	}
	if app := mappingValue(node, "app"); app != nil {
		if err := knownKeys(app, reflect.TypeOf(App{}), "App"); err != nil {
			return err
		}
	}
	if err := node.Decode(&w); err != nil {
		return err
	}
	*c = Connection(w.plain)
	switch {
	case w.APIBaseURL == "" || w.APIBaseURL == c.APIURL:
	case c.APIURL == "":
		c.APIURL = w.APIBaseURL
	default:
		return fmt.Errorf("line %d: connection %q: api_base_url (the older name of api_url) and api_url differ; give api_url only",
			keyLine(node, "api_base_url"), c.ID)
	}
	return nil
}

// knownKeys refuses a key of the mapping node that no field of t (a struct,
// inlined structs included) is named by; typeName names t in the error.
func knownKeys(node *yaml.Node, t reflect.Type, typeName string) error {
	if node.Kind != yaml.MappingNode {
		return nil // node.Decode reports the mismatch
	}
	names := map[string]bool{}
	var collect func(t reflect.Type)
	collect = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if opts == "inline" {
				collect(f.Type)
				continue
			}
			names[name] = true
		}
	}
	collect(t)
	for i := 0; i+1 < len(node.Content); i += 2 {
		if k := node.Content[i]; !names[k.Value] {
			return fmt.Errorf("line %d: field %s not found in type config.%s", k.Line, k.Value, typeName)
		}
	}
	return nil
}

// keyLine is the line of key in the mapping node, else the node's.
func keyLine(node *yaml.Node, key string) int {
	if v := mappingValue(node, key); v != nil {
		return v.Line
	}
	return node.Line
}
