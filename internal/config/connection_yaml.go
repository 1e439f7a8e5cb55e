package config

import (
	"fmt"
	"reflect"

	"gopkg.in/yaml.v3"
)

// plainConnection is Connection without its UnmarshalYAML.
type plainConnection Connection

// connectionYAML is a connection as written: its fields, and api_base_url,
// the older name of api_url.
type connectionYAML struct {
	plainConnection `yaml:",inline"`
	APIBaseURL      string `yaml:"api_base_url"`
}

// UnmarshalYAML reads a connection, taking api_base_url, the older name of
// api_url, into APIURL: one field, two names. A connection giving both
// with different values is refused. yaml.v3 does not pass the file's
// KnownFields on to an unmarshaler, so unknown keys (of the connection and
// of its hooks and app) are refused here too; Parse has named them with
// their place in the file already (keys.go).
func (c *Connection) UnmarshalYAML(node *yaml.Node) error {
	var w connectionYAML
	if err := knownKeys(node, reflect.TypeOf(w), "a connection"); err != nil {
		return err
	}
	if hooks := mappingValue(node, "hooks"); hooks != nil && hooks.Kind == yaml.SequenceNode {
		for _, h := range hooks.Content {
			if err := knownKeys(h, reflect.TypeOf(Hook{}), "a hook"); err != nil {
				return err
			}
		}
	}
	if app := mappingValue(node, "app"); app != nil {
		if err := knownKeys(app, reflect.TypeOf(App{}), "app"); err != nil {
			return err
		}
	}
	if err := node.Decode(&w); err != nil {
		return err
	}
	*c = Connection(w.plainConnection)
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
// inlined structs included) is named by; where names the node in the
// error.
func knownKeys(node *yaml.Node, t reflect.Type, where string) error {
	if node.Kind != yaml.MappingNode {
		return nil // node.Decode reports the mismatch
	}
	keys := yamlKeys(t)
	for i := 0; i+1 < len(node.Content); i += 2 {
		if k := node.Content[i]; keys.types[k.Value] == nil && !(k.Value == "<<" && k.Tag == "!!merge") {
			return unknownKey(k, where, keys.names)
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
