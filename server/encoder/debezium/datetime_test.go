package debezium

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/vstream-cdc/vstream/server/encoder"
)

// TestDateTimes checks the fixed-offset reading of DATE, DATETIME and TIMESTAMP cells and the
// day count against encoder.ParseDateTime and time.Date, for random cells: dates of every
// year, days past a month's end, zero parts, every fraction length, and malformed text.
func TestDateTimes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	cells := []string{"", "2024", "2024-01-02 ", "2024-01-02 03:04:05.", "2024-01-02 03:04:05.1234567", "2024-01-02T03:04:05",
		"2024/01/02", "2024-01-02 03:04:05,5", "2024-0a-02", "-024-01-02", "2024-01-02 03:04:5a", "2024-01-02 03:04:05.12a"}
	for i := 0; i < 20000; i++ {
		c := fmt.Sprintf("%04d-%02d-%02d", rng.IntN(10000), rng.IntN(14), rng.IntN(33))
		if rng.IntN(4) > 0 {
			c += fmt.Sprintf(" %02d:%02d:%02d", rng.IntN(24), rng.IntN(60), rng.IntN(60))
			if f := rng.IntN(7); f > 0 {
				c += fmt.Sprintf(".%0*d", f, rng.IntN(1_000_000)%pow10(f))
			}
		}
		if rng.IntN(50) == 0 {
			b := []byte(c)
			b[rng.IntN(len(b))] = byte(rng.IntN(256))
			c = string(b)
		}
		cells = append(cells, c)
	}
	for _, c := range cells {
		got, gerr := parseDateTime([]byte(c))
		want, werr := encoder.ParseDateTime([]byte(c))
		if got != want || (gerr == nil) != (werr == nil) {
			t.Fatalf("%q: %+v %v, want %+v %v", c, got, gerr, want, werr)
		}
		if werr != nil || want.IsZeroDate() {
			continue
		}
		if got, want := unixMicro(want), want.UnixMicro(); got != want {
			t.Fatalf("%q: %d µs, want %d", c, got, want)
		}
		if got, want := epochDay(want), want.EpochDay(); got != want {
			t.Fatalf("%q: day %d, want %d", c, got, want)
		}
	}
}

func pow10(n int) int {
	p := 1
	for range n {
		p *= 10
	}
	return p
}
