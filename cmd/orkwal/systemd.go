package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"time"
)

// systemd's notification protocol (sd_notify(3)): a datagram of
// newline-separated KEY=VALUE assignments to the unix socket named by
// $NOTIFY_SOCKET (a leading '@' names an abstract socket). With
// Type=notify, systemd counts the service as started when it reads
// READY=1; with WatchdogSec= it restarts a service that sends no WATCHDOG=1
// within $WATCHDOG_USEC. Outside systemd nothing is sent.

// notifySystemd tells systemd the daemon serves (READY=1) and, when the
// unit has a watchdog, keeps telling it the engine's loop turns. The
// function it returns says STOPPING=1 and stops the watchdog. Outside
// systemd it does nothing. A notification socket that cannot be reached is
// logged, not fatal: the daemon serves either way.
func notifySystemd(eng interface{ Ping() error }, addr string, log *slog.Logger) func() {
	n, err := newNotifier()
	if err == nil {
		err = n.send("READY=1\nSTATUS=serving on " + addr + "\nMAINPID=" + strconv.Itoa(os.Getpid()))
	}
	every, werr := watchdogInterval()
	if err = errors.Join(err, werr); err != nil {
		log.Warn("systemd notification", "err", err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.watchdog(every, eng.Ping, stop, log)
	}()
	return func() {
		close(stop)
		<-done
		n.send("STOPPING=1")
		n.close()
	}
}

// notifier sends to $NOTIFY_SOCKET; a nil notifier sends nothing.
type notifier struct {
	conn *net.UnixConn
}

// newNotifier connects to $NOTIFY_SOCKET when it is set.
func newNotifier() (*notifier, error) {
	path := os.Getenv("NOTIFY_SOCKET")
	if path == "" {
		return nil, nil
	}
	if path[0] == '@' {
		path = "\x00" + path[1:]
	} else if path[0] != '/' {
		return nil, fmt.Errorf("NOTIFY_SOCKET %q is neither a path nor an abstract socket", path)
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("NOTIFY_SOCKET: %w", err)
	}
	return &notifier{conn: conn}, nil
}

func (n *notifier) send(state string) error {
	if n == nil {
		return nil
	}
	_, err := n.conn.Write([]byte(state))
	return err
}

func (n *notifier) close() {
	if n != nil {
		n.conn.Close()
	}
}

// watchdogInterval is how often systemd expects WATCHDOG=1 ($WATCHDOG_USEC,
// for this process: $WATCHDOG_PID, when set, must be its pid); 0 when the
// watchdog is off.
func watchdogInterval() (time.Duration, error) {
	usec := os.Getenv("WATCHDOG_USEC")
	if usec == "" {
		return 0, nil
	}
	if pid := os.Getenv("WATCHDOG_PID"); pid != "" && pid != strconv.Itoa(os.Getpid()) {
		return 0, nil
	}
	n, err := strconv.ParseInt(usec, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("WATCHDOG_USEC %q is not a positive number of microseconds", usec)
	}
	return time.Duration(n) * time.Microsecond, nil
}

// watchdog sends WATCHDOG=1 every half interval, each time after ping — a
// turn of the engine's loop — answered: a loop that is stuck (a deadlock, a
// WAL write that never returns) stops the notifications, and systemd
// restarts the daemon. It returns when stop is closed.
func (n *notifier) watchdog(every time.Duration, ping func() error, stop <-chan struct{}, log *slog.Logger) {
	if n == nil || every <= 0 {
		return
	}
	tick := time.NewTicker(every / 2)
	defer tick.Stop()
	answered := make(chan error, 1)
	go func() { answered <- ping() }()
	for {
		select {
		case <-stop:
			return
		case err := <-answered:
			if err != nil {
				log.Warn("watchdog: the engine did not answer", "err", err)
			} else if err := n.send("WATCHDOG=1"); err != nil {
				log.Warn("watchdog: notify systemd", "err", err)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			go func() { answered <- ping() }()
		case <-tick.C:
			log.Warn("watchdog: the engine's loop has not answered for " + (every / 2).String())
		}
	}
}
