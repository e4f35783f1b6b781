// Command sluice runs one sluice broker: a Kafka-compatible broker that
// real Kafka clients and Kafka's command-line tools talk to unchanged.
//
// With no flags it serves on 127.0.0.1:9092 and keeps its data in
// ./sluice-data. --config reads a TOML file whose keys are Kafka's broker
// property names; --override key=value (repeatable, like
// kafka-server-start.sh --override) wins over the file. --env (container
// mode, env.go) also reads KAFKA_* environment variables as the apache/kafka
// image does, below --override, and prints the lines the testcontainers
// Kafka modules wait for.
//
// `sluice dev --nodes N` starts a local cluster of N nodes as child
// processes instead (dev.go).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/sluicedev/sluice/broker"
	"github.com/sluicedev/sluice/config"
)

// overrides collects repeated --override flags.
type overrides []string

func (o *overrides) String() string     { return strings.Join(*o, ",") }
func (o *overrides) Set(v string) error { *o = append(*o, v); return nil }

func main() {
	start := time.Now()
	if err := run(start, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "sluice:", err)
		os.Exit(1)
	}
}

func run(start time.Time, args []string) error {
	if len(args) > 0 && args[0] == "dev" {
		return runDev(start, args[1:])
	}
	fs := flag.NewFlagSet("sluice", flag.ContinueOnError)
	configPath := fs.String("config", "", "TOML file of Kafka broker properties (e.g. sluice.toml)")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	cpuProfile := fs.String("cpu-profile", "", "write a CPU profile of the whole run to this file (for go tool pprof)")
	envMode := fs.Bool("env", false, "container mode: also read broker properties from KAFKA_* environment variables, as the apache/kafka image does (--override wins)")
	var ovr overrides
	fs.Var(&ovr, "override", "set a broker property, key=value (repeatable; wins over --config)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (use --config FILE or --override key=value)", fs.Arg(0))
	}

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(logger)

	settings, fromEnv := []string(ovr), map[string]string(nil)
	if *envMode {
		var env []string
		env, fromEnv = envSettings(os.Environ(), logger)
		settings = append(env, ovr...)
	}
	cfg, err := config.Load(*configPath, settings)
	if err != nil {
		return envLoadError(err, fromEnv, ovr)
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	warnWorldReadableSecrets(logger, *configPath)

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("--cpu-profile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("--cpu-profile: %w", err)
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if len(cfg.ControllerQuorumVoters) > 0 {
		logger.Info("joining the cluster; ready once the controller quorum has registered this node",
			"node_id", cfg.NodeID, "voters", strings.Join(cfg.ControllerQuorumVoters, ","), "gossip_join", strings.Join(cfg.GossipJoin, ","))
	}
	// No deadline on the whole start: loading the logs takes as long as
	// they take; joining the cluster after it has its own timeout
	// (initial.broker.registration.timeout.ms, broker.New).
	b, err := broker.New(ctx, cfg, broker.Options{Logger: logger})
	if err != nil {
		return err
	}
	fmt.Printf("sluice ready: listening on %s, node.id=%d, cluster.id=%s, started in %s\n",
		b.Addr(), b.NodeID(), b.ClusterID(), time.Since(start).Round(time.Microsecond))
	if *envMode {
		printContainerReady(os.Stdout, b.NodeID())
	}

	select {
	case <-ctx.Done():
	case <-b.Halted():
		// The broker shut itself down (log.dir.failure.timeout.ms).
		b.Close()
		return errors.New("the broker shut itself down: a failed log dir was not acknowledged by the controller in time")
	}
	stop()
	logger.Info("shutting down")
	if err := b.Close(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("stopped cleanly")
	return nil
}
