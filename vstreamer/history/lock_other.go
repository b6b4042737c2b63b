//go:build !unix

package history

import (
	"fmt"
	"os"
)

// lockDir opens the LOCK file; without flock(2) it cannot keep a second process out.
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return f, nil
}
