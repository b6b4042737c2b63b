package main

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vstream-cdc/vstream/internal/sinktest"
	"github.com/vstream-cdc/vstream/internal/testserver"
)

// routeMarker finds the values the test writes: table, then the change's number.
var routeMarker = regexp.MustCompile(`(r[abc])-k(\d)-s(\d+)`)

// TestTopicRoutes runs vstream-sink with --topic-routes (and, on Kafka, --partition-by) into
// Kafka (kfake, three partitions a topic) and NATS, in debezium-json and canal-json, over a
// table copy and changes of three tables: every record of ra lands in the first route's
// topic, rb's in the second's (a glob matcher), rc's where no route sends it (the format's
// topic after the prefix, or default-topic); each key's changes arrive once and in order;
// and ra, partitioned by table, is in one partition of its topic.
func TestTopicRoutes(t *testing.T) {
	addr := testserver.Serve(t, db, "sinkcmd")
	for _, tc := range []struct {
		sink, format string
		// rest is the topic (subject) of rc's records, which no route names.
		rest *regexp.Regexp
	}{
		{"kafka", "debezium-json", regexp.MustCompile(`^cdc\.[^.]+\.sinkcmd\.rc$`)},
		{"kafka", "canal-json", regexp.MustCompile(`^cdc\.rest$`)},
		{"nats", "debezium-json", regexp.MustCompile(`^cdc\.[^.]+\.sinkcmd\.rc$`)},
		{"nats", "canal-json", regexp.MustCompile(`^cdc\.rest$`)},
	} {
		t.Run(tc.sink+"/"+tc.format, func(t *testing.T) {
			var stmts []string
			for _, tbl := range []string{"ra", "rb", "rc"} {
				stmts = append(stmts, "DROP TABLE IF EXISTS "+tbl, "CREATE TABLE "+tbl+" (id INT PRIMARY KEY, v VARCHAR(32))",
					fmt.Sprintf("INSERT INTO %s VALUES (1, '%s-k1-s0'), (2, '%s-k2-s0')", tbl, tbl, tbl))
			}
			if err := db.Exec(stmts...); err != nil {
				t.Fatal(err)
			}
			args := []string{"--server", addr, "--format", tc.format, "--tables", "/^r[abc]$", "--topic-prefix", "cdc.",
				"--default-topic", "rest", "--name", "routes-" + tc.sink + "-" + tc.format, "--position", "copy",
				"--heartbeat", "200ms", "--checkpoint-interval", "200ms", "--max-batch-bytes", "1024",
				"--topic-routes", "sinkcmd.ra=orders-{table}; sinkcmd.r[b]=items.{schema}; other.*=wrong"}
			var read func(want int) []sinktest.Got
			switch tc.sink {
			case "kafka":
				brokers := sinktest.Kafka(t, 3)
				args = append(args, "--sink", "kafka", "--kafka-brokers", strings.Join(brokers, ","), "--partition-by", "sinkcmd.ra=table")
				read = func(want int) []sinktest.Got { return sinktest.ReadKafka(t, brokers, `^cdc\.`, want, time.Second) }
			case "nats":
				ns := sinktest.StartNATS(t)
				args = append(args, "--sink", "nats", "--nats-url", ns.URL(), "--nats-stream", "ROUTES")
				read = func(want int) []sinktest.Got { return sinktest.ReadNATS(t, ns.URL(), "ROUTES", want, time.Second) }
			}
			code, stderr := startSink(args)
			var got []sinktest.Got
			// waitData reads until n records of the tables' rows are in.
			waitData := func(n int) {
				data := func() int {
					c := 0
					for _, g := range got {
						if routeMarker.Match(g.Value) {
							c++
						}
					}
					return c
				}
				deadline := time.Now().Add(time.Minute)
				for got = read(n); data() < n; got = read(len(got) + n) {
					select {
					case c := <-code:
						t.Fatalf("vstream-sink exited %d with %d of %d records:\n%s", c, data(), n, stderr.String())
					default:
					}
					if time.Now().After(deadline) {
						t.Fatalf("%d of %d records in a minute:\n%s", data(), n, stderr.String())
					}
				}
			}
			// The copy's two rows per table, then the changes after it: key 1 of each table
			// updated three times in three transactions, each changing every table.
			waitData(3 * 2)
			for s := 1; s <= 3; s++ {
				stmts = []string{"BEGIN"}
				for _, tbl := range []string{"ra", "rb", "rc"} {
					stmts = append(stmts, fmt.Sprintf("UPDATE %s SET v = '%s-k1-s%d' WHERE id = 1", tbl, tbl, s))
				}
				if err := db.Exec(append(stmts, "COMMIT")...); err != nil {
					t.Fatal(err)
				}
			}
			waitData(3 * 5)
			stopRun(t, code, stderr)

			topics := map[string]*regexp.Regexp{
				"ra": regexp.MustCompile(`^cdc\.orders-ra$`), "rb": regexp.MustCompile(`^cdc\.items\.sinkcmd$`), "rc": tc.rest}
			// seqs are the change numbers of each table's key, in the order they arrived in
			// their partition (the stream, for NATS); orders the partitions of each table.
			seqs := map[string][]int{}
			orders := map[string]map[string]bool{"ra": {}, "rb": {}, "rc": {}}
			for _, g := range got {
				ms := routeMarker.FindAllSubmatch(g.Value, -1)
				if len(ms) == 0 {
					continue
				}
				tbl, key := string(ms[0][1]), string(ms[0][2])
				// An update holds both images: the new value is the highest number.
				seq := 0
				for _, m := range ms {
					if string(m[1]) != tbl || string(m[2]) != key {
						t.Fatalf("a record holds rows of %s and %s: %s", ms[0][0], m[0], g.Value)
					}
					n, _ := strconv.Atoi(string(m[3]))
					seq = max(seq, n)
				}
				if !topics[tbl].MatchString(g.Topic) {
					t.Errorf("a record of %s in topic %s, want one matching %s", tbl, g.Topic, topics[tbl])
				}
				orders[tbl][g.Order] = true
				seqs[tbl+"/"+key+"@"+g.Order] = append(seqs[tbl+"/"+key+"@"+g.Order], seq)
			}
			for _, tbl := range []string{"ra", "rb", "rc"} {
				for _, key := range []string{"1", "2"} {
					var all []int
					for k, s := range seqs {
						if strings.HasPrefix(k, tbl+"/"+key+"@") {
							if len(all) > 0 {
								t.Errorf("%s key %s in more than one partition", tbl, key)
							}
							all = s
						}
					}
					wantSeqs := []int{0}
					if key == "1" {
						wantSeqs = []int{0, 1, 2, 3}
					}
					if !slices.Equal(all, wantSeqs) {
						t.Errorf("%s key %s: changes %v, want %v once each, in order", tbl, key, all, wantSeqs)
					}
				}
			}
			if tc.sink == "kafka" && len(orders["ra"]) != 1 {
				t.Errorf("ra, partitioned by table, is in partitions %v", orders["ra"])
			}
		})
	}
}
