package cliconfig

import (
	"bytes"
	"fmt"
	"regexp"

	"go.yaml.in/yaml/v3"
)

// commentedKey is an optional key shown commented out in an example configuration.
var commentedKey = regexp.MustCompile(`(?m)^# ([a-z][a-z-]*): `)

// ExampleKeys reads an example configuration whose optional keys are shown commented out
// ("# key: value"), as the files in deploy/ show them: it uncomments them, decodes the whole
// as strictly as Load decodes a file (into cfg, a pointer to the configuration struct) and
// returns the keys it names, set or commented out, so that a test can check the example
// shows every setting the command accepts.
func ExampleKeys(data []byte, cfg any) (map[string]bool, error) {
	uncommented := commentedKey.ReplaceAll(data, []byte("$1: "))
	dec := yaml.NewDecoder(bytes.NewReader(uncommented))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil {
		return nil, fmt.Errorf("with its commented keys uncommented: %w", err)
	}
	var keys map[string]any
	if err := yaml.Unmarshal(uncommented, &keys); err != nil {
		return nil, err
	}
	names := make(map[string]bool, len(keys))
	for k := range keys {
		names[k] = true
	}
	return names, nil
}
