package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/vstream-cdc/vstream/client"
	"github.com/vstream-cdc/vstream/filter"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/internal/cliconfig"
	"github.com/vstream-cdc/vstream/sink"
	"github.com/vstream-cdc/vstream/sink/claimcheck"
	"github.com/vstream-cdc/vstream/sink/registry"
)

// config is vstream-sink's configuration: flags, environment variables (VSTREAM_SINK_ + the
// key in upper case with - as _) and a YAML file, read as vstreamd reads its own.
type config struct {
	Server    string `yaml:"server"`
	Token     string `yaml:"token"`
	TokenFile string `yaml:"token-file"`
	// TLS toward vstreamd: on with tls true or any of the files or the server name.
	TLS           string `yaml:"tls"`
	TLSCA         string `yaml:"tls-ca"`
	TLSCert       string `yaml:"tls-cert"`
	TLSKey        string `yaml:"tls-key"`
	TLSServerName string `yaml:"tls-server-name"`
	// Name keys the committed position and prefixes record IDs: one per sink.
	Name string `yaml:"name"`
	// Sink is kafka or nats.
	Sink string `yaml:"sink"`
	// Position is where to start when the sink has no committed position.
	Position      string `yaml:"position"`
	Keyspace      string `yaml:"keyspace"`
	Tables        string `yaml:"tables"`
	Filter        string `yaml:"filter"`
	Format        string `yaml:"format"`
	FormatOptions string `yaml:"format-options"`
	FailureMode   string `yaml:"event-processing-failure-handling-mode"`
	MaxBatchBytes string `yaml:"max-batch-bytes"`
	CopyChunkRows string `yaml:"copy-chunk-rows"`
	OnPurged      string `yaml:"on-purged"`
	Heartbeat     string `yaml:"heartbeat"`
	TopicPrefix   string `yaml:"topic-prefix"`
	TopicMap      string `yaml:"topic-map"`
	DefaultTopic  string `yaml:"default-topic"`
	// TopicRoutes are SCHEMA.TABLE=TOPIC rules (sink.ParseRoutes), PartitionBy
	// SCHEMA.TABLE=key|table rules (sink.ParsePartitions); the first that matches wins.
	TopicRoutes string `yaml:"topic-routes"`
	PartitionBy string `yaml:"partition-by"`
	// OnOversize is fail, key-only or claim-check: what a record larger than the broker
	// takes does; ClaimCheckURL is the store of claim-check.
	OnOversize string `yaml:"on-oversize"`
	// ColumnMasks are masks the server applies to the stream (filter.ParseMasks).
	ColumnMasks   string `yaml:"column-masks"`
	ClaimCheckURL string `yaml:"claim-check-url"`
	Checkpoint    string `yaml:"checkpoint-interval"`
	DrainTimeout  string `yaml:"drain-timeout"`
	MetricsListen string `yaml:"metrics-listen"`
	LogLevel      string `yaml:"log-level"`

	KafkaBrokers          string `yaml:"kafka-brokers"`
	KafkaOffsetsTopic     string `yaml:"kafka-offsets-topic"`
	KafkaMaxRecordBytes   string `yaml:"kafka-max-record-bytes"`
	KafkaMaxBufferedBytes string `yaml:"kafka-max-buffered-bytes"`
	// KafkaSASLMechanism is plain, scram-sha-256, scram-sha-512 or oauthbearer; empty is none.
	KafkaSASLMechanism    string `yaml:"kafka-sasl-mechanism"`
	KafkaSASLUser         string `yaml:"kafka-sasl-user"`
	KafkaSASLPassword     string `yaml:"kafka-sasl-password"`
	KafkaSASLPasswordFile string `yaml:"kafka-sasl-password-file"`
	KafkaSASLToken        string `yaml:"kafka-sasl-token"`
	KafkaSASLTokenFile    string `yaml:"kafka-sasl-token-file"`
	KafkaTLS              string `yaml:"kafka-tls"`
	KafkaTLSCA            string `yaml:"kafka-tls-ca"`
	KafkaTLSCert          string `yaml:"kafka-tls-cert"`
	KafkaTLSKey           string `yaml:"kafka-tls-key"`
	KafkaTLSServerName    string `yaml:"kafka-tls-server-name"`

	NATSURL           string `yaml:"nats-url"`
	NATSStream        string `yaml:"nats-stream"`
	NATSBucket        string `yaml:"nats-bucket"`
	NATSDuplicates    string `yaml:"nats-duplicate-window"`
	NATSInFlight      string `yaml:"nats-max-in-flight"`
	NATSUser          string `yaml:"nats-user"`
	NATSPassword      string `yaml:"nats-password"`
	NATSPasswordFile  string `yaml:"nats-password-file"`
	NATSToken         string `yaml:"nats-token"`
	NATSTokenFile     string `yaml:"nats-token-file"`
	NATSNKeySeedFile  string `yaml:"nats-nkey-seed-file"`
	NATSCredsFile     string `yaml:"nats-creds-file"`
	NATSTLS           string `yaml:"nats-tls"`
	NATSTLSCA         string `yaml:"nats-tls-ca"`
	NATSTLSCert       string `yaml:"nats-tls-cert"`
	NATSTLSKey        string `yaml:"nats-tls-key"`
	NATSTLSServerName string `yaml:"nats-tls-server-name"`

	Registry registryConfig `yaml:",inline"`

	// Pipelines, in the YAML file only, are named pipelines run by one process: each entry
	// a name and the keys it sets apart from the ones above, which it inherits (pipelines.go).
	Pipelines []yaml.Node `yaml:"pipelines"`

	checkOnly bool
	parsed    settings
	// pipelines are the configurations to run: this one alone, or one per Pipelines entry.
	pipelines []*config
}

// settings are the parsed values of a valid config.
type settings struct {
	level                slog.Level
	request              client.Request
	topics               sink.TopicMap
	checkpoint, drain    time.Duration
	brokers              []string
	maxRecord, maxBuffer int
	duplicates           time.Duration
	inFlight             int
	// token is the bearer token for vstreamd, from token or token-file.
	token string
	// serverTLS, kafkaTLS and natsTLS are the TLS client configurations; nil is no TLS.
	serverTLS, kafkaTLS, natsTLS *tls.Config
	// kafkaSASL and natsAuth are the brokers' credentials, as client options.
	kafkaSASL []kgo.Opt
	// kafkaAuth names the SASL mechanism and user in errors (never the secret).
	kafkaAuth string
	natsAuth  []natsgo.Option
	// registry is the schema registry's configuration; nil is none.
	registry *registry.Options
}

var flagDefs = []cliconfig.Flag[config]{
	{Name: "server", Usage: "vstreamd gRPC address", Field: func(c *config) *string { return &c.Server }, Default: "127.0.0.1:15991"},
	{Name: "token", Usage: "bearer token for vstreamd (optional; better from the environment or token-file)", Field: func(c *config) *string { return &c.Token }},
	{Name: "token-file", Usage: "file holding the bearer token for vstreamd (instead of token)", Field: func(c *config) *string { return &c.TokenFile }},
	{Name: "tls", Usage: "true: TLS to vstreamd, verified with the system's roots unless tls-ca is given (any tls- file or name also turns it on)", Field: func(c *config) *string { return &c.TLS }, Default: "false"},
	{Name: "tls-ca", Usage: "PEM CA file that verifies vstreamd's certificate", Field: func(c *config) *string { return &c.TLSCA }},
	{Name: "tls-cert", Usage: "PEM client certificate for vstreamd's mutual TLS (with tls-key)", Field: func(c *config) *string { return &c.TLSCert }},
	{Name: "tls-key", Usage: "PEM private key of tls-cert", Field: func(c *config) *string { return &c.TLSKey }},
	{Name: "tls-server-name", Usage: "name vstreamd's certificate must hold, when not the host of server", Field: func(c *config) *string { return &c.TLSServerName }},
	{Name: "name", Usage: "the sink's name: keys its committed position and its record IDs; one per sink", Field: func(c *config) *string { return &c.Name }, Default: "vstream-sink"},
	{Name: "sink", Usage: "kafka or nats", Field: func(c *config) *string { return &c.Sink }},
	{Name: "position", Usage: "where to start when the sink has no committed position: current, a GTID position (see vstream --position), or copy: every row of the tables first (a snapshot, resumable), then their changes", Field: func(c *config) *string { return &c.Position }, Default: "current"},
	{Name: "keyspace", Usage: "keyspace for a current or GTID position; empty lets the server choose", Field: func(c *config) *string { return &c.Keyspace }},
	{Name: "tables", Usage: "comma-separated table rules: names or /regex (default: every table)", Field: func(c *config) *string { return &c.Tables }},
	{Name: "filter", Usage: "binlogdata.Filter as JSON, instead of tables", Field: func(c *config) *string { return &c.Filter }},
	{Name: "format", Usage: "the server's output format: avro, canal-json, canal-protobuf, debezium-json, drs-json, drs-json-c or streamsets", Field: func(c *config) *string { return &c.Format }},
	{Name: "format-options", Usage: "the format's options, name=value separated by commas", Field: func(c *config) *string { return &c.FormatOptions }},
	{Name: "event-processing-failure-handling-mode", Usage: "fail, warn or skip: what an event the server cannot encode does", Field: func(c *config) *string { return &c.FailureMode }, Default: "fail"},
	{Name: "max-batch-bytes", Usage: "largest batch the server sends (0: its default)", Field: func(c *config) *string { return &c.MaxBatchBytes }, Default: "0"},
	{Name: "copy-chunk-rows", Usage: "rows per table copy chunk: a chunk is one commit (held in memory until it for nats)", Field: func(c *config) *string { return &c.CopyChunkRows }, Default: "10000"},
	{Name: "on-purged", Usage: "fail or when_needed: when the server no longer has the binlogs of the sink's position, stop with an error, or copy the tables again and go on", Field: func(c *config) *string { return &c.OnPurged }, Default: "fail"},
	{Name: "heartbeat", Usage: "heartbeat interval asked of the server: how soon an idle sink saves its position and stops", Field: func(c *config) *string { return &c.Heartbeat }, Default: "1s"},
	{Name: "topic-prefix", Usage: "put before every topic (for nats, the subject prefix; required there, e.g. cdc.)", Field: func(c *config) *string { return &c.TopicPrefix }},
	{Name: "topic-map", Usage: "from=to topic renames separated by commas, applied instead of the prefix", Field: func(c *config) *string { return &c.TopicMap }},
	{Name: "default-topic", Usage: "topic of messages whose format names none", Field: func(c *config) *string { return &c.DefaultTopic }},
	{Name: "topic-routes", Usage: "per table topics, SCHEMA.TABLE=TOPIC separated by ; (globs such as shop.order_* or *.*; TOPIC may hold {schema}, {table} and {topic}, the format's topic): the first rule matching a record's table names its topic, after topic-prefix; records of no rule or no table go by topic-map, topic-prefix and default-topic", Field: func(c *config) *string { return &c.TopicRoutes }},
	{Name: "partition-by", Usage: "kafka: what picks a table's partition, SCHEMA.TABLE=key|table separated by ; (first match wins; default key, the record's key: its primary key; table: all the table's records in one partition, in order)", Field: func(c *config) *string { return &c.PartitionBy }},
	{Name: "column-masks", Usage: "columns the server replaces before they leave it: RULE=TABLE.COLUMN[,...] separated by ; with RULE mask.with.N.chars, mask.hash.ALGO.with.salt.SALT or truncate.to.N.chars (Debezium's)", Field: func(c *config) *string { return &c.ColumnMasks }},
	{Name: "on-oversize", Usage: "a record larger than the broker takes (kafka-max-record-bytes; NATS max_payload or the stream's max_msg_size): fail (stop the sink), key-only (send its key and headers with an empty value and vstream.oversize headers) or claim-check (write its value to claim-check-url, then send a reference to it)", Field: func(c *config) *string { return &c.OnOversize }, Default: "fail"},
	{Name: "claim-check-url", Usage: "store of on-oversize claim-check: file:///dir, or s3://bucket/prefix?endpoint=https://host:port&region=r (credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, ~/.aws/credentials or the instance's role)", Field: func(c *config) *string { return &c.ClaimCheckURL }},
	{Name: "checkpoint-interval", Usage: "how long a position with no records after it waits before it is saved alone", Field: func(c *config) *string { return &c.Checkpoint }, Default: "5s"},
	{Name: "drain-timeout", Usage: "on SIGTERM, how long to wait for a transaction boundary before dropping what is open", Field: func(c *config) *string { return &c.DrainTimeout }, Default: "10s"},
	{Name: "metrics-listen", Usage: "HTTP address for Prometheus metrics at /metrics (default: off)", Field: func(c *config) *string { return &c.MetricsListen }},
	{Name: "log-level", Usage: "debug, info, warn or error", Field: func(c *config) *string { return &c.LogLevel }, Default: "info"},
	{Name: "kafka-brokers", Usage: "Kafka seed brokers, host:port separated by commas", Field: func(c *config) *string { return &c.KafkaBrokers }},
	{Name: "kafka-offsets-topic", Usage: "topic of the committed positions (created compacted when missing)", Field: func(c *config) *string { return &c.KafkaOffsetsTopic }, Default: "vstream-sink-offsets"},
	{Name: "kafka-max-record-bytes", Usage: "largest record to send; a larger one stops the sink with an error (the broker's message.max.bytes)", Field: func(c *config) *string { return &c.KafkaMaxRecordBytes }, Default: "1048588"},
	{Name: "kafka-max-buffered-bytes", Usage: "most record bytes held before the broker acknowledges them (at least kafka-max-record-bytes)", Field: func(c *config) *string { return &c.KafkaMaxBufferedBytes }, Default: "67108864"},
	{Name: "kafka-sasl-mechanism", Usage: "SASL toward the brokers: plain, scram-sha-256, scram-sha-512 or oauthbearer (default: none)", Field: func(c *config) *string { return &c.KafkaSASLMechanism }},
	{Name: "kafka-sasl-user", Usage: "SASL user (plain, scram-*)", Field: func(c *config) *string { return &c.KafkaSASLUser }},
	{Name: "kafka-sasl-password", Usage: "SASL password (plain, scram-*; better from the environment or kafka-sasl-password-file)", Field: func(c *config) *string { return &c.KafkaSASLPassword }},
	{Name: "kafka-sasl-password-file", Usage: "file holding the SASL password", Field: func(c *config) *string { return &c.KafkaSASLPasswordFile }},
	{Name: "kafka-sasl-token", Usage: "OAUTHBEARER token (better from the environment or kafka-sasl-token-file)", Field: func(c *config) *string { return &c.KafkaSASLToken }},
	{Name: "kafka-sasl-token-file", Usage: "file holding the OAUTHBEARER token, read again at every connection (so a refreshed token is used)", Field: func(c *config) *string { return &c.KafkaSASLTokenFile }},
	{Name: "kafka-tls", Usage: "true: TLS to the brokers, verified with the system's roots unless kafka-tls-ca is given (any kafka-tls- file or name also turns it on)", Field: func(c *config) *string { return &c.KafkaTLS }, Default: "false"},
	{Name: "kafka-tls-ca", Usage: "PEM CA file that verifies the brokers' certificates", Field: func(c *config) *string { return &c.KafkaTLSCA }},
	{Name: "kafka-tls-cert", Usage: "PEM client certificate for the brokers (with kafka-tls-key)", Field: func(c *config) *string { return &c.KafkaTLSCert }},
	{Name: "kafka-tls-key", Usage: "PEM private key of kafka-tls-cert", Field: func(c *config) *string { return &c.KafkaTLSKey }},
	{Name: "kafka-tls-server-name", Usage: "name the brokers' certificates must hold, when not the host dialled", Field: func(c *config) *string { return &c.KafkaTLSServerName }},
	{Name: "nats-url", Usage: "NATS server URL(s)", Field: func(c *config) *string { return &c.NATSURL }},
	{Name: "nats-stream", Usage: "JetStream stream of the subjects (created when missing)", Field: func(c *config) *string { return &c.NATSStream }, Default: "VSTREAM"},
	{Name: "nats-bucket", Usage: "KV bucket of the checkpoints (created when missing)", Field: func(c *config) *string { return &c.NATSBucket }, Default: "vstream-sink"},
	{Name: "nats-duplicate-window", Usage: "duplicate window of a stream the sink creates: repeats after a restart are dropped within it", Field: func(c *config) *string { return &c.NATSDuplicates }, Default: "2m"},
	{Name: "nats-max-in-flight", Usage: "most messages published and not yet acknowledged", Field: func(c *config) *string { return &c.NATSInFlight }, Default: "1024"},
	{Name: "nats-user", Usage: "NATS user (with nats-password)", Field: func(c *config) *string { return &c.NATSUser }},
	{Name: "nats-password", Usage: "NATS password (better from the environment or nats-password-file)", Field: func(c *config) *string { return &c.NATSPassword }},
	{Name: "nats-password-file", Usage: "file holding the NATS password", Field: func(c *config) *string { return &c.NATSPasswordFile }},
	{Name: "nats-token", Usage: "NATS token (better from the environment or nats-token-file)", Field: func(c *config) *string { return &c.NATSToken }},
	{Name: "nats-token-file", Usage: "file holding the NATS token", Field: func(c *config) *string { return &c.NATSTokenFile }},
	{Name: "nats-nkey-seed-file", Usage: "file holding an NKey user seed (SU...): sign the server's nonce with it", Field: func(c *config) *string { return &c.NATSNKeySeedFile }},
	{Name: "nats-creds-file", Usage: "NATS credentials file (a user JWT and its NKey seed, as nsc writes it)", Field: func(c *config) *string { return &c.NATSCredsFile }},
	{Name: "nats-tls", Usage: "true: TLS to NATS, verified with the system's roots unless nats-tls-ca is given (any nats-tls- file or name, or a tls:// URL, also turns it on)", Field: func(c *config) *string { return &c.NATSTLS }, Default: "false"},
	{Name: "nats-tls-ca", Usage: "PEM CA file that verifies the NATS server's certificate", Field: func(c *config) *string { return &c.NATSTLSCA }},
	{Name: "nats-tls-cert", Usage: "PEM client certificate for NATS (with nats-tls-key)", Field: func(c *config) *string { return &c.NATSTLSCert }},
	{Name: "nats-tls-key", Usage: "PEM private key of nats-tls-cert", Field: func(c *config) *string { return &c.NATSTLSKey }},
	{Name: "nats-tls-server-name", Usage: "name the NATS server's certificate must hold, when not the host dialled", Field: func(c *config) *string { return &c.NATSTLSServerName }},
}

func loadConfig(args []string, getenv func(string) string) (*config, error) {
	cfg := &config{}
	cmd := cliconfig.Command{Name: "vstream-sink", EnvPrefix: "VSTREAM_SINK_",
		UsageLine: "usage: vstream-sink --sink kafka|nats --format F [--kafka-brokers B | --nats-url U] [flags]"}
	checkOnly, err := cliconfig.Load(cmd, args, getenv, flagDefs, cfg)
	if err != nil {
		return nil, err
	}
	cfg.checkOnly = checkOnly
	if len(cfg.Pipelines) > 0 {
		return cfg, cfg.expandPipelines()
	}
	cfg.pipelines = []*config{cfg}
	return cfg, cfg.validate()
}

// validate checks a pipeline's configuration, in the order of its flags' kinds, and parses
// what the pipeline needs of it into c.parsed.
func (c *config) validate() error {
	p := &c.parsed
	if err := c.validateProcess(); err != nil {
		return err
	}
	if c.Server == "" {
		return errors.New("server is empty")
	}
	if c.Name == "" {
		return errors.New("name is empty")
	}
	if err := c.validateServerAuth(); err != nil {
		return err
	}
	var err error
	if p.request, err = c.request(); err != nil {
		return err
	}
	if p.checkpoint, err = positiveDuration("checkpoint-interval", c.Checkpoint); err != nil {
		return err
	}
	if p.drain, err = positiveDuration("drain-timeout", c.DrainTimeout); err != nil {
		return err
	}
	if p.topics, err = c.topics(); err != nil {
		return err
	}
	if err = c.validateOversize(); err != nil {
		return err
	}
	switch c.Sink {
	case "kafka":
		err = c.validateKafka()
	case "nats":
		err = c.validateNATS()
	default:
		err = fmt.Errorf("sink %q: want kafka or nats", c.Sink)
	}
	if err != nil {
		return err
	}
	p.registry, err = c.registryOptions()
	return err
}

// request is the stream's request: where it starts, its format, filter, masks and sizes.
func (c *config) request() (client.Request, error) {
	if c.Format == "" || c.Format == "vevent" {
		return client.Request{}, errors.New("format is required: an encoded format such as debezium-json (records need a topic, a key and a value)")
	}
	pos, err := client.ParsePosition(c.Position, c.Keyspace, "")
	if err != nil {
		return client.Request{}, fmt.Errorf("position: %w", err)
	}
	req := client.Request{Position: pos, Format: c.Format, FailureMode: c.FailureMode, WhenPurged: c.OnPurged}
	if c.OnPurged != client.PurgedFail && c.OnPurged != client.PurgedWhenNeeded {
		return client.Request{}, fmt.Errorf("on-purged %q: want %s or %s", c.OnPurged, client.PurgedFail, client.PurgedWhenNeeded)
	}
	if req.CopyChunkRows, err = strconv.ParseInt(c.CopyChunkRows, 10, 64); err != nil || req.CopyChunkRows <= 0 {
		return client.Request{}, fmt.Errorf("copy-chunk-rows %q: want a positive whole number of rows", c.CopyChunkRows)
	}
	if c.Filter != "" && c.Tables != "" {
		return client.Request{}, errors.New("tables and filter: give one of them")
	}
	if c.Filter != "" {
		f := &binlogdata.Filter{}
		if err = protojson.Unmarshal([]byte(c.Filter), f); err != nil {
			return client.Request{}, fmt.Errorf("filter: %w", err)
		}
		req.Filter = f
	} else {
		req.Filter = client.ParseTables(c.Tables)
	}
	masks, err := filter.ParseMasks(c.ColumnMasks)
	if err != nil {
		return client.Request{}, fmt.Errorf("column-masks: %w", err)
	}
	for _, m := range masks {
		req.ColumnMasks = append(req.ColumnMasks, &vstreamv1.ColumnMask{Table: m.Table, Column: m.Column, Rule: m.Rule})
	}
	if req.FormatOptions, err = parsePairs(c.FormatOptions); err != nil {
		return client.Request{}, fmt.Errorf("format-options: %w", err)
	}
	if req.MaxBatchBytes, err = strconv.ParseInt(c.MaxBatchBytes, 10, 64); err != nil || req.MaxBatchBytes < 0 {
		return client.Request{}, fmt.Errorf("max-batch-bytes %q: want a whole number of bytes", c.MaxBatchBytes)
	}
	if req.HeartbeatInterval, err = positiveDuration("heartbeat", c.Heartbeat); err != nil {
		return client.Request{}, err
	}
	return req, nil
}

// topics is where records go: the topic map, prefix, default, routes and partitions.
func (c *config) topics() (sink.TopicMap, error) {
	names, err := sink.ParseTopicMap(c.TopicMap)
	if err != nil {
		return sink.TopicMap{}, fmt.Errorf("topic-map: %w", err)
	}
	t := sink.TopicMap{Names: names, Prefix: c.TopicPrefix, Default: c.DefaultTopic}
	if t.Routes, err = sink.ParseRoutes(c.TopicRoutes); err != nil {
		return t, fmt.Errorf("topic-routes: %w", err)
	}
	for _, r := range t.Routes {
		if r.UsesTopic() && !formatNamesTopics(c.Format) {
			return t, fmt.Errorf("topic-routes: route %q uses {topic}, and format %s names no topic: use {schema} and {table}", r.Rule, c.Format)
		}
	}
	if t.Partitions, err = sink.ParsePartitions(c.PartitionBy); err != nil {
		return t, fmt.Errorf("partition-by: %w", err)
	}
	if len(t.Partitions) > 0 && c.Sink == "nats" {
		return t, errors.New("partition-by: NATS has no partitions (a subject's messages keep their order per key); leave partition-by unset with sink nats")
	}
	return t, nil
}

// validateOversize checks what a record over the sink's limit does.
func (c *config) validateOversize() error {
	switch c.OnOversize {
	case sink.OversizeFail, sink.OversizeKeyOnly:
		if c.ClaimCheckURL != "" {
			return fmt.Errorf("claim-check-url is set but on-oversize is %s: set on-oversize claim-check, or drop the URL", c.OnOversize)
		}
	case sink.OversizeClaimCheck:
		if c.ClaimCheckURL == "" {
			return errors.New("on-oversize claim-check needs claim-check-url: file:///dir or s3://bucket/prefix?endpoint=https://host:port")
		}
		if _, err := claimcheck.Parse(c.ClaimCheckURL); err != nil {
			return err
		}
	default:
		return fmt.Errorf("on-oversize %q: want %s, %s or %s", c.OnOversize, sink.OversizeFail, sink.OversizeKeyOnly, sink.OversizeClaimCheck)
	}
	return nil
}

// validateKafka checks and parses the Kafka sink's options.
func (c *config) validateKafka() error {
	p := &c.parsed
	var err error
	for b := range strings.SplitSeq(c.KafkaBrokers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			if _, _, err = net.SplitHostPort(b); err != nil {
				return fmt.Errorf("kafka-brokers %q: %w", b, err)
			}
			p.brokers = append(p.brokers, b)
		}
	}
	if len(p.brokers) == 0 {
		return errors.New("kafka-brokers is required with sink kafka")
	}
	if c.KafkaOffsetsTopic == "" {
		return errors.New("kafka-offsets-topic is empty")
	}
	if p.maxRecord, err = positiveInt("kafka-max-record-bytes", c.KafkaMaxRecordBytes); err != nil {
		return err
	}
	if p.maxBuffer, err = positiveInt("kafka-max-buffered-bytes", c.KafkaMaxBufferedBytes); err != nil {
		return err
	}
	return c.validateKafkaAuth()
}

// validateNATS checks and parses the NATS sink's options.
func (c *config) validateNATS() error {
	p := &c.parsed
	var err error
	if c.NATSURL == "" {
		return errors.New("nats-url is required with sink nats")
	}
	if c.NATSStream == "" || c.NATSBucket == "" {
		return errors.New("nats-stream and nats-bucket must not be empty")
	}
	if c.TopicPrefix == "" || !strings.HasSuffix(c.TopicPrefix, ".") {
		return fmt.Errorf("topic-prefix %q: sink nats needs a subject prefix ending in a dot, e.g. cdc.: the stream's subjects are the prefix followed by >", c.TopicPrefix)
	}
	if p.duplicates, err = positiveDuration("nats-duplicate-window", c.NATSDuplicates); err != nil {
		return err
	}
	if p.inFlight, err = positiveInt("nats-max-in-flight", c.NATSInFlight); err != nil {
		return err
	}
	return c.validateNATSAuth()
}

// formatNamesTopics reports whether a format gives its records a topic of their own (the
// others' records go to default-topic unless a route names one).
func formatNamesTopics(format string) bool {
	return format == "debezium-json" || format == "avro"
}

// parsePairs reads name=value pairs separated by commas.
func parsePairs(s string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	m := map[string]string{}
	for part := range strings.SplitSeq(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("%q: want name=value", part)
		}
		m[name] = value
	}
	return m, nil
}

func positiveDuration(name, s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s %q: want a positive duration such as 5s", name, s)
	}
	return d, nil
}

func positiveInt(name, s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s %q: want a positive whole number", name, s)
	}
	return n, nil
}
