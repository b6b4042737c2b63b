package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/vstream-cdc/vstream/filter"
	"github.com/vstream-cdc/vstream/internal/cliconfig"
	"github.com/vstream-cdc/vstream/server"
	"github.com/vstream-cdc/vstream/vstreamer"
)

// config is vstreamd's configuration. Flags, environment variables (VSTREAM_ + the key in
// upper case with - as _) and a YAML file fill it; flags win over the environment, which wins
// over the file.
type config struct {
	// MySQLDSN is user:pass@tcp(host:port)/db.
	MySQLDSN string `yaml:"mysql-dsn"`
	// Keyspace labels events; defaults to the DSN's database.
	Keyspace string `yaml:"keyspace"`
	// Databases lists, comma-separated, the other databases of the server clients may stream,
	// each under its own name as keyspace; "*" allows every one but the system schemas.
	Databases string `yaml:"databases"`
	Shard     string `yaml:"shard"`
	// Listen is the gRPC address.
	Listen string `yaml:"listen"`
	// AuthToken, when set, is required from clients as a bearer token.
	AuthToken string `yaml:"auth-token"`
	// AuthTokenFile names a file holding the token, to keep it off the command line.
	AuthTokenFile string `yaml:"auth-token-file"`
	LogLevel      string `yaml:"log-level"`
	// Flavor forces mariadb or mysql; empty detects it.
	Flavor string `yaml:"flavor"`
	// Positions is gtid or filepos: whether streams take and send GTID positions or
	// FilePos/<file>:<offset> positions.
	Positions string `yaml:"positions"`
	// Topology, when set, is a topology file (package topology): keyspaces whose shards are
	// on other servers, streamed as vtgate streams them.
	Topology string `yaml:"topology"`
	// MetricsListen, when set, serves Prometheus metrics at /metrics and the status page at /
	// on this HTTP address.
	MetricsListen string `yaml:"metrics-listen"`
	// TLSCert and TLSKey, when set, serve gRPC over TLS; TLSClientCA also requires client
	// certificates signed by it (mutual TLS).
	TLSCert     string `yaml:"tls-cert"`
	TLSKey      string `yaml:"tls-key"`
	TLSClientCA string `yaml:"tls-client-ca"`
	// MySQLTLSCA turns on TLS to the database, verifying its certificate with this CA;
	// MySQLTLSCert/Key add a client certificate; MySQLTLSSkipVerify ("true") turns on TLS
	// without verifying the server, only when asked for explicitly.
	MySQLTLSCA         string `yaml:"mysql-tls-ca"`
	MySQLTLSCert       string `yaml:"mysql-tls-cert"`
	MySQLTLSKey        string `yaml:"mysql-tls-key"`
	MySQLTLSSkipVerify string `yaml:"mysql-tls-skip-verify"`
	// Limits; numbers kept as text so that flags, environment and YAML read alike.
	MaxStreams      string `yaml:"max-streams"`
	StartsPerSecond string `yaml:"max-starts-per-second"`
	MaxBatchBytes   string `yaml:"max-batch-bytes"`
	// DrainTimeout bounds how long a SIGTERM waits for streams to reach a transaction boundary.
	DrainTimeout string `yaml:"drain-timeout"`
	// VSchemaFile names the keyspace's VSchema in Vitess's JSON form (vschema.Keyspace):
	// every stream takes tables' keyspace ids from their vindexes in it.
	VSchemaFile string `yaml:"vschema-file"`
	// ColumnMasks are masks every stream and row read gets (filter.ParseMasks).
	ColumnMasks string `yaml:"column-masks"`
	// SchemaHistoryDir, when set, keeps the tables' definitions by binlog position there, so
	// that streams resumed from before a DDL describe rows as they were written.
	SchemaHistoryDir string `yaml:"schema-history-dir"`
	// SharedReader ("true", the default) lets the streams at one position share one binlog
	// connection; "false" gives every stream its own.
	SharedReader string `yaml:"shared-reader"`
	// CPUProfile, when set, names a file the server writes a Go CPU profile of its whole run
	// to, on a clean shutdown (SIGTERM or SIGINT): for finding where a workload's CPU goes.
	CPUProfile string `yaml:"cpuprofile"`
	// CopyParallelism, CopyMaxRowsPerSecond and CopyMaxReplicationLag are the defaults of
	// the request flags copy_parallelism, copy_max_rows_per_second and
	// copy_max_replication_lag, for streams that leave them zero.
	CopyParallelism       string `yaml:"copy-parallelism"`
	CopyMaxRowsPerSecond  string `yaml:"copy-max-rows-per-second"`
	CopyMaxReplicationLag string `yaml:"copy-max-replication-lag"`
	// PurgeWarnFiles, PurgeWarnAge and PurgeCheckInterval configure the purge alarm (see
	// server.PurgeWarn): a stream whose position needs a binlog file with at most this many
	// files before it, or one the server's expiry purges within this long, is warned about.
	PurgeWarnFiles     string `yaml:"purge-warn-files"`
	PurgeWarnAge       string `yaml:"purge-warn-age"`
	PurgeCheckInterval string `yaml:"purge-check-interval"`

	checkOnly bool
	// parsed is the text above parsed once, by validate: run uses it and parses nothing
	// again, so no error can slip between the check and the use.
	parsed settings
}

// settings are the parsed values of a valid config.
type settings struct {
	level      slog.Level
	limits     server.Limits
	drain      time.Duration
	dsn        dsn
	skipVerify bool
	// ownReaders is shared-reader=false.
	ownReaders bool
	// vschema is the parsed vschema-file; nil without one.
	vschema *filter.VSchema
	// masks are the parsed column-masks.
	masks []filter.Mask
	// databases is the parsed databases list; nil without one.
	databases []string
	// copyParallelism, copyMaxRows and copyMaxLag are the parsed copy defaults.
	copyParallelism int
	copyMaxRows     int64
	copyMaxLag      time.Duration
	// purgeWarn is the parsed purge alarm settings.
	purgeWarn server.PurgeWarn
}

type flagDef struct {
	name, usage string
	field       func(*config) *string
	def         string
}

var flagDefs = []flagDef{
	{"mysql-dsn", "database to stream, as user:pass@tcp(host:port)/db", func(c *config) *string { return &c.MySQLDSN }, ""},
	{"keyspace", "keyspace name on events (default: the DSN's database)", func(c *config) *string { return &c.Keyspace }, ""},
	{"databases", "other databases clients may stream, comma-separated, each as the keyspace of its name; * for all but the system schemas (default: the DSN's database only)", func(c *config) *string { return &c.Databases }, ""},
	{"shard", "shard name on events", func(c *config) *string { return &c.Shard }, "0"},
	{"listen", "gRPC listen address", func(c *config) *string { return &c.Listen }, "127.0.0.1:15991"},
	{"auth-token", "bearer token clients must send (optional)", func(c *config) *string { return &c.AuthToken }, ""},
	{"auth-token-file", "file holding the bearer token (keeps it off the command line)", func(c *config) *string { return &c.AuthTokenFile }, ""},
	{"log-level", "debug, info, warn or error", func(c *config) *string { return &c.LogLevel }, "info"},
	{"flavor", "mariadb or mysql (default: detect from the server)", func(c *config) *string { return &c.Flavor }, ""},
	{"positions", "gtid or filepos: stream positions as GTID sets or as FilePos/<binlog file>:<offset> (no table copy)", func(c *config) *string { return &c.Positions }, "gtid"},
	{"metrics-listen", "HTTP address for Prometheus metrics at /metrics and the status page at / (default: off)", func(c *config) *string { return &c.MetricsListen }, ""},
	{"tls-cert", "PEM certificate file: serve gRPC over TLS (with --tls-key)", func(c *config) *string { return &c.TLSCert }, ""},
	{"tls-key", "PEM private key file of --tls-cert", func(c *config) *string { return &c.TLSKey }, ""},
	{"tls-client-ca", "PEM CA file: require client certificates signed by it (mutual TLS)", func(c *config) *string { return &c.TLSClientCA }, ""},
	{"mysql-tls-ca", "PEM CA file: connect to the database over TLS and verify it", func(c *config) *string { return &c.MySQLTLSCA }, ""},
	{"mysql-tls-cert", "PEM client certificate for the database (with --mysql-tls-key)", func(c *config) *string { return &c.MySQLTLSCert }, ""},
	{"mysql-tls-key", "PEM private key of --mysql-tls-cert", func(c *config) *string { return &c.MySQLTLSKey }, ""},
	{"mysql-tls-skip-verify", "true: TLS to the database without verifying its certificate", func(c *config) *string { return &c.MySQLTLSSkipVerify }, "false"},
	{"max-streams", "most streams open at once (0: no limit)", func(c *config) *string { return &c.MaxStreams }, "0"},
	{"max-starts-per-second", "most stream starts per second per client IP (0: no limit)", func(c *config) *string { return &c.StartsPerSecond }, "0"},
	{"max-batch-bytes", "largest max_batch_bytes a client may ask for (0: no limit)", func(c *config) *string { return &c.MaxBatchBytes }, "0"},
	{"drain-timeout", "on SIGTERM, how long streams get to end at a transaction boundary", func(c *config) *string { return &c.DrainTimeout }, "10s"},
	{"column-masks", "columns whose values never leave the server in clear, in every stream of both APIs and every row read: RULE=TABLE.COLUMN[,...] separated by ; with RULE mask.with.N.chars, mask.hash.ALGO.with.salt.SALT or truncate.to.N.chars (Debezium's)", func(c *config) *string { return &c.ColumnMasks }, ""},
	{"vschema-file", "keyspace VSchema, Vitess's JSON: keyspace ids from its vindexes (default: hash of a one-integer primary key)", func(c *config) *string { return &c.VSchemaFile }, ""},
	{"shared-reader", "false: every stream reads the binlog on a connection of its own instead of sharing one", func(c *config) *string { return &c.SharedReader }, "true"},
	{"cpuprofile", "file to write a Go CPU profile of the run to on a clean shutdown (default: off)", func(c *config) *string { return &c.CPUProfile }, ""},
	{"copy-parallelism", "chunks a table copy reads at once (of several tables, or the next ones of one), each on a database connection of its own (1 to 16), for streams that do not ask; chunks of different tables then interleave in the stream", func(c *config) *string { return &c.CopyParallelism }, "1"},
	{"copy-max-rows-per-second", "most rows per second a stream's table copy reads, for streams that do not ask (0: no limit)", func(c *config) *string { return &c.CopyMaxRowsPerSecond }, "0"},
	{"copy-max-replication-lag", "when the database is a replica, copy chunks wait while its replication lag is above this, for streams that do not ask (0: no bound; a primary never waits)", func(c *config) *string { return &c.CopyMaxReplicationLag }, "0"},
	{"purge-warn-files", "warn (status page, vstream_stream_purge_warning) when a stream's position needs a binlog file with at most this many files before it on the server (-1: never)",
		func(c *config) *string { return &c.PurgeWarnFiles }, strconv.Itoa(server.DefaultPurgeWarnFiles)},
	{"purge-warn-age", "warn when the server's binlog expiry purges the file a stream's position needs within this duration (0: never)",
		func(c *config) *string { return &c.PurgeWarnAge }, server.DefaultPurgeWarnAge.String()},
	{"purge-check-interval", "how often the server's binlog files are read for the purge alarm", func(c *config) *string { return &c.PurgeCheckInterval }, server.DefaultPurgeCheckInterval.String()},
	{"topology", "YAML file of keyspaces, their shards (-80, 80-, ...) and each shard's servers (primary, replicas): a VGtid naming them streams every shard from its server, merged per transaction, failing over to another server of a shard (default: none)", func(c *config) *string { return &c.Topology }, ""},
	{"schema-history-dir", "directory of the schema history: rows resumed from before a DDL are described as written (MariaDB; default: off)", func(c *config) *string { return &c.SchemaHistoryDir }, ""},
}

// loadConfig reads args, the environment (through getenv) and the YAML file named by
// --config or VSTREAM_CONFIG.
func loadConfig(args []string, getenv func(string) string) (*config, error) {
	cfg := &config{}
	cmd := cliconfig.Command{Name: "vstreamd", EnvPrefix: "VSTREAM_",
		UsageLine: "usage: vstreamd --mysql-dsn user:pass@tcp(host:port)/db [flags]"}
	defs := make([]cliconfig.Flag[config], len(flagDefs))
	for i, d := range flagDefs {
		defs[i] = cliconfig.Flag[config]{Name: d.name, Usage: d.usage, Field: d.field, Default: d.def}
	}
	checkOnly, err := cliconfig.Load(cmd, args, getenv, defs, cfg)
	if err != nil {
		return nil, err
	}
	cfg.checkOnly = checkOnly
	return cfg, cfg.validate()
}

type helpError = cliconfig.HelpError

// validate checks the configuration, in the order of its flags' kinds, and parses what the
// server needs of it into c.parsed.
func (c *config) validate() error {
	if err := c.validateConnections(); err != nil {
		return err
	}
	return c.validateStreams()
}

// validateConnections checks and reads what the server connects with: the MySQL server
// (DSN, TLS, binlog readers) and its clients (listen addresses, token, TLS).
func (c *config) validateConnections() error {
	if c.MySQLDSN == "" {
		return errors.New("mysql-dsn is required: --mysql-dsn user:pass@tcp(host:port)/db")
	}
	var err error
	if c.parsed.dsn, err = parseDSN(c.MySQLDSN); err != nil {
		return err
	}
	if _, _, err = net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("listen %q: %w", c.Listen, err)
	}
	if c.MetricsListen != "" {
		if _, _, err = net.SplitHostPort(c.MetricsListen); err != nil {
			return fmt.Errorf("metrics-listen %q: %w", c.MetricsListen, err)
		}
	}
	if c.AuthTokenFile != "" {
		if c.AuthToken != "" {
			return errors.New("auth-token and auth-token-file: give one of them")
		}
		data, rerr := os.ReadFile(c.AuthTokenFile)
		if rerr != nil {
			return fmt.Errorf("auth-token-file: %w", rerr)
		}
		if c.AuthToken = strings.TrimSpace(string(data)); c.AuthToken == "" {
			return fmt.Errorf("auth-token-file %s is empty", c.AuthTokenFile)
		}
	}
	if (c.MySQLTLSCert == "") != (c.MySQLTLSKey == "") {
		return errors.New("mysql-tls-cert and mysql-tls-key go together: give both or neither")
	}
	shared, err := strconv.ParseBool(c.SharedReader)
	if err != nil {
		return fmt.Errorf("shared-reader %q: want true or false", c.SharedReader)
	}
	c.parsed.ownReaders = !shared
	if c.parsed.skipVerify, err = strconv.ParseBool(c.MySQLTLSSkipVerify); err != nil {
		return fmt.Errorf("mysql-tls-skip-verify %q: want true or false", c.MySQLTLSSkipVerify)
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return errors.New("tls-cert and tls-key go together: give both or neither")
	}
	if c.TLSClientCA != "" && c.TLSCert == "" {
		return errors.New("tls-client-ca needs tls-cert and tls-key")
	}
	return nil
}

// validateStreams checks and parses what shapes the streams: logging, limits, the
// server's flavor and positions, the schema history, databases, the copy's defaults,
// masks and the VSchema.
func (c *config) validateStreams() error {
	var err error
	if c.parsed.level, err = c.level(); err != nil {
		return err
	}
	if c.parsed.limits, err = c.limits(); err != nil {
		return err
	}
	if c.parsed.drain, err = c.drainTimeout(); err != nil {
		return err
	}
	if c.parsed.purgeWarn, err = c.purgeWarn(); err != nil {
		return err
	}
	switch c.Flavor {
	case "", "mariadb", "mysql":
	default:
		return fmt.Errorf("flavor %q: want mariadb or mysql", c.Flavor)
	}
	if c.SchemaHistoryDir != "" {
		// A directory that does not exist yet is created when the server starts.
		if fi, serr := os.Stat(c.SchemaHistoryDir); serr == nil && !fi.IsDir() {
			return fmt.Errorf("schema-history-dir %s is not a directory", c.SchemaHistoryDir)
		}
	}
	switch c.Positions {
	case vstreamer.PositionsGTID, vstreamer.PositionsFilePos:
	default:
		return fmt.Errorf("positions %q: want %s or %s", c.Positions, vstreamer.PositionsGTID, vstreamer.PositionsFilePos)
	}
	if c.Positions == vstreamer.PositionsFilePos && c.SchemaHistoryDir != "" {
		return errors.New("schema-history-dir records GTID positions and cannot serve --positions filepos: drop one of them")
	}
	if c.parsed.databases, err = parseDatabases(c.Databases); err != nil {
		return err
	}
	if err = c.copyDefaults(); err != nil {
		return err
	}
	if c.parsed.masks, err = filter.ParseMasks(c.ColumnMasks); err != nil {
		return fmt.Errorf("column-masks: %w", err)
	}
	return c.readVSchema()
}

// readVSchema reads --vschema-file, if given.
func (c *config) readVSchema() error {
	if c.VSchemaFile == "" {
		return nil
	}
	data, err := os.ReadFile(c.VSchemaFile)
	if err != nil {
		return fmt.Errorf("vschema-file: %w", err)
	}
	if c.parsed.vschema, err = filter.ParseVSchema(data); err != nil {
		return fmt.Errorf("vschema-file %s: %w", c.VSchemaFile, err)
	}
	return nil
}

// copyDefaults parses the copy's defaults.
func (c *config) copyDefaults() error {
	p, err := strconv.Atoi(c.CopyParallelism)
	if err != nil || p < 1 || p > vstreamer.MaxCopyParallelism {
		return fmt.Errorf("copy-parallelism %q: want a whole number of tables from 1 to %d", c.CopyParallelism, vstreamer.MaxCopyParallelism)
	}
	c.parsed.copyParallelism = p
	if c.parsed.copyMaxRows, err = strconv.ParseInt(c.CopyMaxRowsPerSecond, 10, 64); err != nil || c.parsed.copyMaxRows < 0 {
		return fmt.Errorf("copy-max-rows-per-second %q: want a whole number of rows, 0 for no limit", c.CopyMaxRowsPerSecond)
	}
	if c.parsed.copyMaxLag, err = time.ParseDuration(c.CopyMaxReplicationLag); err != nil || c.parsed.copyMaxLag < 0 {
		return fmt.Errorf("copy-max-replication-lag %q: want a duration such as 30s, 0 for no bound", c.CopyMaxReplicationLag)
	}
	return nil
}

// parseDatabases reads a comma-separated list of database names; empty is none.
func parseDatabases(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for _, d := range strings.Split(s, ",") {
		d = strings.TrimSpace(d)
		if d == "" {
			return nil, fmt.Errorf("databases %q: an empty name; list database names separated by commas, or * for all", s)
		}
		out = append(out, d)
	}
	return out, nil
}

func (c *config) level() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return l, fmt.Errorf("log-level %q: want debug, info, warn or error", c.LogLevel)
	}
	return l, nil
}

// dsn is a parsed user:pass@tcp(host:port)/db.
type dsn struct {
	User, Password, Addr, Database string
}

var dsnRE = regexp.MustCompile(`^([^:@]*)(?::(.*))?@tcp\(([^)]*)\)/([^?]+)(\?.*)?$`)

func parseDSN(s string) (dsn, error) {
	m := dsnRE.FindStringSubmatch(s)
	if m == nil {
		return dsn{}, fmt.Errorf("mysql-dsn %q: want user:pass@tcp(host:port)/db", redact(s))
	}
	d := dsn{User: m[1], Password: m[2], Addr: m[3], Database: m[4]}
	if d.User == "" {
		return dsn{}, fmt.Errorf("mysql-dsn %q: user is empty", redact(s))
	}
	if _, _, err := net.SplitHostPort(d.Addr); err != nil {
		return dsn{}, fmt.Errorf("mysql-dsn %q: address %q: want host:port", redact(s), d.Addr)
	}
	return d, nil
}

// redact hides the password of a DSN in messages.
func redact(s string) string {
	at := strings.LastIndex(s, "@")
	colon := strings.Index(s, ":")
	if at < 0 || colon < 0 || colon > at {
		return s
	}
	return s[:colon+1] + "***" + s[at:]
}

// tlsConfig loads the server's TLS settings; nil when TLS is off.
func (c *config) tlsConfig() (*tls.Config, error) {
	if c.TLSCert == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("tls-cert/tls-key: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if c.TLSClientCA != "" {
		pem, err := os.ReadFile(c.TLSClientCA)
		if err != nil {
			return nil, fmt.Errorf("tls-client-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls-client-ca %s: no PEM certificate in it", c.TLSClientCA)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

func (c *config) limits() (server.Limits, error) {
	var l server.Limits
	var err error
	if l.MaxStreams, err = strconv.Atoi(c.MaxStreams); err != nil || l.MaxStreams < 0 {
		return l, fmt.Errorf("max-streams %q: want a whole number, 0 for no limit", c.MaxStreams)
	}
	if l.StartsPerSecond, err = strconv.ParseFloat(c.StartsPerSecond, 64); err != nil || l.StartsPerSecond < 0 {
		return l, fmt.Errorf("max-starts-per-second %q: want a number, 0 for no limit", c.StartsPerSecond)
	}
	if l.MaxBatchBytes, err = strconv.ParseInt(c.MaxBatchBytes, 10, 64); err != nil || l.MaxBatchBytes < 0 {
		return l, fmt.Errorf("max-batch-bytes %q: want a whole number of bytes, 0 for no limit", c.MaxBatchBytes)
	}
	return l, nil
}

func (c *config) purgeWarn() (server.PurgeWarn, error) {
	var w server.PurgeWarn
	var err error
	if w.Files, err = strconv.Atoi(c.PurgeWarnFiles); err != nil || w.Files < -1 {
		return w, fmt.Errorf("purge-warn-files %q: want a whole number of binlog files, -1 to turn the file warning off", c.PurgeWarnFiles)
	}
	if w.Age, err = time.ParseDuration(c.PurgeWarnAge); err != nil || w.Age < 0 {
		return w, fmt.Errorf("purge-warn-age %q: want a duration such as 6h, 0 to turn the age warning off", c.PurgeWarnAge)
	}
	if w.Interval, err = time.ParseDuration(c.PurgeCheckInterval); err != nil || w.Interval <= 0 {
		return w, fmt.Errorf("purge-check-interval %q: want a positive duration such as 30s", c.PurgeCheckInterval)
	}
	return w, nil
}

func (c *config) drainTimeout() (time.Duration, error) {
	d, err := time.ParseDuration(c.DrainTimeout)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("drain-timeout %q: want a positive duration such as 10s", c.DrainTimeout)
	}
	return d, nil
}

// mysqlTLS loads the TLS settings for the database connections; nil when TLS is off.
func (c *config) mysqlTLS(host string) (*tls.Config, error) {
	skip := c.parsed.skipVerify
	if c.MySQLTLSCA == "" && c.MySQLTLSCert == "" && !skip {
		return nil, nil
	}
	cfg := &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12, InsecureSkipVerify: skip}
	if c.MySQLTLSCA != "" {
		pem, err := os.ReadFile(c.MySQLTLSCA)
		if err != nil {
			return nil, fmt.Errorf("mysql-tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("mysql-tls-ca %s: no PEM certificate in it", c.MySQLTLSCA)
		}
		cfg.RootCAs = pool
	}
	if c.MySQLTLSCert != "" {
		cert, err := tls.LoadX509KeyPair(c.MySQLTLSCert, c.MySQLTLSKey)
		if err != nil {
			return nil, fmt.Errorf("mysql-tls-cert/mysql-tls-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
