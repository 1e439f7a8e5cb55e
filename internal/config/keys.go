package config

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// The file's keys are checked against the configuration's types before
// yaml.v3 decodes it (with KnownFields, which stays as a backstop): its
// own error for a typo ("field secret not found in type
// config.Connection") names a Go type, not the place in the file, and not
// the key that was meant. The keys a section takes are read from the yaml
// tags of its type, so the check and the suggestions follow the types.

// yamlShapes maps a type decoded through its own UnmarshalYAML to the type
// whose fields are its keys.
var yamlShapes = map[reflect.Type]reflect.Type{
	reflect.TypeFor[Connection](): reflect.TypeFor[connectionYAML](),
}

// checkKeys refuses the first key of the document root that the
// configuration has no place for, naming its line, the section it is in
// and the key meant, or the keys the section takes.
func checkKeys(root *yaml.Node) error {
	if root == nil || root.Kind != yaml.DocumentNode || len(root.Content) == 0 {
		return nil
	}
	return walkKeys(root.Content[0], reflect.TypeFor[Config](), "")
}

// walkKeys checks node against t; where names node's place in the file
// ("" the top level, "connections[0] (gh-main)").
func walkKeys(node *yaml.Node, t reflect.Type, where string) error {
	for node.Kind == yaml.AliasNode && node.Alias != nil {
		node = node.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		if node.Kind != yaml.MappingNode {
			return nil // the decoder reports a value of the wrong kind
		}
		if shape, ok := yamlShapes[t]; ok {
			t = shape
		}
		keys := yamlKeys(t)
		for i := 0; i+1 < len(node.Content); i += 2 {
			k, v := node.Content[i], node.Content[i+1]
			if k.Value == "<<" && k.Tag == "!!merge" {
				// A merge key: the merged mappings are this section's keys.
				merged := []*yaml.Node{v}
				if v.Kind == yaml.SequenceNode {
					merged = v.Content
				}
				for _, m := range merged {
					if err := walkKeys(m, t, where); err != nil {
						return err
					}
				}
				continue
			}
			field, ok := keys.types[k.Value]
			if !ok {
				return unknownKey(k, where, keys.names)
			}
			if err := walkKeys(v, field, join(where, k.Value)); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if node.Kind != yaml.SequenceNode {
			return nil
		}
		for i, item := range node.Content {
			if err := walkKeys(item, t.Elem(), where+"["+strconv.Itoa(i)+"]"+entryName(item)); err != nil {
				return err
			}
		}
	}
	return nil
}

// sectionKeys are the keys a section takes: their names in the order of
// the type's fields, and the type of each one's value.
type sectionKeys struct {
	names []string
	types map[string]reflect.Type
}

// yamlKeys reads the keys of struct type t from its fields' yaml tags, as
// yaml.v3 names them: the tag's name, else the field's name in lower case;
// inlined structs give theirs, "-" and unexported fields none.
func yamlKeys(t reflect.Type) sectionKeys {
	keys := sectionKeys{types: map[string]reflect.Type{}}
	var collect func(t reflect.Type)
	collect = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			switch {
			case slices.Contains(strings.Split(opts, ","), "inline"):
				collect(f.Type)
				continue
			case name == "-" || (!f.IsExported() && !f.Anonymous):
				continue
			case name == "":
				name = strings.ToLower(f.Name)
			}
			if _, dup := keys.types[name]; !dup {
				keys.names = append(keys.names, name)
			}
			keys.types[name] = f.Type
		}
	}
	collect(t)
	return keys
}

// unknownKey is the error for key k in the section where, which takes
// valid: "line 12: unknown key secret in connections[0] (gh-main); did you
// mean secrets?", else the section's keys.
func unknownKey(k *yaml.Node, where string, valid []string) error {
	place := "at the top level"
	if where != "" {
		place = "in " + where
	}
	if near := nearest(k.Value, valid); near != "" {
		return fmt.Errorf("line %d: unknown key %s %s; did you mean %s?", k.Line, k.Value, place, near)
	}
	return fmt.Errorf("line %d: unknown key %s %s; the keys there are %s", k.Line, k.Value, place, strings.Join(valid, ", "))
}

// nearest is the key of valid closest to key (case aside, at most a third
// of its letters apart, two at most), "" when none is that close.
func nearest(key string, valid []string) string {
	best, bestDist := "", min(2, max(1, len([]rune(key))/3))+1
	for _, v := range valid {
		if d := editDistance(strings.ToLower(key), v); d < bestDist {
			best, bestDist = v, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, by runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// join is the place of key inside the section where.
func join(where, key string) string {
	if where == "" {
		return key
	}
	return where + "." + key
}

// entryName is how a list entry is named beside its index: its id (or a
// token's name) in parentheses, "" when it has none.
func entryName(item *yaml.Node) string {
	for _, key := range []string{"id", "name"} {
		if v := mappingValue(item, key); v != nil && v.Kind == yaml.ScalarNode && v.Value != "" {
			return " (" + v.Value + ")"
		}
	}
	return ""
}

// Keys lists every key the configuration file takes, as a path from the
// top level ("connections[].hooks[].id"; "[]" marks a list's entries), in
// the order of the types' fields. It reads the same yaml tags as the check
// above, so docs/configuration.md can be held to it by a test.
func Keys() []string {
	var out []string
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if shape, ok := yamlShapes[t]; ok {
			t = shape
		}
		keys := yamlKeys(t)
		for _, name := range keys.names {
			path := join(prefix, name)
			out = append(out, path)
			ft := keys.types[name]
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch {
			case ft.Kind() == reflect.Struct:
				walk(ft, path)
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				walk(ft.Elem(), path+"[]")
			}
		}
	}
	walk(reflect.TypeFor[Config](), "")
	return out
}
