package main

import (
	"bufio"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Workload 14 reads what each broker's cleaner says it did from the
// broker's own log (its stdout and stderr, which the harness keeps in
// broker.log): the harness runs the brokers as processes and sees them
// only through their listeners, /proc and that log.

// cleanPass is one pass of a broker's log cleaner over one partition, as
// the broker logged it.
type cleanPass struct {
	partition string // topic-partition, as both brokers name it
	// from and to are the dirty section the pass mapped: to is where the
	// next pass starts.
	from, to int64
	// bytesRead is the size of the segments the pass rewrote, bytesWritten
	// that of the segments that replaced them; records likewise.
	bytesRead, bytesWritten     int64
	recordsRead, recordsWritten int64
	// elapsed is the pass's wall time: building the key map and rewriting.
	elapsed time.Duration
}

// cleanLogParsers read the cleaning passes of partition from a stretch of
// a broker's log, by system name. A pass whose lines are not all written
// yet is left out: the caller reads again.
var cleanLogParsers = map[string]func(text, partition string) ([]cleanPass, error){
	"sluice": parseSluiceCleanLog,
	"kafka":  parseKafkaCleanLog,
}

// parseSluiceCleanLog reads the "log cleaned" lines broker/cleaner.go logs
// after each pass, in slog's text format (cmd/sluice), one line each:
//
//	time=… level=INFO msg="log cleaned" partition=t-0 dirty_section="[0, 1200)"
//	duration=1.5s start_bytes=… start_records=… end_bytes=… end_records=… …
//
// or, as the broker logged it before its cleaner kept statistics,
//
//	time=… level=INFO msg="log cleaned" partition=t-0 first_dirty=0 end=1200
//	bytes_before=… bytes_after=… records_before=… records_after=… duration=1.5s
//
// Attributes it does not know are ignored; a line that lacks one it needs
// is an error, so a renamed attribute fails the workload rather than
// reading as zero.
func parseSluiceCleanLog(text, partition string) ([]cleanPass, error) {
	var passes []cleanPass
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, `msg="log cleaned"`) {
			continue
		}
		attrs, err := parseLogfmt(line)
		if err != nil {
			return nil, fmt.Errorf("sluice log line %q: %w", line, err)
		}
		if attrs["msg"] != "log cleaned" || attrs["partition"] != partition {
			continue
		}
		p, err := sluicePass(attrs)
		if err != nil {
			return nil, fmt.Errorf("sluice log line %q: %w", line, err)
		}
		passes = append(passes, p)
	}
	return passes, sc.Err()
}

// sluicePass reads one "log cleaned" line's attributes.
func sluicePass(attrs map[string]string) (cleanPass, error) {
	p := cleanPass{partition: attrs["partition"]}
	var errs []error
	if ds, ok := attrs["dirty_section"]; ok {
		from, to, ok := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(ds, "["), ")"), ", ")
		var err1, err2 error
		p.from, err1 = strconv.ParseInt(from, 10, 64)
		p.to, err2 = strconv.ParseInt(to, 10, 64)
		if !ok || errors.Join(err1, err2) != nil {
			errs = append(errs, fmt.Errorf("dirty_section %q is no [from, to)", ds))
		}
	} else {
		errs = append(errs, intAttr(attrs, &p.from, "first_dirty"), intAttr(attrs, &p.to, "end"))
	}
	errs = append(errs,
		intAttr(attrs, &p.bytesRead, "start_bytes", "bytes_before"),
		intAttr(attrs, &p.bytesWritten, "end_bytes", "bytes_after"),
		intAttr(attrs, &p.recordsRead, "start_records", "records_before"),
		intAttr(attrs, &p.recordsWritten, "end_records", "records_after"))
	if d, ok := attrs["duration"]; !ok {
		errs = append(errs, errors.New("no duration"))
	} else if elapsed, err := time.ParseDuration(d); err != nil {
		errs = append(errs, fmt.Errorf("duration: %w", err))
	} else {
		p.elapsed = elapsed
	}
	return p, errors.Join(errs...)
}

// intAttr sets *to from the first of names that attrs has: the current
// name of a figure, then an older one.
func intAttr(attrs map[string]string, to *int64, names ...string) error {
	for _, name := range names {
		if v, ok := attrs[name]; ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			*to = n
			return nil
		}
	}
	return fmt.Errorf("no %s", strings.Join(names, " or "))
}

// parseLogfmt splits one line of slog's text format into its attributes:
// key=value pairs separated by spaces, a value quoted (Go syntax) when it
// holds a space, a quote or an equals sign.
func parseLogfmt(line string) (map[string]string, error) {
	attrs := map[string]string{}
	s := line
	for {
		s = strings.TrimLeft(s, " ")
		if s == "" {
			return attrs, nil
		}
		key, rest, ok := strings.Cut(s, "=")
		if !ok || key == "" || strings.ContainsAny(key, " \"") {
			return nil, fmt.Errorf("malformed attribute at %q", s)
		}
		var val string
		if strings.HasPrefix(rest, `"`) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
			if val, err = strconv.Unquote(q); err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
			rest = rest[len(q):]
		} else {
			val, rest, _ = strings.Cut(rest, " ")
			rest = " " + rest
		}
		attrs[key] = val
		s = rest
	}
}

// Kafka's cleaner thread logs a summary after each pass (LogCleaner's
// CleanerThread, INFO; compat/kafkatools/log4j2-server.properties sends
// it to stdout with the rest of the broker's log), one message over
// several lines:
//
//	[2026-12-02 03:40:01,234] INFO [kafka-log-cleaner-thread-0]:
//		Log cleaner thread 0 cleaned log bench-clean-0 (dirty section = [0, 1048576])
//		1,024.0 MB of log processed in 9.8 seconds (104.5 MB/sec).
//		Indexed 1,024.0 MB in 4.1 seconds (249.8 Mb/sec, 41.8% of total time)
//		Buffer utilization: 1.9%
//		Cleaned 1,024.0 MB in 5.7 seconds (179.6 Mb/sec, 58.2% of total time)
//		Start size: 1,024.0 MB (1,048,576 messages)
//		End size: 94.4 MB (96,663 messages)
//		90.8% size reduction (90.8% fewer messages)
//	 (org.apache.kafka.storage.internals.log.LogCleaner)
//
// Its MB are 2^20 bytes, printed with one decimal and the JVM locale's
// grouping (commas here). The pass's bytes come from "Start size" and "End
// size" (the same bytesRead and bytesWritten as the processed line), to
// 0.05 MB; its time is MB over MB/sec, which Kafka divides at full
// precision, since the printed seconds have one decimal only. Older
// Kafkas say "Log cleaner thread N", newer ones "Log cleaner N".
var (
	kafkaCleanedRE   = regexp.MustCompile(`Log cleaner (?:thread )?\d+ cleaned log (\S+) \(dirty section = \[(\d+), (\d+)\]\)`)
	kafkaProcessedRE = regexp.MustCompile(`([\d,.]+) MB of log processed in ([\d,.]+) seconds \(([\d,.]+|Infinity|NaN) MB/sec\)`)
	kafkaStartRE     = regexp.MustCompile(`Start size: ([\d,.]+) MB \(([\d,]+) messages\)`)
	kafkaEndRE       = regexp.MustCompile(`End size: ([\d,.]+) MB \(([\d,]+) messages\)`)
)

// parseKafkaCleanLog reads Kafka's cleaner summaries for partition.
func parseKafkaCleanLog(text, partition string) ([]cleanPass, error) {
	var passes []cleanPass
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		m := kafkaCleanedRE.FindStringSubmatch(line)
		if m == nil || m[1] != partition {
			continue
		}
		p := cleanPass{partition: partition}
		p.from, _ = strconv.ParseInt(m[2], 10, 64)
		p.to, _ = strconv.ParseInt(m[3], 10, 64)
		var mbProcessed, mbPerSec, secs float64
		var haveProcessed, haveStart, haveEnd bool
		// The summary's other lines follow, up to the next message.
		for _, l := range lines[i+1 : min(i+10, len(lines))] {
			if kafkaCleanedRE.MatchString(l) {
				break
			}
			if s := kafkaProcessedRE.FindStringSubmatch(l); s != nil {
				var err error
				if mbProcessed, err = kafkaNumber(s[1]); err != nil {
					return nil, fmt.Errorf("kafka cleaner summary %q: %w", l, err)
				}
				if secs, err = kafkaNumber(s[2]); err != nil {
					return nil, fmt.Errorf("kafka cleaner summary %q: %w", l, err)
				}
				// Infinity or NaN: a pass too short to time; its seconds
				// (0.0) are the best there is.
				mbPerSec, _ = kafkaNumber(s[3])
				haveProcessed = true
			}
			if s := kafkaStartRE.FindStringSubmatch(l); s != nil {
				mb, err1 := kafkaNumber(s[1])
				n, err2 := kafkaNumber(s[2])
				if err := errors.Join(err1, err2); err != nil {
					return nil, fmt.Errorf("kafka cleaner summary %q: %w", l, err)
				}
				p.bytesRead, p.recordsRead = int64(mb*(1<<20)), int64(n)
				haveStart = true
			}
			if s := kafkaEndRE.FindStringSubmatch(l); s != nil {
				mb, err1 := kafkaNumber(s[1])
				n, err2 := kafkaNumber(s[2])
				if err := errors.Join(err1, err2); err != nil {
					return nil, fmt.Errorf("kafka cleaner summary %q: %w", l, err)
				}
				p.bytesWritten, p.recordsWritten = int64(mb*(1<<20)), int64(n)
				haveEnd = true
			}
		}
		if !haveProcessed || !haveStart || !haveEnd {
			continue // not all written yet
		}
		if mbPerSec > 0 {
			p.elapsed = time.Duration(mbProcessed / mbPerSec * float64(time.Second))
		} else {
			p.elapsed = time.Duration(secs * float64(time.Second))
		}
		passes = append(passes, p)
	}
	return passes, nil
}

// kafkaNumber parses a number Java's %,.1f or %,d printed in an English
// locale: commas group the digits.
func kafkaNumber(s string) (float64, error) {
	return strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
}

// cleanTotals sums passes: bytes and records read and written, and time.
func cleanTotals(passes []cleanPass) cleanPass {
	var t cleanPass
	for i, p := range passes {
		if i == 0 {
			t.partition, t.from = p.partition, p.from
		}
		t.to = p.to
		t.bytesRead += p.bytesRead
		t.bytesWritten += p.bytesWritten
		t.recordsRead += p.recordsRead
		t.recordsWritten += p.recordsWritten
		t.elapsed += p.elapsed
	}
	return t
}
