package probe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// ClusterInfo runs CLUSTER INFO against addr and returns its fields.
func ClusterInfo(ctx context.Context, addr string) (map[string]string, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(5 * time.Second)
	}
	if err := conn.SetDeadline(deadline); err != nil {
		return nil, err
	}
	if _, err := io.WriteString(conn, "*2\r\n$7\r\nCLUSTER\r\n$4\r\nINFO\r\n"); err != nil {
		return nil, err
	}
	text, err := readBulk(bufio.NewReader(conn))
	if err != nil {
		return nil, fmt.Errorf("CLUSTER INFO on %s: %w", addr, err)
	}
	fields := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	return fields, nil
}

// readBulk reads one RESP bulk string (or verbatim string) reply; an error
// reply becomes an error.
func readBulk(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("empty reply")
	}
	switch line[0] {
	case '-':
		return "", errors.New(line[1:])
	case '$', '=':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 || n > 1<<20 {
			return "", fmt.Errorf("bad bulk length %q", line)
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	default:
		return "", fmt.Errorf("unexpected reply %q", line)
	}
}

// WaitClusterOK polls CLUSTER INFO on every address until each reports
// cluster_state:ok or ctx ends; it returns the last problem seen on timeout.
func WaitClusterOK(ctx context.Context, addrs []string) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		last := ClusterOKAll(ctx, addrs)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster not ready: %w (%w)", last, ctx.Err())
		case <-tick.C:
		}
	}
}

// ClusterOKAll returns nil when every address answers cluster_state:ok.
func ClusterOKAll(ctx context.Context, addrs []string) error {
	for _, addr := range addrs {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		info, err := ClusterInfo(c, addr)
		cancel()
		if err != nil {
			return err
		}
		if st := info["cluster_state"]; st != "ok" {
			return fmt.Errorf("%s: cluster_state:%s", addr, st)
		}
	}
	return nil
}
