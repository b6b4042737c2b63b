// Package cliconfig loads a command's configuration the way vstream's daemons take it: from
// flags, from environment variables (a prefix plus the flag's name in upper case with - as _)
// and from a YAML file named by --config or the prefix's CONFIG variable. Flags win over the
// environment, which wins over the file, which wins over the defaults; --check-config asks
// the command to validate and exit.
package cliconfig

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Flag is one setting of a configuration struct T: a flag, an environment variable and a
// YAML key (the struct field's yaml tag, which must equal Name). Every value is text, so
// flags, environment and YAML read alike; the command parses them once it has them all.
type Flag[T any] struct {
	Name, Usage string
	Field       func(*T) *string
	Default     string
}

// HelpError is returned for -h: Usage is the text to print, and the command exits 0.
type HelpError struct{ Usage string }

func (h *HelpError) Error() string { return h.Usage }

// EnvName is the environment variable of a flag: prefix + NAME_IN_UPPER_CASE.
func EnvName(prefix, flagName string) string {
	return prefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// Command describes the command whose configuration is loaded.
type Command struct {
	// Name is the command's name, for the flag set.
	Name string
	// UsageLine is printed above the flags by -h.
	UsageLine string
	// EnvPrefix is put before each flag's environment variable, e.g. "VSTREAM_".
	EnvPrefix string
}

// Load fills cfg from defs' defaults, the YAML file, the environment (through getenv) and
// args, in that order of increasing precedence. It reports whether --check-config was given.
// Unknown YAML keys, unknown flags and arguments are errors.
func Load[T any](cmd Command, args []string, getenv func(string) string, defs []Flag[T], cfg *T) (checkOnly bool, err error) {
	fs := flag.NewFlagSet(cmd.Name, flag.ContinueOnError)
	fs.SetOutput(new(bytes.Buffer))
	var cfgFile string
	fs.StringVar(&cfgFile, "config", getenv(cmd.EnvPrefix+"CONFIG"), fmt.Sprintf("YAML configuration file (env %sCONFIG)", cmd.EnvPrefix))
	check := fs.Bool("check-config", false, "validate the configuration and exit")
	vals := make(map[string]*string, len(defs))
	for _, d := range defs {
		vals[d.Name] = fs.String(d.Name, "", fmt.Sprintf("%s (env %s, default %q)", d.Usage, EnvName(cmd.EnvPrefix, d.Name), d.Default))
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return false, usageError(fs, cmd.UsageLine)
		}
		return false, err
	}
	if fs.NArg() > 0 {
		return false, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	for _, d := range defs {
		*d.Field(cfg) = d.Default
	}
	if cfgFile != "" {
		data, err := os.ReadFile(cfgFile)
		if err != nil {
			return false, fmt.Errorf("read config: %w", err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(cfg); err != nil {
			return false, fmt.Errorf("config file %s: %w", cfgFile, err)
		}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, d := range defs {
		if set[d.Name] {
			*d.Field(cfg) = *vals[d.Name]
		} else if v := getenv(EnvName(cmd.EnvPrefix, d.Name)); v != "" {
			*d.Field(cfg) = v
		}
	}
	return *check, nil
}

func usageError(fs *flag.FlagSet, line string) error {
	var b bytes.Buffer
	fs.SetOutput(&b)
	fmt.Fprintln(&b, line)
	fs.PrintDefaults()
	return &HelpError{b.String()}
}
