package testkit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// modulePath is the main module's; Build runs in its root whichever module the test is in,
// so that a command is built with the dependencies the main module pins, not with those of
// interop/ or deploy/.
const modulePath = "github.com/vstream-cdc/vstream"

// Build builds the main module's packages (as "./cmd/vstreamd") into dir, with go build's
// output on stderr.
func Build(dir string, pkgs ...string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	build := exec.Command("go", append([]string{"build", "-o", dir + string(filepath.Separator)}, pkgs...)...)
	build.Dir = root
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("testkit: build %s: %w", strings.Join(pkgs, " "), err)
	}
	return nil
}

// moduleRoot is the nearest directory up from the working directory whose go.mod is the
// main module's.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("testkit: %w", err)
	}
	for {
		if f, err := os.Open(filepath.Join(dir, "go.mod")); err == nil {
			s := bufio.NewScanner(f)
			main := s.Scan() && strings.TrimSpace(s.Text()) == "module "+modulePath
			f.Close()
			if main {
				return dir, nil
			}
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("testkit: no go.mod of %s above the working directory", modulePath)
		}
		dir = up
	}
}

// FreeAddr is a local TCP address nothing listens on at the time of the call.
func FreeAddr() (string, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("testkit: %w", err)
	}
	defer func() { _ = lis.Close() }()
	return lis.Addr().String(), nil
}

// Vstreamd is a vstreamd process serving on Addr, which can be stopped and started again
// there.
type Vstreamd struct {
	// Addr is its gRPC address, the --listen it is given.
	Addr string
	bin  string
	args []string
	out  io.Writer
	cmd  *exec.Cmd
}

// NewVstreamd prepares the vstreamd binary bin to run with args and --listen on a free
// address, its stdout and stderr going to out; Start runs it.
func NewVstreamd(bin string, out io.Writer, args ...string) (*Vstreamd, error) {
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	return &Vstreamd{Addr: addr, bin: bin, args: append(slices.Clone(args), "--listen", addr), out: out}, nil
}

// StartVstreamd is NewVstreamd, Start and WaitListening for 10s: a vstreamd that serves
// when it returns.
func StartVstreamd(bin string, out io.Writer, args ...string) (*Vstreamd, error) {
	v, err := NewVstreamd(bin, out, args...)
	if err != nil {
		return nil, err
	}
	if err := v.Start(); err != nil {
		return nil, err
	}
	if err := v.WaitListening(10 * time.Second); err != nil {
		v.Kill()
		return nil, err
	}
	return v, nil
}

// Start runs the process; it does not wait for it to listen.
func (v *Vstreamd) Start() error {
	v.cmd = exec.Command(v.bin, v.args...)
	v.cmd.Stdout, v.cmd.Stderr = v.out, v.out
	if err := v.cmd.Start(); err != nil {
		v.cmd = nil
		return fmt.Errorf("testkit: start vstreamd: %w", err)
	}
	return nil
}

// WaitListening waits until Addr takes connections.
func (v *Vstreamd) WaitListening(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if c, err := net.Dial("tcp", v.Addr); err == nil {
			_ = c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("testkit: vstreamd did not listen on %s in %v", v.Addr, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Pid is the running process's id.
func (v *Vstreamd) Pid() int { return v.cmd.Process.Pid }

// Signal sends sig to the running process and waits for it to end; it does nothing when
// none runs. The process's exit status is not an error: a signal ends it with one.
func (v *Vstreamd) Signal(sig os.Signal) error {
	if v.cmd == nil || v.cmd.Process == nil {
		return nil
	}
	err := v.cmd.Process.Signal(sig)
	_ = v.cmd.Wait()
	v.cmd = nil
	if err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("testkit: signal vstreamd: %w", err)
	}
	return nil
}

// Kill ends the process at once (SIGKILL).
func (v *Vstreamd) Kill() { _ = v.Signal(os.Kill) }

// Stop ends the process cleanly (SIGTERM: it drains its streams and writes its profiles),
// and kills it when it has not ended after grace.
func (v *Vstreamd) Stop(grace time.Duration) {
	if v.cmd == nil || v.cmd.Process == nil {
		return
	}
	cmd := v.cmd
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-done
	}
	v.cmd = nil
}
