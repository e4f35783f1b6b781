package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// Load reads the TOML file at path (none when path is ""), applies the
// key=value overrides, which win over the file, and returns the resulting
// configuration. It checks every key's name, type and range and reports the
// first problem, in key order, as one error naming the key. Load does not
// touch the disk beyond reading the file; call Validate before using the
// result.
func Load(path string, overrides []string) (*Broker, error) {
	b := &Broker{static: map[string]string{}}
	if path != "" {
		where := filepath.Base(path)
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		var tree map[string]any
		if _, err := toml.Decode(string(data), &tree); err != nil {
			return nil, fmt.Errorf("config: %s: %w", where, err)
		}
		flat := map[string]string{}
		if err := flatten("", tree, flat); err != nil {
			if ke, ok := err.(*KeyError); ok {
				ke.Where = where
			}
			return nil, err
		}
		keys := make([]string, 0, len(flat))
		for k := range flat {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			norm, kerr := checkBrokerValue(k, flat[k])
			if kerr != nil {
				kerr.Where = where
				return nil, kerr
			}
			b.static[k] = norm
		}
	}
	for _, o := range overrides {
		key, value, ok := strings.Cut(o, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return nil, &KeyError{Key: o, Detail: "expected key=value", Where: "--override", Kind: ErrInvalidValue}
		}
		norm, kerr := checkBrokerValue(key, strings.TrimSpace(value))
		if kerr != nil {
			kerr.Where = "--override"
			return nil, kerr
		}
		b.static[key] = norm
	}
	if err := b.apply(); err != nil {
		return nil, err
	}
	return b, nil
}

// flatten turns nested TOML tables back into Kafka's dotted names and each
// value into the string Kafka would read from server.properties: arrays
// become comma lists.
func flatten(prefix string, tree map[string]any, out map[string]string) error {
	for k, val := range tree {
		name := k
		if prefix != "" {
			name = prefix + "." + k
		}
		if sub, ok := val.(map[string]any); ok {
			if err := flatten(name, sub, out); err != nil {
				return err
			}
			continue
		}
		s, err := tomlScalar(val)
		if err != nil {
			return &KeyError{Key: name, Detail: err.Error(), Kind: ErrInvalidValue}
		}
		if _, dup := out[name]; dup {
			return &KeyError{Key: name, Detail: "is set twice (dotted and quoted forms name the same key)", Kind: ErrInvalidValue}
		}
		out[name] = s
	}
	return nil
}

// tomlScalar formats one TOML value as a config string.
func tomlScalar(val any) (string, error) {
	switch x := val.(type) {
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	case []any:
		parts := make([]string, len(x))
		for i, item := range x {
			s, err := tomlScalar(item)
			if err != nil {
				return "", err
			}
			if _, nested := item.([]any); nested {
				return "", errors.New("nested arrays are not allowed")
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), nil
	default:
		return "", fmt.Errorf("a TOML %T is not a valid config value", val)
	}
}
