// Command vstream prints the change stream of a vstreamd server: as text for people on a
// terminal, as one typed JSON object per row change for scripts, or as the server's VEvents
// in protojson. "vstream tables" lists the tables a filter selects and their copy keys;
// "vstream position" prints the server's current position. Run vstream -h for examples.
//
// VSTREAM_SERVER and VSTREAM_TOKEN are used when --server or --token are not given.
// A VGTID line, or its "vgtid" value, can be passed back as --position to resume.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/vstream-cdc/vstream/client"
	vfilter "github.com/vstream-cdc/vstream/filter"
	"github.com/vstream-cdc/vstream/gen/binlogdata"
	vstreamv1 "github.com/vstream-cdc/vstream/gen/vstream/v1"
	"github.com/vstream-cdc/vstream/internal/render"
	"github.com/vstream-cdc/vstream/internal/secure"
)

const defaultServer = "127.0.0.1:15991"

const usage = `Usage: vstream [tables|position] --server ADDR [--token-file F] [--tls-ca F [--tls-cert F --tls-key F]] [--position P] [--tables RULES | --filter JSON]
               [--output text|json|protojson] [--format F] [--max-events N] [--timeout D] [--heartbeat D] [--keyspace K]

Prints the change stream of a vstreamd server: one line per row change as a person reads it
on a terminal (--output text), one JSON object per row change otherwise (--output json), or
every VEvent as the server sent it (--output protojson).

  vstream tables     lists the tables the filter selects and the key each is copied by
  vstream position   prints the server's current position, to pass to --position later

Examples:
  # tail a table
  vstream --tables customers
  # copy the tables first, then follow their changes
  vstream --position copy --tables customers,orders
  # save where you are, and resume from there later
  vstream --output json | tee changes.jsonl
  vstream --position "$(jq -c 'select(.position).position' changes.jsonl | tail -n1)"
  vstream position > pos.json; vstream --position "$(cat pos.json)"
  # another format, e.g. Debezium JSON records with their topics and keys
  vstream --format debezium-json --tables customers
  # resume, or copy the tables again when the server has purged the binlogs of the position
  vstream --position "$(cat pos.json)" --on-purged when_needed
  # changes to jq
  vstream --tables orders | jq 'select(.op == "update") | .after.id'

`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// config is the parsed command line.
type config struct {
	server    string
	token     string
	tls       *tls.Config
	request   client.Request
	maxEvents int
	timeout   time.Duration
	// tableRules are the --tables rules, checked against the server's tables at the start.
	tableRules []string
	// output is how lines are printed; empty until run picks the default for stdout.
	output render.Output
}

// usageError is a command line mistake: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// errReported means the flag package has already explained the mistake.
var errReported = errors.New("usage error already reported")

// parseArgs reads the command line; getenv supplies the environment fallbacks.
// It returns flag.ErrHelp for -h, a *usageError for bad input, or errReported.
func parseArgs(args []string, getenv func(string) string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("vstream", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	f := defineFlags(fs, getenv)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, errReported
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	return f.config(set)
}

// flagValues are the command line's flags, as the flag set fills them in.
type flagValues struct {
	server, token, tokenFile               *string
	tlsOn                                  *bool
	tlsCA, tlsCert, tlsKey, tlsServerName  *string
	position, keyspace, tables, filterJSON *string
	format, columnMasks, output            *string
	formatOptions                          optionList
	maxEvents                              *int
	timeout, heartbeat                     *time.Duration
	onPurged, failureMode                  *string
}

// defineFlags defines the command's flags on fs, with their environment fallbacks.
func defineFlags(fs *flag.FlagSet, getenv func(string) string) *flagValues {
	f := &flagValues{}
	f.server = fs.String("server", orDefault(getenv("VSTREAM_SERVER"), defaultServer), "vstreamd gRPC `address` (env VSTREAM_SERVER)")
	f.token = fs.String("token", getenv("VSTREAM_TOKEN"), "bearer `token` (env VSTREAM_TOKEN; better there or in --token-file than on the command line)")
	f.tokenFile = fs.String("token-file", getenv("VSTREAM_TOKEN_FILE"), "`file` holding the bearer token (env VSTREAM_TOKEN_FILE)")
	f.tlsOn = fs.Bool("tls", envBool(getenv("VSTREAM_TLS")), "TLS to the server, verified with the system's roots unless --tls-ca is given; any --tls-* flag also turns it on (env VSTREAM_TLS)")
	f.tlsCA = fs.String("tls-ca", getenv("VSTREAM_TLS_CA"), "PEM CA `file` that verifies the server's certificate (env VSTREAM_TLS_CA)")
	f.tlsCert = fs.String("tls-cert", getenv("VSTREAM_TLS_CERT"), "PEM client certificate `file` for mutual TLS, with --tls-key (env VSTREAM_TLS_CERT)")
	f.tlsKey = fs.String("tls-key", getenv("VSTREAM_TLS_KEY"), "PEM private key `file` of --tls-cert (env VSTREAM_TLS_KEY)")
	f.tlsServerName = fs.String("tls-server-name", getenv("VSTREAM_TLS_SERVER_NAME"), "`name` the server's certificate must hold, when not the host of --server (env VSTREAM_TLS_SERVER_NAME)")
	f.position = fs.String("position", "current",
		"start `position`: current, copy (copy the selected tables first), MariaDB/<gtid set>, MySQL56/<gtid set>, FilePos/<binlog file>:<offset>, or a VGTID event or its vgtid as JSON")
	f.keyspace = fs.String("keyspace", "", "`keyspace` for a current or GTID position; empty lets the server choose")
	f.tables = fs.String("tables", "", "comma-separated table `rules`: names or /regex")
	f.filterJSON = fs.String("filter", "", "binlogdata.Filter as `JSON`, e.g. {\"rules\":[{\"match\":\"t1\",\"filter\":\"select id from t1\"}]}")
	f.format = fs.String("format", "", "server output `format`: vevent (default), avro, canal-json, canal-protobuf, debezium-json, drs-json, drs-json-c or streamsets")
	f.columnMasks = fs.String("column-masks", "", "columns the server replaces before they leave it: `RULE=TABLE.COLUMN[,...]` separated by ; with RULE mask.with.N.chars, mask.hash.ALGO.with.salt.SALT or truncate.to.N.chars (Debezium's)")
	fs.Var(&f.formatOptions, "format-option", "format `name=value`, repeatable (e.g. profile=dts)")
	f.output = fs.String("output", "", "how to print: text (one line per row change, for people; the default on a terminal), json (one typed object per row change; the default otherwise) or protojson (every VEvent or encoded message as it arrives)")
	f.maxEvents = fs.Int("max-events", 0, "exit after printing `N` lines; 0 means no limit")
	f.timeout = fs.Duration("timeout", 0, "exit after this `duration`; 0 means no limit")
	f.heartbeat = fs.Duration("heartbeat", 0, "ask for a HEARTBEAT after this idle `duration`; 0 means none")
	f.onPurged = fs.String("on-purged", client.PurgedFail,
		"when the server no longer has the binlogs the position needs: fail (exit 1 naming the purge) or when_needed (warn, copy the streamed tables again, then stream on)")
	f.failureMode = fs.String("event-processing-failure-handling-mode", "",
		"what an event the server cannot decode or encode does: fail (the default: exit with the error naming it), warn or skip (the server skips it and counts it)")
	return f
}

// config is the command's configuration of the flags; set names those given.
func (f *flagValues) config(set map[string]bool) (*config, error) {
	cfg := &config{server: *f.server, maxEvents: *f.maxEvents, timeout: *f.timeout}
	var err error
	if cfg.token, err = secure.Secret("--token", *f.token, *f.tokenFile); err != nil {
		return nil, usagef("%v", err)
	}
	files := secure.TLSFiles{On: *f.tlsOn, CA: *f.tlsCA, Cert: *f.tlsCert, Key: *f.tlsKey, ServerName: *f.tlsServerName}
	if cfg.tls, err = files.Config("--"); err != nil {
		return nil, usagef("%v", err)
	}
	if *f.output != "" {
		o, perr := render.ParseOutput(*f.output)
		if perr != nil {
			return nil, usagef("--output: %v", perr)
		}
		cfg.output = o
	}
	if err = f.check(); err != nil {
		return nil, err
	}
	if cfg.request, cfg.tableRules, err = f.request(set); err != nil {
		return nil, err
	}
	return cfg, nil
}

// check refuses values no stream can take.
func (f *flagValues) check() error {
	if *f.server == "" {
		return usagef("--server is empty")
	}
	switch {
	case *f.maxEvents < 0:
		return usagef("--max-events must not be negative")
	case *f.timeout < 0:
		return usagef("--timeout must not be negative")
	case *f.heartbeat < 0:
		return usagef("--heartbeat must not be negative")
	}
	switch *f.failureMode {
	case "", "fail", "warn", "skip":
	default:
		return usagef("--event-processing-failure-handling-mode %q: want fail, warn or skip", *f.failureMode)
	}
	switch *f.onPurged {
	case client.PurgedFail, client.PurgedWhenNeeded:
	default:
		return usagef("--on-purged %q: want %s or %s", *f.onPurged, client.PurgedFail, client.PurgedWhenNeeded)
	}
	return nil
}

// request is the stream's request, and the table rules of --tables (for the warning about
// rules that match no table).
func (f *flagValues) request(set map[string]bool) (client.Request, []string, error) {
	pos, err := client.ParsePosition(*f.position, *f.keyspace, "")
	if err != nil {
		return client.Request{}, nil, usagef("--position: %v", err)
	}
	filter, err := buildFilter(*f.tables, set["tables"], *f.filterJSON, set["filter"])
	if err != nil {
		return client.Request{}, nil, err
	}
	var rules []string
	if set["tables"] {
		for _, r := range filter.GetRules() {
			rules = append(rules, r.GetMatch())
		}
	}
	req := client.Request{
		Position:          pos,
		Filter:            filter,
		HeartbeatInterval: *f.heartbeat,
		Format:            *f.format,
		FormatOptions:     f.formatOptions.m,
		FailureMode:       *f.failureMode,
	}
	if *f.onPurged == client.PurgedWhenNeeded {
		req.WhenPurged = client.PurgedWhenNeeded
	}
	masks, err := vfilter.ParseMasks(*f.columnMasks)
	if err != nil {
		return req, nil, usagef("--column-masks: %v", err)
	}
	for _, m := range masks {
		req.ColumnMasks = append(req.ColumnMasks, &vstreamv1.ColumnMask{Table: m.Table, Column: m.Column, Rule: m.Rule})
	}
	return req, rules, nil
}

// buildFilter turns --tables or --filter into a Filter; nil streams every table.
func buildFilter(tables string, tablesSet bool, filterJSON string, filterSet bool) (*binlogdata.Filter, error) {
	if tablesSet && filterSet {
		return nil, usagef("--tables and --filter cannot be used together")
	}
	if filterSet {
		var f binlogdata.Filter
		if err := protojson.Unmarshal([]byte(filterJSON), &f); err != nil {
			return nil, usagef("--filter: %v", err)
		}
		if len(f.GetRules()) == 0 {
			return nil, usagef("--filter: no rules")
		}
		for i, r := range f.GetRules() {
			if r.GetMatch() == "" {
				return nil, usagef("--filter: rule %d has no match", i)
			}
		}
		return &f, nil
	}
	return client.ParseTables(tables), nil
}

// envBool reads a boolean environment variable: anything strconv.ParseBool takes as true.
func envBool(v string) bool {
	b, _ := strconv.ParseBool(v)
	return b
}

func orDefault(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

// subcommandTimeout bounds vstream tables and position when --timeout is not given.
const subcommandTimeout = 30 * time.Second

// compactJSON removes protojson's varying spaces.
func compactJSON(b []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return b
	}
	return buf.Bytes()
}

// startedAt is the requested start when it is a position to resume from (not "current" or a
// copy, which name no point of the binlog); nil otherwise.
func startedAt(v *binlogdata.VGtid) *binlogdata.VGtid {
	for _, sg := range v.GetShardGtids() {
		if g := sg.GetGtid(); g == "" || g == "current" {
			return nil
		}
	}
	return v
}

// errEnough stops the stream once --max-events lines are out.
var errEnough = errors.New("enough events")

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	sub := ""
	if len(args) > 0 && (args[0] == "tables" || args[0] == "position") {
		sub, args = args[0], args[1:]
	}
	cfg, err := parseArgs(args, os.Getenv, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errReported):
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "vstream: %v\nRun vstream -h for usage.\n", err)
		return 2
	}

	if sub != "" && cfg.timeout == 0 {
		cfg.timeout = subcommandTimeout
	}
	if cfg.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.timeout)
		defer cancel()
	}
	if sub != "" {
		return subcommand(ctx, sub, cfg, stdout, stderr)
	}
	bar, logTo := progressTo(stdout, stderr, cfg)
	if bar != nil {
		// Whatever ends the stream, the bar is left showing where the copy got to.
		defer func() { _ = bar.finish() }()
	}
	log := slog.New(slog.NewTextHandler(logTo, nil))
	c, err := client.Dial(cfg.server, client.Options{Token: cfg.token, Logger: log, Identity: "vstream", TLS: cfg.tls})
	if err != nil {
		fmt.Fprintf(stderr, "vstream: %v\n", err)
		return 1
	}
	// The stream is over when Close runs: an error closing the connection loses nothing.
	defer func() { _ = c.Close() }()

	p := newPrinter(stdout, cfg, c, bar)
	cfg.request.OnMessages = p.printMessages
	warnUnmatched(ctx, c, cfg, logTo)
	err = c.Stream(ctx, cfg.request, p.print)
	return streamExit(ctx, err, cfg.server, stderr)
}

// progressTo returns the copy's progress bar and where logs go beside it, when stderr is a
// terminal: the progress is for a person watching, and nothing of it shows otherwise
// (the bar is then nil, and logs go to stderr).
func progressTo(stdout, stderr io.Writer, cfg *config) (*progressBar, io.Writer) {
	if !isTerminal(stderr) {
		return nil, stderr
	}
	f, _ := stderr.(*os.File) // isTerminal says it is one
	bar := newProgressBar(stderr, isTerminal(stdout), time.Now, func() int { return termWidth(f) })
	cfg.request.OnCopyProgress = bar.update
	return bar, bar.logWriter()
}

// newPrinter is the printer of the stream's events and messages on stdout, in the output
// --output names (by default the terminal's or a pipe's).
func newPrinter(stdout io.Writer, cfg *config, c *client.Client, bar *progressBar) *printer {
	terminal := isTerminal(stdout)
	output := cfg.output
	if output == "" {
		output = render.DefaultOutput(terminal)
	}
	p := &printer{
		out: bufio.NewWriter(stdout),
		max: cfg.maxEvents,
		r:   render.New(output, render.Options{Color: render.UseColor(terminal, os.Getenv)}),
		bar: bar,
	}
	p.emit = p.line
	p.position = func() *binlogdata.VGtid {
		if v := c.LastPosition(); v != nil {
			return v
		}
		return startedAt(cfg.request.Position)
	}
	return p
}

// streamExit is the exit code of a stream that ended with err, which it reports.
func streamExit(ctx context.Context, err error, server string, stderr io.Writer) int {
	switch {
	case errors.Is(err, errEnough):
		return 0
	case errors.Is(err, client.ErrStreamDown):
		// --timeout or Ctrl-C while the server could not be reached: nothing was streamed.
		fmt.Fprintf(stderr, "vstream: vstreamd %s: %v\n", server, err)
		return 1
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		// --timeout or Ctrl-C: what was received has been printed.
		return 0
	case vstreamv1.IsPositionPurged(err):
		fmt.Fprintf(stderr, "vstream: %v\nvstream: the position is purged from the server's binlogs; --on-purged when_needed copies the tables again and streams on\n", err)
		return 1
	default:
		fmt.Fprintf(stderr, "vstream: vstreamd %s: %v\n", server, err)
		return 1
	}
}

// isTerminal says whether w is a terminal (a character device), which decides the default
// output and colours.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// printer writes the renderer's lines to stdout and stops after --max-events of them.
type printer struct {
	out     *bufio.Writer
	max     int
	printed int
	r       render.Renderer
	emit    render.Emit
	// position is the resume point before the batch being printed.
	position func() *binlogdata.VGtid
	// bar, when stderr is a terminal, draws the copy's progress.
	bar *progressBar
}

// printMessages prints encoded messages. The server marks resume points on the batches, not
// on each message, and the client reports a batch's point once its messages are handled; so
// a message without a position of its own gets the resume point before its batch: where to
// start to receive it again, as EncodedMessage.position means.
func (p *printer) printMessages(_ context.Context, msgs []*vstreamv1.EncodedMessage) error {
	if p.position != nil {
		if pos := p.position(); pos != nil {
			for _, m := range msgs {
				if m.GetPosition() == nil {
					m.Position = pos
				}
			}
		}
	}
	if err := p.bar.hide(); err != nil {
		return err
	}
	if err := p.r.Messages(msgs, p.emit); err != nil {
		return err
	}
	if err := p.flush(); err != nil {
		return err
	}
	return p.bar.show()
}

func (p *printer) print(_ context.Context, events []*binlogdata.VEvent) error {
	if err := p.bar.hide(); err != nil {
		return err
	}
	if err := p.r.Events(events, p.emit); err != nil {
		return err
	}
	if err := p.flush(); err != nil {
		return err
	}
	p.bar.copyDone(events)
	return p.bar.show()
}

// line writes one line; once --max-events lines are out it flushes and stops the stream with
// errEnough.
func (p *printer) line(b []byte) error {
	if p.max > 0 && p.printed >= p.max {
		if err := p.out.Flush(); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		return errEnough
	}
	if _, err := p.out.Write(b); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if err := p.out.WriteByte('\n'); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	p.printed++
	return nil
}

// flush writes out what is buffered and reports errEnough once --max-events lines are out.
func (p *printer) flush() error {
	if err := p.out.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if p.max > 0 && p.printed >= p.max {
		return errEnough
	}
	return nil
}

// optionList collects repeated name=value flags.
type optionList struct{ m map[string]string }

func (o *optionList) String() string { return fmt.Sprint(o.m) }

func (o *optionList) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("want name=value, got %q", v)
	}
	if o.m == nil {
		o.m = map[string]string{}
	}
	o.m[name] = value
	return nil
}
