package main

import (
	"log/slog"
	"net"
	"strings"

	"github.com/urfave/cli/v2"
)

// Authentication: `orkwal run --token T` (or ORKWAL_TOKEN) makes the API
// require "Authorization: Bearer T"; the client commands send the same
// token from --token or ORKWAL_TOKEN.

// tokenEnv is the environment variable of the API token, for the daemon and
// the clients alike.
const tokenEnv = "ORKWAL_TOKEN"

// tokenFlag is --token of the client commands.
func tokenFlag() cli.Flag {
	return &cli.StringFlag{Name: "token", EnvVars: []string{tokenEnv},
		Usage: "the daemon's API `TOKEN` (prefer the environment variable: flags show in ps)"}
}

// daemonFlags are the flags of `orkwal run` about who may call the API, and
// its log level (debug adds the access log).
func daemonFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "token", EnvVars: []string{tokenEnv},
			Usage: "require `TOKEN` as \"Authorization: Bearer TOKEN\" on every endpoint but /healthz"},
		&cli.BoolFlag{Name: "insecure", Usage: "allow listening on a non-loopback address without a token"},
		&cli.StringFlag{Name: "log-level", Value: "info", Usage: "daemon log `LEVEL`: debug (adds an access log line per request), info, warn or error"},
	}
}

// checkToken rejects a token that cannot travel in a header unchanged.
func checkToken(token string) error {
	for i := 0; i < len(token); i++ {
		if c := token[i]; c <= 0x20 || c > 0x7e {
			return exitf(exitUsage, "--token (or %s): must be printable ASCII without spaces", tokenEnv)
		}
	}
	return nil
}

// checkExposure refuses to serve the API on a non-loopback address without
// a token, unless insecure: anyone who can reach the address could run
// commands on this machine.
func checkExposure(addr, token string, insecure bool) error {
	if token != "" || insecure || isLoopback(addr) {
		return nil
	}
	return exitf(exitUsage, "refusing to listen on %s without a token: it is not a loopback address, so anyone "+
		"who can reach it could run commands here. Set --token or %s (clients send the same), "+
		"listen on 127.0.0.1, or pass --insecure to accept the risk", addr, tokenEnv)
}

// warnExposure logs, at every boot, that a daemon without a token listens
// on an address others may reach (--insecure allowed it).
func warnExposure(logger *slog.Logger, addr, token string, insecure bool) {
	if token == "" && insecure && !isLoopback(addr) {
		logger.Warn("--insecure: serving WITHOUT a token on an address that is not loopback: anyone who can reach it "+
			"can run commands on this machine; set --token (or "+tokenEnv+") to close it", "addr", addr)
	}
}

// isLoopback reports whether addr (host:port) listens on loopback only: a
// loopback IP or "localhost". An empty host means every interface; another
// host name is not resolved and counts as not loopback.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	host, _, _ = strings.Cut(host, "%") // an IPv6 zone
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
